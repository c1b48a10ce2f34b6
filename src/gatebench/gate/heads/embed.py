"""The ``embed`` head, and the static-embedding input it shares with the neighbour head.

Both heads that read the static embedding share only how a text becomes a
vector (:class:`EmbeddingInput`); the MiniLM heads of the deferred stage
reuse their models on another view (:mod:`gatebench.gate.heads.sentence`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np

from gatebench.gate.heads.base import LinearHead
from gatebench.gate.static_embed import StaticEmbedder

__all__ = ["EmbedHead", "EmbeddingInput"]


class EmbeddingInput:
    """Mixin for heads that read the static embedding: ``represent`` needs an embedder."""

    embedder: StaticEmbedder | None

    def represent(self, texts: Sequence[str]) -> Any:
        return self.embed(texts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The embedding matrix of ``texts``."""
        if self.embedder is None:
            from gatebench.gate.static_embed import distill_static

            vectors, tokenizer_json = distill_static(cache_dir=".cache/gatebench")
            self.embedder = StaticEmbedder(vectors, tokenizer_json)
        return self.embedder.encode(list(texts))


class EmbedHead(EmbeddingInput, LinearHead):
    """Logistic regression on the static MiniLM sentence embedding.

    Parameters
    ----------
    seed : int
        Unused by the deterministic solver; kept for the protocol.
    C : float
        Inverse L2 strength.
    embedder : StaticEmbedder, optional
        Needed only for standalone ``fit``/``score``; distilled (cached) when omitted.
    """

    name = "embed"
    view = "static"
    settings = ("seed", "C")

    def __init__(
        self,
        *,
        seed: int = 0,
        C: float = 10.0,  # noqa: N803
        embedder: StaticEmbedder | None = None,
    ) -> None:
        super().__init__(seed=seed)
        self.C = float(C)
        self.embedder = embedder

    def fit_x(self, x: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None) -> Self:
        from sklearn.linear_model import LogisticRegression

        lr = LogisticRegression(C=self.C, max_iter=3000).fit(x, y, sample_weight=weight)
        self.coef = lr.coef_.ravel().astype(np.float32)
        self.intercept = float(lr.intercept_[0])
        return self

    def decision_x(self, x: np.ndarray) -> np.ndarray:
        return self._linear(x)
