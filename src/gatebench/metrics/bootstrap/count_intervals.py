"""Per-dataset and sample-size-matched intervals, drawn directly as confusion counts.

A count metric (F1, precision, recall, FPR, ...) at a fixed threshold needs
only the resample's confusion counts, not its rows, and those counts have
closed-form distributions: under label strata, TP and FP are independent
binomials; a subsample of ``n`` rows without replacement is multivariate
hypergeometric over (TP, FN, FP, TN). Drawing them directly is exact in
distribution and far cheaper than drawing rows, so the per-dataset forest plot
and the matched comparisons use these instead of the headline's row weights.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from gatebench.errors import ConfigError
from gatebench.metrics._validate import (
    check_labels_scores,
    check_level,
    check_positive_int,
    check_sources,
    check_thresholds,
    to_seed_sequence,
)
from gatebench.metrics.bootstrap.percentile import (
    ConfidenceInterval,
    interval_from_replicates,
    order_statistic_ranks,
    percentile_interval,
)
from gatebench.metrics.frame import _check_primary, _infer_primary
from gatebench.metrics.scores import count_metric

__all__ = [
    "COUNT_METRICS",
    "DEFAULT_LEVELS",
    "SMALL_N",
    "DatasetInterval",
    "by_source_intervals",
    "dataset_intervals",
    "subsample_interval",
]

#: Nested interval levels of the per-dataset forest plot.
DEFAULT_LEVELS = (0.5, 0.8, 0.95, 0.99)
#: Datasets with fewer rows are flagged ``small_n``.
SMALL_N = 200

COUNT_METRICS = ("f1", "precision", "recall", "fpr", "oda", "accuracy")

_metric_from_counts = count_metric


def _check_count_metric(metric: Any) -> str:
    if metric not in COUNT_METRICS:
        raise ConfigError(
            f"metric must be one of {', '.join(COUNT_METRICS)}, got {metric!r}"
            + ("; AUC needs row identity, use bootstrap_headline" if metric == "auc" else "")
        )
    return str(metric)


@dataclass(frozen=True, slots=True)
class DatasetInterval:
    """A per-dataset metric with nested percentile intervals (forest plot).

    Attributes
    ----------
    metric : str
        The metric (usually the dataset's primary metric).
    estimate : float
        Value on the dataset at the global threshold.
    intervals : dict of float -> (float, float)
        Level -> (low, high), e.g. 0.5, 0.8, 0.95, 0.99.
    n, n_pos, n_neg : int
        Rows, attacks, benign rows.
    small_n : bool
        ``n < small_n`` threshold (default 200): the CI is correspondingly wide.
    n_resamples, n_undefined : int
        B and the replicates where the metric was undefined.
    """

    metric: str
    estimate: float
    intervals: dict[float, tuple[float, float]]
    n: int
    n_pos: int
    n_neg: int
    small_n: bool
    n_resamples: int
    n_undefined: int

    def ci(self, level: float = 0.95) -> ConfidenceInterval:
        """The interval at ``level`` as a :class:`ConfidenceInterval`."""
        if level not in self.intervals:
            raise ConfigError(
                f"level {level!r} was not computed; available: {sorted(self.intervals)}"
            )
        lo, hi = self.intervals[level]
        return ConfidenceInterval(self.estimate, lo, hi, level, self.n_resamples, self.n_undefined)


def dataset_intervals(
    y: ArrayLike,
    scores: ArrayLike,
    *,
    threshold: float,
    metric: str,
    seed: int | np.random.SeedSequence | np.random.Generator,
    levels: Sequence[float] = DEFAULT_LEVELS,
    n_resamples: int = 10_000,
    small_n: int = SMALL_N,
) -> DatasetInterval:
    """Label-stratified bootstrap intervals of one dataset's count metric.

    With strata = label, a resample's TP is the number of its ``n_pos``
    attack draws that land on blocked attacks: exactly
    ``Binomial(n_pos, TP/n_pos)``; likewise ``FP ~ Binomial(n_neg, FP/n_neg)``,
    independent. Drawing those two counts is exact in distribution and needs
    no row indices.

    Examples
    --------
    >>> d = dataset_intervals([1] * 150 + [0] * 50, [0.9] * 120 + [0.1] * 80,
    ...                       threshold=0.5, metric="recall", seed=0, n_resamples=2000)
    >>> d.estimate, d.small_n, sorted(d.intervals)
    (0.8, False, [0.5, 0.8, 0.95, 0.99])
    """
    yy, ss = check_labels_scores(y, scores)
    m = _check_count_metric(metric)
    t = check_thresholds(threshold)
    if t.size != 1:
        raise ConfigError(f"threshold must be a single number, got {t.size} values")
    b = check_positive_int(n_resamples, name="n_resamples")
    lvls = [check_level(lv, name="levels") for lv in levels]
    for lv in lvls:
        order_statistic_ranks(b, lv)
    rng = np.random.Generator(np.random.PCG64(to_seed_sequence(seed)))
    blocked = ss >= t[0]
    n_pos = int(yy.sum())
    n_neg = int(yy.size - n_pos)
    tp = int(np.count_nonzero(blocked & (yy == 1)))
    fp = int(np.count_nonzero(blocked & (yy == 0)))
    tp_b = rng.binomial(n_pos, tp / n_pos, size=b) if n_pos else np.zeros(b, np.int64)
    fp_b = rng.binomial(n_neg, fp / n_neg, size=b) if n_neg else np.zeros(b, np.int64)
    reps = np.asarray(
        _metric_from_counts(m, tp_b, fp_b, n_neg - fp_b, n_pos - tp_b), dtype=np.float64
    )
    est = float(_metric_from_counts(m, tp, fp, n_neg - fp, n_pos - tp))
    intervals: dict[float, tuple[float, float]] = {}
    n_undef = 0
    for lv in lvls:
        lo, hi, n_undef = percentile_interval(reps, lv)
        intervals[lv] = (lo, hi)
    return DatasetInterval(
        metric=m,
        estimate=est,
        intervals=intervals,
        n=int(yy.size),
        n_pos=n_pos,
        n_neg=n_neg,
        small_n=yy.size < small_n,
        n_resamples=b,
        n_undefined=n_undef,
    )


def by_source_intervals(
    y: ArrayLike,
    scores: ArrayLike,
    sources: ArrayLike,
    *,
    threshold: float,
    seed: int | np.random.SeedSequence | np.random.Generator,
    primary_metrics: Mapping[str, str] | None = None,
    levels: Sequence[float] = DEFAULT_LEVELS,
    n_resamples: int = 10_000,
    small_n: int = SMALL_N,
) -> pd.DataFrame:
    """:func:`dataset_intervals` of each source's primary metric, one row per source.

    Each source draws from a child of ``seed`` keyed by the source's *name*
    (CRC-32 in the spawn key), so adding or removing a source never changes
    another source's interval. The table is what the forest plot draws.

    Returns
    -------
    pandas.DataFrame
        Index ``source``; columns ``metric, estimate, n, n_pos, n_neg, small_n,
        n_undefined`` and ``low_<pct>``/``high_<pct>`` per level (``low_95``...).
    """
    yy, ss = check_labels_scores(y, scores)
    src = check_sources(sources, yy.size)
    names = sorted(set(src.tolist()))
    root = to_seed_sequence(seed)
    rows = []
    for name in names:
        child = np.random.SeedSequence(
            entropy=root.entropy, spawn_key=(*root.spawn_key, zlib.crc32(name.encode()))
        )
        mask = src == name
        n_pos = int(yy[mask].sum())
        if primary_metrics is None:
            metric = _infer_primary(n_pos, int(mask.sum()) - n_pos)
        elif name not in primary_metrics:
            raise ConfigError(
                f"primary_metrics has no entry for source {name!r}; give every source one"
            )
        else:
            metric = _check_primary(primary_metrics[name], where=f"primary_metrics[{name!r}]")
        d = dataset_intervals(
            yy[mask],
            ss[mask],
            threshold=threshold,
            metric=metric.value,
            seed=child,
            levels=levels,
            n_resamples=n_resamples,
            small_n=small_n,
        )
        row: dict[str, Any] = {
            "source": name,
            "metric": d.metric,
            "estimate": d.estimate,
            "n": d.n,
            "n_pos": d.n_pos,
            "n_neg": d.n_neg,
            "small_n": d.small_n,
            "n_undefined": d.n_undefined,
        }
        for lv, (lo, hi) in d.intervals.items():
            pct = f"{lv * 100:g}"
            row[f"low_{pct}"] = lo
            row[f"high_{pct}"] = hi
        rows.append(row)
    return pd.DataFrame(rows).set_index("source")


def subsample_interval(
    y: ArrayLike,
    scores: ArrayLike,
    *,
    threshold: float,
    n: int,
    metric: str,
    seed: int | np.random.SeedSequence | np.random.Generator,
    n_resamples: int = 10_000,
    level: float = 0.95,
) -> ConfidenceInterval:
    """Sample-size-matched interval: the metric over subsamples of ``n`` rows.

    Draws ``n_resamples`` subsamples of size ``n`` *without* replacement (a
    competitor evaluated on ``n`` rows) and returns the percentile interval of
    the metric at the fixed ``threshold``. A subsample's confusion counts are
    exactly multivariate-hypergeometric over the four cells (TP, FN, FP, TN),
    so they are drawn directly. The estimate is the full-data value. The
    threshold is not re-picked per subsample.

    Examples
    --------
    >>> y = [1] * 500 + [0] * 500
    >>> s = [0.9] * 400 + [0.2] * 100 + [0.1] * 490 + [0.8] * 10
    >>> ci = subsample_interval(y, s, threshold=0.5, n=100, metric="recall", seed=0)
    >>> ci.estimate, ci.low < 0.8 < ci.high, ci.method
    (0.8, True, 'subsample')
    """
    yy, ss = check_labels_scores(y, scores)
    m = _check_count_metric(metric)
    b = check_positive_int(n_resamples, name="n_resamples")
    lvl = check_level(level)
    order_statistic_ranks(b, lvl)
    size = check_positive_int(n, name="n")
    if size > yy.size:
        raise ConfigError(
            f"n={size} exceeds the {yy.size} rows available; "
            "a sample-size-matched interval needs n <= N"
        )
    t = check_thresholds(threshold)
    if t.size != 1:
        raise ConfigError(f"threshold must be a single number, got {t.size} values")
    rng = np.random.Generator(np.random.PCG64(to_seed_sequence(seed)))
    blocked = ss >= t[0]
    pos = yy == 1
    tp = int(np.count_nonzero(blocked & pos))
    fn = int(np.count_nonzero(~blocked & pos))
    fp = int(np.count_nonzero(blocked & ~pos))
    tn = int(yy.size - tp - fn - fp)
    draws = rng.multivariate_hypergeometric([tp, fn, fp, tn], size, size=b)
    reps = np.asarray(
        _metric_from_counts(m, draws[:, 0], draws[:, 2], draws[:, 3], draws[:, 1]),
        dtype=np.float64,
    )
    est = float(_metric_from_counts(m, tp, fp, tn, fn))
    return interval_from_replicates(est, reps, lvl, method="subsample")
