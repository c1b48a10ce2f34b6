"""Headline intervals: every headline metric's CI from one set of stratified resamples.

:func:`bootstrap_headline` draws the resamples
(:mod:`~gatebench.metrics.bootstrap.resampler`), computes every metric of
each from its row weights (:mod:`~gatebench.metrics.bootstrap.replicates`)
and reads the intervals by the percentile rule
(:mod:`~gatebench.metrics.bootstrap.percentile`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from gatebench.metrics._validate import (
    check_level,
    check_positive_int,
    check_thresholds,
    to_seed_sequence,
)
from gatebench.metrics.bootstrap.percentile import (
    ConfidenceInterval,
    interval_from_replicates,
    order_statistic_ranks,
)
from gatebench.metrics.bootstrap.replicates import HeadlineReplicates, headline_block
from gatebench.metrics.bootstrap.resampler import map_blocks, resolve_n_jobs, stratify

if TYPE_CHECKING:
    from gatebench.parallel import Executor

__all__ = ["HeadlineBootstrap", "bootstrap_headline"]


@dataclass(frozen=True, eq=False)
class HeadlineBootstrap:
    """Headline CIs, all from the same stratified resamples.

    Attributes
    ----------
    thresholds : tuple of float
        The thresholds the count metrics were evaluated at.
    auc : ConfidenceInterval
        Pooled ROC AUC.
    at : dict of float -> dict of str -> ConfidenceInterval
        Per threshold: ``f1``, ``precision``, ``recall``, ``fpr`` (micro),
        ``macro_f1`` and ``macro_fpr``.
    level, n_resamples : float, int
        Interval level and B.
    strata : str
        ``"source x label"`` or ``"custom"``.
    n_cells : int
        Number of strata cells.
    macro_sources : tuple of str
        Sources averaged by the macro F1 point estimate (those with attacks).
    macro_fpr_sources : tuple of str
        Sources averaged by the macro FPR point estimate (those with benign rows).
    replicates : dict of str -> ndarray or None
        Raw replicates when asked for (``"auc"``, ``"f1@0"``, ...: the index
        after ``@`` is the threshold's position).
    """

    thresholds: tuple[float, ...]
    auc: ConfidenceInterval
    at: dict[float, dict[str, ConfidenceInterval]]
    level: float
    n_resamples: int
    strata: str
    n_cells: int
    macro_sources: tuple[str, ...]
    macro_fpr_sources: tuple[str, ...] = ()
    replicates: dict[str, NDArray[np.float64]] | None = field(default=None, repr=False)

    def to_frame(self) -> pd.DataFrame:
        """One row per (metric, threshold); AUC has threshold NaN."""
        rows = [{"metric": "auc", "threshold": float("nan"), **self.auc.as_dict()}]
        for t, cis in self.at.items():
            rows += [{"metric": m, "threshold": t, **ci.as_dict()} for m, ci in cis.items()]
        return pd.DataFrame(rows)


def bootstrap_headline(
    y: ArrayLike,
    scores: ArrayLike,
    sources: ArrayLike,
    *,
    thresholds: float | Sequence[float],
    seed: int | np.random.SeedSequence | np.random.Generator,
    strata: ArrayLike | None = None,
    n_resamples: int = 10_000,
    level: float = 0.95,
    n_jobs: int | None = None,
    return_replicates: bool = False,
    executor: Executor | None = None,
) -> HeadlineBootstrap:
    """Stratified-bootstrap CIs of every headline metric from one set of resamples.

    Parameters
    ----------
    y, scores, sources : array-like
        Labels (1 = attack), scores in [0, 1], source name per row.
    thresholds : float or sequence of float
        Operating thresholds (e.g. the FPR <= 1% point and the natural one);
        micro F1/precision/recall/FPR and macro F1/FPR are computed at each.
    seed : int, SeedSequence or Generator
        Root of the resampling randomness (required: no global RNG).
    strata : array-like, optional
        Cell label per row. Default: source x label (§2.9 headline).
    n_resamples : int
        B, default 10,000.
    level : float
        Interval level, default 0.95.
    n_jobs : int, optional
        Threads; default all available cores. Does not change the result.
    return_replicates : bool
        Keep the raw replicate arrays on the result.
    executor : Executor, optional
        A dask executor computes the resample blocks on its cluster; any
        other (or none) uses threads here. Every block carries its own child
        seed, so the replicates are identical whichever computed them.

    Returns
    -------
    HeadlineBootstrap

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 300)
    >>> s = np.clip(0.3 * y + rng.random(300) * 0.7, 0, 1)
    >>> src = np.where(np.arange(300) < 150, "a", "b")
    >>> res = bootstrap_headline(y, s, src, thresholds=[0.5], seed=1, n_resamples=500)
    >>> ci = res.at[0.5]["f1"]
    >>> bool(ci.low <= ci.estimate <= ci.high), ci.n_resamples
    (True, 500)
    """
    t = check_thresholds(thresholds)
    b = check_positive_int(n_resamples, name="n_resamples")
    lvl = check_level(level)
    order_statistic_ranks(b, lvl)  # refuse a B too small for the level up front
    ss_seed = to_seed_sequence(seed)
    jobs = resolve_n_jobs(n_jobs)
    yy, ss, src, names, cells = stratify(y, scores, sources, strata)
    eng = HeadlineReplicates(yy, ss, src, len(names), cells, t)

    # The point estimate is the same computation with every row drawn once.
    ones = np.ones((1, eng.n), dtype=np.int32)
    point = {k: float(v[0]) for k, v in eng.stats(ones).items()}
    reps = {k: np.empty(b, dtype=np.float64) for k in point}

    def collect(a: int, z: int, stats: dict[str, NDArray[np.float64]]) -> None:
        for k, v in stats.items():
            reps[k][a:z] = v  # blocks write disjoint slices: thread-safe

    map_blocks(eng, b, ss_seed, headline_block, collect, n_jobs=jobs, executor=executor)

    at: dict[float, dict[str, ConfidenceInterval]] = {}
    for ti, thr in enumerate(t.tolist()):
        at[thr] = {
            m: interval_from_replicates(point[f"{m}@{ti}"], reps[f"{m}@{ti}"], lvl)
            for m in ("f1", "precision", "recall", "fpr", "macro_f1", "macro_fpr")
        }
    has_pos = np.bincount(eng.col_src[eng.col_y == 1], minlength=len(names)) > 0
    has_neg = np.bincount(eng.col_src[eng.col_y == 0], minlength=len(names)) > 0
    return HeadlineBootstrap(
        thresholds=tuple(t.tolist()),
        auc=interval_from_replicates(point["auc"], reps["auc"], lvl),
        at=at,
        level=lvl,
        n_resamples=b,
        strata="source x label" if strata is None else "custom",
        n_cells=len(eng.cell_bounds),
        macro_sources=tuple(n for n, h in zip(names, has_pos, strict=True) if h),
        macro_fpr_sources=tuple(n for n, h in zip(names, has_neg, strict=True) if h),
        replicates=reps if return_replicates else None,
    )
