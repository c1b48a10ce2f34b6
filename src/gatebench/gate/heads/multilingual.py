"""The ``multilingual`` head: logistic regression on USE multilingual v3 embeddings.

The one head whose representation is built to carry meaning across
languages (:mod:`gatebench.gate.multilingual`), so that what it learns on
attacks in one language holds for their translations, and a benign request
in an unseen script is read for what it asks rather than for its script.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gatebench.gate.heads.embed import EmbedHead
from gatebench.gate.multilingual import MultilingualEncoder

__all__ = ["MultilingualHead"]


class MultilingualHead(EmbedHead):
    """Logistic regression on the 512-d USE multilingual v3 sentence embedding.

    The parameters are :class:`~gatebench.gate.heads.embed.EmbedHead`'s, with
    ``C`` at 1, the value measured in ``benchmarks/RESULTS.md``. Used alone, the
    head reads each text's first 1,000 characters; inside Gate, the first
    ``multilingual_chars``.
    """

    name = "multilingual"
    view = "multilingual"

    def __init__(self, *, seed: int = 0, C: float = 1.0) -> None:  # noqa: N803
        super().__init__(seed=seed, C=C)
        self.encoder: MultilingualEncoder | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The multilingual embedding matrix of ``texts``."""
        if self.encoder is None:
            self.encoder = MultilingualEncoder()
        return self.encoder.encode(list(texts))
