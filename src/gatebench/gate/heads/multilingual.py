"""The ``multilingual`` heads: logistic regression on USE multilingual v3 embeddings.

The one head whose representation is built to carry meaning across
languages (:mod:`gatebench.gate.multilingual`), so that what it learns on
attacks in one language holds for their translations, and a benign request
in an unseen script is read for what it asks rather than for its script.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Self

import numpy as np

from gatebench.gate.heads.embed import EmbedHead
from gatebench.gate.multilingual import MultilingualEncoder, routed_mask
from gatebench.gate.views import Views

__all__ = ["MultilingualHead", "RoutedInput", "RoutedMultilingualHead"]


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


class RoutedInput(NamedTuple):
    """The routed head's input: every text's vector (NaN where not encoded) and its route."""

    vectors: np.ndarray
    routed: np.ndarray


class RoutedMultilingualHead(MultilingualHead):
    """The multilingual head, read by the combiners only for text that is not English.

    Fitted on every training row, English included, so that what it learns
    from English attacks carries to their translations. But its combiner
    column is missing (NaN, which LightGBM routes on its own) for English
    text: there the n-gram and static-embedding heads rank unseen sources
    better, and an unrouted multilingual column cost never-seen English
    injections recall (benchmarks/RESULTS.md). Serving encodes only the
    routed texts, so English traffic pays the language check alone.
    """

    name = "multilingual_routed"

    # ``x`` is always a :class:`RoutedInput` (from ``x_of`` or ``represent``); the
    # signatures keep the base class's ``Any``, which the parent narrows to an array.
    def x_of(self, views: Views) -> RoutedInput:
        if views.multilingual is None or views.routed is None:
            raise ValueError(
                f"the {self.name} head needs the multilingual view and its route; "
                "build the views with Featurizer(..., multilingual=..., route=True)"
            )
        return RoutedInput(views.multilingual, views.routed)

    def represent(self, texts: Sequence[str]) -> RoutedInput:
        return RoutedInput(self.embed(texts), routed_mask(texts))

    def fit_x(self, x: Any, y: np.ndarray, weight: np.ndarray | None = None) -> Self:
        return super().fit_x(x.vectors, y, weight)

    def decision_x(self, x: Any) -> np.ndarray:
        return super().decision_x(x.vectors)

    def meta_x(self, x: Any) -> np.ndarray:
        return self.meta_and_decision(x)[0]

    def meta_and_decision(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        # The column is blank for English text; the margin is the head's on every row.
        decision = self.decision_x(x)
        return np.where(x.routed, decision, np.nan).reshape(-1, 1), decision
