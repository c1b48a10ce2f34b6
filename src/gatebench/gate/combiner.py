"""The stacked combiner: LightGBM over out-of-fold head outputs plus meta-features.

Stacking on in-sample head scores would teach the combiner to trust heads
that merely memorised their training rows. So inside the training set an
inner cross-fit gives every row head outputs from heads that never saw it
(:func:`cross_fit`); LightGBM learns on those, early-stops on the caller's
validation rows (max 800 rounds, patience 40, log-loss, paper §2.3), and a
Platt sigmoid fitted on the same validation rows calibrates its output, so
that scores from different folds' models mean the same thing when the
harness pools them under one global threshold.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

import numpy as np

from gatebench.gate.heads.base import Head, fit_platt, sigmoid
from gatebench.gate.views import Views

__all__ = ["COMBINER_KINDS", "Blend", "Combiner", "HeadMean", "cross_fit"]

#: What joins the heads: learned trees over heads and features, the mean of the
#: heads, or the trees blended with the heads whose ranking carries over to new text.
COMBINER_KINDS = ("trees", "mean", "blend")


def head_weight(weight: np.ndarray, j: int) -> np.ndarray:
    """Head ``j``'s row weights: the one vector every head shares, or its own column."""
    return weight if weight.ndim == 1 else weight[:, j]


def cross_fit(
    make_heads: Callable[[], list[Head]],
    views: Views,
    y: np.ndarray,
    *,
    n_folds: int,
    seed: int,
    groups: np.ndarray | None = None,
    weight: np.ndarray | None = None,
) -> tuple[list[np.ndarray], np.ndarray]:
    """Out-of-fold head outputs for every training row.

    Parameters
    ----------
    make_heads : callable
        Returns fresh, unfitted heads.
    views : Views
        The training rows.
    y : ndarray
        Their labels.
    n_folds : int
        Inner folds (stratified).
    seed : int
        Seeds the fold assignment.
    groups : ndarray, optional
        A group per row; rows of one group share a fold (stratified group
        folds), so each row's outputs come from heads that saw none of its group.
    weight : ndarray, optional
        A training weight per row, handed to each sub-fit for its rows; of
        shape (n, n_heads), a column per head.

    Returns
    -------
    meta : list of ndarray
        Per head, its ``meta_x`` columns, each row from the sub-fit that did not see it.
    decisions : ndarray of shape (n, n_heads)
        Per head, its out-of-fold margin (for calibrating the head itself).
    """
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

    n_heads = len(make_heads())
    meta: list[np.ndarray | None] = [None] * n_heads
    decisions = np.zeros((len(y), n_heads))
    if groups is None:
        folds = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=seed).split(
            np.zeros(len(y)), y
        )
    else:
        splitter = StratifiedGroupKFold(n_splits=n_folds, shuffle=True, random_state=seed)
        folds = splitter.split(np.zeros(len(y)), y, groups)
    for fit_idx, out_idx in folds:
        fit_views, out_views = views.take(fit_idx), views.take(out_idx)
        for j, head in enumerate(make_heads()):
            w = None if weight is None else head_weight(weight, j)[fit_idx]
            head.fit_x(head.x_of(fit_views), y[fit_idx], w)
            cols, decisions[out_idx, j] = head.meta_and_decision(head.x_of(out_views))
            if meta[j] is None:
                meta[j] = np.zeros((len(y), cols.shape[1]))
            meta[j][out_idx] = cols  # type: ignore[index]
    return [m if m is not None else np.zeros((len(y), 1)) for m in meta], decisions


class _Calibrated:
    """A combiner's output: an uncalibrated ``raw`` margin through one Platt line."""

    platt: tuple[float, float]

    def raw(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def logit(self, x: np.ndarray) -> np.ndarray:
        """Calibrated log-odds."""
        a, b = self.platt
        return a * self.raw(x) + b

    def proba(self, x: np.ndarray) -> np.ndarray:
        """Calibrated P(attack)."""
        return sigmoid(self.logit(x))


class Combiner(_Calibrated):
    """Gradient-boosted trees over the stacked columns, with a Platt-calibrated output.

    Parameters
    ----------
    seed : int
        LightGBM's seed (bagging and feature sampling).
    max_rounds : int
        Boosting rounds at most (paper: 800).
    patience : int
        Early-stopping patience on validation log-loss (paper: 40).
    learning_rate, num_leaves, min_data_in_leaf, feature_fraction, bagging_fraction, lambda_l2
        LightGBM parameters; small trees and row/column sampling because the
        stacked rows are few (about 10,000) and the head columns strong.
    n_jobs : int
        LightGBM threads; 1 because the harness already runs folds in parallel.
    monotone_constraints : list of int, optional
        Per column +1 (non-decreasing), -1 (non-increasing) or 0 (free).
    """

    def __init__(
        self,
        *,
        seed: int = 0,
        max_rounds: int = 800,
        patience: int = 40,
        learning_rate: float = 0.05,
        num_leaves: int = 15,
        min_data_in_leaf: int = 20,
        feature_fraction: float = 0.8,
        bagging_fraction: float = 0.8,
        lambda_l2: float = 1.0,
        n_jobs: int = 1,
        monotone_constraints: list[int] | None = None,
    ) -> None:
        self.seed = int(seed)
        self.max_rounds = int(max_rounds)
        self.patience = int(patience)
        self.params: dict[str, Any] = {
            "objective": "binary",
            "learning_rate": float(learning_rate),
            "num_leaves": int(num_leaves),
            "min_data_in_leaf": int(min_data_in_leaf),
            "feature_fraction": float(feature_fraction),
            "bagging_fraction": float(bagging_fraction),
            "bagging_freq": 1,
            "lambda_l2": float(lambda_l2),
            "num_threads": int(n_jobs),
            "seed": self.seed,
            "deterministic": True,
            "force_col_wise": True,
            "verbose": -1,
        }
        if monotone_constraints is not None:
            self.params["monotone_constraints"] = list(monotone_constraints)
        self.booster: Any = None
        self.platt = (1.0, 0.0)
        self.best_iteration = 0

    def fit(
        self,
        x: np.ndarray,
        y: np.ndarray,
        x_valid: np.ndarray,
        y_valid: np.ndarray,
        *,
        feature_names: list[str] | None = None,
        weight: np.ndarray | None = None,
    ) -> Self:
        """Boost on ``x`` (rows weighted by ``weight``) with early stopping on ``x_valid``.

        The validation rows stay unweighted: early stopping and the Platt
        calibration fitted on them answer to the data as it comes.
        """
        import lightgbm as lgb

        train = lgb.Dataset(
            x, y, weight=weight, feature_name=feature_names or "auto", free_raw_data=True
        )
        valid = lgb.Dataset(x_valid, y_valid, reference=train)
        self.booster = lgb.train(
            self.params,
            train,
            num_boost_round=self.max_rounds,
            valid_sets=[valid],
            callbacks=[lgb.early_stopping(self.patience, verbose=False)],
        )
        self.best_iteration = int(self.booster.best_iteration or self.max_rounds)
        self.platt = fit_platt(self.raw(x_valid), y_valid)
        return self

    def raw(self, x: np.ndarray) -> np.ndarray:
        """Uncalibrated margin (LightGBM raw score at the best iteration)."""
        # One thread: OpenMP's thread start-up and spin-waiting cost ~4 ms per
        # call, 50x the prediction itself for a single request.
        return np.asarray(
            self.booster.predict(
                x, raw_score=True, num_iteration=self.best_iteration, num_threads=1
            )
        )

    def model_text(self) -> str:
        """The booster in LightGBM's own text format (what the model directory stores)."""
        return str(self.booster.model_to_string(num_iteration=self.best_iteration))

    @classmethod
    def from_text(cls, text: str, platt: tuple[float, float], seed: int = 0) -> Combiner:
        """Rebuild from :meth:`model_text` and the calibration pair."""
        import lightgbm as lgb

        comb = cls(seed=seed)
        comb.booster = lgb.Booster(model_str=text)
        comb.best_iteration = int(comb.booster.current_iteration())
        comb.platt = (float(platt[0]), float(platt[1]))
        return comb


class HeadMean(_Calibrated):
    """The mean of the heads' calibrated log-odds, then one Platt sigmoid.

    The trees learn how much to trust each head, and they learn it on text
    like the training rows: there the n-gram heads are the sharpest, and the
    trees lean on them and on the meta-features that tell sources apart. On
    text from a source it never saw, that learned trust is what fails first:
    on held-out families the stacked score ranked worse than a plain mean of
    the heads' calibrated log-odds, and worse than the best single head. The
    mean has nothing to learn but the final calibration, fitted on the
    validation rows, so it cannot fit the training sources' quirks.

    Its input is one column per head: that head's calibrated log-odds.
    """

    best_iteration = 0

    def __init__(self) -> None:
        self.platt = (1.0, 0.0)

    def fit(
        self,
        x: np.ndarray,
        y: np.ndarray,
        x_valid: np.ndarray,
        y_valid: np.ndarray,
        *,
        feature_names: list[str] | None = None,
        weight: np.ndarray | None = None,
    ) -> Self:
        """Calibrate on the validation rows (the training rows teach it nothing)."""

        self.platt = fit_platt(self.raw(x_valid), y_valid)
        return self

    def raw(self, x: np.ndarray) -> np.ndarray:
        """The heads' mean log-odds."""
        return np.asarray(np.asarray(x, dtype=np.float64).mean(axis=1))


class Blend(_Calibrated):
    """The trees' calibrated log-odds averaged with anchor heads' own, then one Platt.

    The trees are the sharpest on text like the training rows and the
    worst-transferring part of Gate; the static-embedding head is the reverse
    (it reads meaning, not the n-grams and form that identify a source). On
    held-out families their average ranked unseen text better than the trees
    alone, at a small cost on the validation rows. The anchors' columns are
    read from the trees' own input (their margins), through each head's Platt.

    Parameters
    ----------
    trees : Combiner
        The stacked LightGBM combiner.
    columns : list of int
        Positions of the anchor heads' margin columns in the combiner input.
    head_platts : list of (float, float)
        Each anchor head's Platt pair (margin to log-odds).
    weight : float
        Share of the trees in the average (0.5: an even blend).
    """

    def __init__(
        self,
        trees: Combiner,
        columns: list[int],
        head_platts: list[tuple[float, float]],
        *,
        weight: float = 0.5,
    ) -> None:
        if not columns or len(columns) != len(head_platts):
            raise ValueError("a blend needs one Platt pair per anchor column, and one column")
        self.trees = trees
        self.columns = list(columns)
        self.head_platts = [(float(a), float(b)) for a, b in head_platts]
        self.weight = float(weight)
        self.platt = (1.0, 0.0)

    @property
    def best_iteration(self) -> int:
        """The trees' early-stopped round count."""
        return self.trees.best_iteration

    def fit(
        self,
        x: np.ndarray,
        y: np.ndarray,
        x_valid: np.ndarray,
        y_valid: np.ndarray,
        *,
        feature_names: list[str] | None = None,
        weight: np.ndarray | None = None,
    ) -> Self:
        """Fit the trees as usual, then calibrate the blend on the validation rows."""

        self.trees.fit(x, y, x_valid, y_valid, feature_names=feature_names, weight=weight)
        self.platt = fit_platt(self.raw(x_valid), y_valid)
        return self

    def _anchors(self, x: np.ndarray) -> np.ndarray:
        cols = [a * x[:, j] + b for j, (a, b) in zip(self.columns, self.head_platts, strict=True)]
        return np.asarray(np.mean(cols, axis=0))

    def raw(self, x: np.ndarray) -> np.ndarray:
        """Weighted mean of the trees' calibrated log-odds and the anchors'."""
        return self.weight * self.trees.logit(x) + (1.0 - self.weight) * self._anchors(x)

    def model_text(self) -> str:
        """The trees' booster text (the rest is a few numbers kept in the metadata)."""
        return self.trees.model_text()

    def config(self) -> dict[str, Any]:
        """What :meth:`from_config` needs besides the booster text."""
        return {
            "columns": self.columns,
            "head_platts": [list(p) for p in self.head_platts],
            "weight": self.weight,
            "trees_platt": list(self.trees.platt),
        }

    @classmethod
    def from_config(
        cls, text: str, config: dict[str, Any], platt: tuple[float, float], seed: int = 0
    ) -> Blend:
        """Rebuild from :meth:`model_text`, :meth:`config` and the final Platt pair."""
        trees = Combiner.from_text(text, tuple(config["trees_platt"]), seed=seed)
        blend = cls(
            trees,
            [int(c) for c in config["columns"]],
            [(float(a), float(b)) for a, b in config["head_platts"]],
            weight=float(config["weight"]),
        )
        blend.platt = (float(platt[0]), float(platt[1]))
        return blend
