"""What every Gate head shares: the detector protocol, calibration and the state round-trip.

A head is fitted and scored either on raw texts (the detector protocol) or
on the precomputed :class:`~gatebench.gate.views.Views` that Gate shares
between heads. Its whole state is one flat dictionary (:meth:`Head.get_state`)
of JSON-able values and named numpy arrays, so the model directory
(:mod:`gatebench.gate.persist`) saves and loads every head with the same
code and never pickles an object.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Self

import numpy as np

from gatebench.gate.views import Views

__all__ = ["Head", "LinearHead", "Valid", "fit_platt", "sigmoid"]

Valid = tuple[Sequence[str], np.ndarray] | None


def sigmoid(z: np.ndarray) -> np.ndarray:
    """Numerically safe logistic function."""
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=np.float64))))


def fit_platt(decision: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Fit ``P(y=1) = sigmoid(a * d + b)``; a weakly regularised 1-D logistic regression."""
    from sklearn.linear_model import LogisticRegression

    if len(np.unique(y)) < 2:
        return 1.0, 0.0
    lr = LogisticRegression(C=100.0).fit(np.asarray(decision).reshape(-1, 1), y)
    return float(lr.coef_[0, 0]), float(lr.intercept_[0])


def _json_able(value: Any) -> Any:
    """A setting as JSON writes it back: tuples become lists."""
    return list(value) if isinstance(value, tuple) else value


class Head:
    """Base class: the detector protocol on top of ``fit_x`` / ``decision_x``.

    Subclasses set ``name``, ``view`` (the :class:`Views` field they read)
    and ``settings`` (their constructor arguments), and implement
    ``represent``, ``fit_x``, ``decision_x``, ``fitted_state`` and
    ``restore_fitted``.
    """

    name: ClassVar[str] = ""
    view: ClassVar[str] = ""
    requires_fit: ClassVar[bool] = True
    #: Constructor arguments, kept as attributes of the same name; with the
    #: fitted state they rebuild the head.
    settings: ClassVar[tuple[str, ...]] = ("seed",)

    def __init__(self, *, seed: int = 0) -> None:
        self.seed = int(seed)
        self.platt = (1.0, 0.0)

    # -- representation-level interface (used by Gate) -------------------------------
    def represent(self, texts: Sequence[str]) -> Any:
        """This head's view of ``texts`` when used on its own."""
        raise NotImplementedError

    def x_of(self, views: Views) -> Any:
        """This head's input taken from shared views."""
        return getattr(views, self.view)

    def fit_x(self, x: Any, y: np.ndarray, weight: np.ndarray | None = None) -> Self:
        """Fit on a precomputed representation; ``weight`` is one per row (None: all 1)."""
        raise NotImplementedError

    def decision_x(self, x: Any) -> np.ndarray:
        """Raw margin per row (higher means more attack-like)."""
        raise NotImplementedError

    def meta_x(self, x: Any) -> np.ndarray:
        """Columns handed to the combiner; the margin alone unless overridden."""
        return self.decision_x(x).reshape(-1, 1)

    def decision_from_meta(self, meta: np.ndarray) -> np.ndarray:
        """The margin, recovered from :meth:`meta_x`'s columns without recomputing them."""
        return np.asarray(meta[:, 0])

    def meta_and_decision(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`meta_x` and :meth:`decision_x` of ``x``, sharing the work they share.

        A cross-fit needs both for every out-of-fold row; the neighbour heads'
        searches are most of a fit's time, and the margin is two of their columns.
        """
        meta = self.meta_x(x)
        return meta, self.decision_from_meta(meta)

    def logit_from_decision(self, decision: np.ndarray) -> np.ndarray:
        """Calibrated log-odds from margins (the Platt line before its sigmoid)."""
        a, b = self.platt
        return np.asarray(a * decision + b)

    def calibrate(self, decision: np.ndarray, y: np.ndarray) -> Self:
        """Fit the Platt sigmoid that turns margins into probabilities."""
        self.platt = fit_platt(decision, y)
        return self

    def proba_from_decision(self, decision: np.ndarray) -> np.ndarray:
        """P(attack) from margins, through the Platt sigmoid."""
        a, b = self.platt
        return sigmoid(a * decision + b)

    # -- detector protocol -----------------------------------------------------------
    def fit(self, texts: Sequence[str], labels: np.ndarray, *, valid: Valid = None) -> Self:
        """Fit on raw texts; ``valid`` (if given) fits the probability calibration."""
        y = np.asarray(labels, dtype=np.int64)
        self.fit_x(self.represent(texts), y)
        if valid is not None:
            self.calibrate(self.decision_x(self.represent(valid[0])), np.asarray(valid[1]))
        else:
            self.calibrate(self.decision_x(self.represent(texts)), y)
        return self

    def score(self, texts: Sequence[str]) -> np.ndarray:
        """P(attack) per text."""
        return self.proba_from_decision(self.decision_x(self.represent(texts)))

    # -- state round-trip ------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """Everything that rebuilds this fitted head, as one flat dictionary.

        Returns
        -------
        dict
            The ``settings``, the Platt pair and the fitted state. Each value
            is either JSON-able (numbers, strings, lists) or a numpy array;
            :meth:`from_state` takes the dictionary back.
        """
        state = {name: _json_able(getattr(self, name)) for name in self.settings}
        return state | {"platt": list(self.platt)} | self.fitted_state()

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Self:
        """Rebuild a fitted head from :meth:`get_state`'s dictionary.

        A setting missing from ``state`` (written before the setting
        existed) takes the constructor's default.
        """
        head = cls(**{name: state[name] for name in cls.settings if name in state})
        head.platt = (float(state["platt"][0]), float(state["platt"][1]))
        head.restore_fitted(state)
        return head

    def fitted_state(self) -> dict[str, Any]:
        """What fitting learned: JSON-able values and named arrays."""
        raise NotImplementedError

    def restore_fitted(self, state: Mapping[str, Any]) -> None:
        """Set what fitting learned from :meth:`fitted_state`'s entries in ``state``."""
        raise NotImplementedError


class LinearHead(Head):
    """A head whose margin is one linear function of its (transformed) input."""

    coef: np.ndarray
    intercept: float

    def _linear(self, x: Any) -> np.ndarray:
        return np.asarray(x @ self.coef).ravel() + self.intercept

    def fitted_state(self) -> dict[str, Any]:
        return {"intercept": self.intercept, "coef": self.coef}

    def restore_fitted(self, state: Mapping[str, Any]) -> None:
        self.coef, self.intercept = state["coef"], float(state["intercept"])
