"""The ``features`` head: a scaled logistic regression on the handcrafted cues and statistics.

The only head that reads :mod:`gatebench.gate.features` directly, and the
one that the ``content`` setting keeps from reading style.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

import numpy as np

from gatebench.gate.features import CONTENT_COLUMNS, handcrafted_features
from gatebench.gate.heads.base import LinearHead
from gatebench.gate.views import Views

__all__ = ["FeatureHead"]


class FeatureHead(LinearHead):
    """Logistic regression on the handcrafted features (signed log, standardised).

    Parameters
    ----------
    seed : int
        Unused by the deterministic solver; kept for the protocol.
    C : float
        Inverse L2 strength.
    content_only : bool
        Read only the content columns (:data:`~gatebench.gate.features.CONTENT_COLUMNS`),
        not the style ones (length, script, character classes). Style tells
        sources apart: where the training attacks are mostly non-English, a
        style-reading head learns "other script = attack" and flags every
        unseen non-English benign text.
    """

    name = "features"
    view = "features"
    settings = ("seed", "C", "content_only")

    def __init__(self, *, seed: int = 0, C: float = 1.0, content_only: bool = False) -> None:  # noqa: N803
        super().__init__(seed=seed)
        self.C = float(C)
        self.content_only = bool(content_only)

    def _columns(self, x: np.ndarray) -> np.ndarray:
        return x[:, list(CONTENT_COLUMNS)] if self.content_only else x

    def represent(self, texts: Sequence[str]) -> np.ndarray:
        return self._columns(handcrafted_features(list(texts)))

    def x_of(self, views: Views) -> np.ndarray:
        return self._columns(views.features)

    def _scale(self, x: np.ndarray) -> np.ndarray:
        # Counts are heavy-tailed (one jailbreak repeats "DAN" 40 times): the
        # signed log keeps one text from dominating the fit.
        z = np.sign(x) * np.log1p(np.abs(x))
        return np.asarray((z - self.mean) / self.scale)

    def fit_x(self, x: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None) -> Self:
        from sklearn.linear_model import LogisticRegression

        z = np.sign(x) * np.log1p(np.abs(x))
        self.mean = z.mean(axis=0).astype(np.float32)
        sd = z.std(axis=0)
        self.scale = np.where(sd > 0, sd, 1.0).astype(np.float32)
        lr = LogisticRegression(C=self.C, max_iter=3000).fit(
            self._scale(x), y, sample_weight=weight
        )
        self.coef = lr.coef_.ravel().astype(np.float32)
        self.intercept = float(lr.intercept_[0])
        return self

    def decision_x(self, x: np.ndarray) -> np.ndarray:
        return self._linear(self._scale(x))

    def fitted_state(self) -> dict[str, Any]:
        return super().fitted_state() | {"mean": self.mean, "scale": self.scale}

    def restore_fitted(self, state: Mapping[str, Any]) -> None:
        super().restore_fitted(state)
        self.mean, self.scale = state["mean"], state["scale"]
