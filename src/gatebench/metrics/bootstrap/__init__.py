"""Stratified bootstrap confidence intervals (methodology §2.9).

The package is split by responsibility:

* :mod:`~gatebench.metrics.bootstrap.resampler`: how resamples are drawn.
  Rows are partitioned into cells (source x label for the headline); each
  resample redraws every cell's rows with replacement, as per-row weights,
  in blocks that each carry their own child seed, computed in threads or on a
  dask cluster with identical results.
* :mod:`~gatebench.metrics.bootstrap.replicates`: every headline metric (count
  metrics at each threshold, macro F1/FPR, AUC) of a block of resamples, from
  its weights.
* :mod:`~gatebench.metrics.bootstrap.percentile`: the order-statistic
  percentile rule that turns replicates into an interval.
* :mod:`~gatebench.metrics.bootstrap.headline`: :func:`bootstrap_headline`,
  assembling the headline intervals from the three above.
* :mod:`~gatebench.metrics.bootstrap.count_intervals`: per-dataset and
  sample-size-matched intervals, which need confusion counts only and draw
  them directly (binomial / multivariate hypergeometric), exact in
  distribution.

This module re-exports the public API, so callers import from
``gatebench.metrics.bootstrap`` whatever file a name lives in.
"""

from gatebench.metrics.bootstrap.count_intervals import (
    DEFAULT_LEVELS,
    SMALL_N,
    DatasetInterval,
    by_source_intervals,
    dataset_intervals,
    subsample_interval,
)
from gatebench.metrics.bootstrap.headline import HeadlineBootstrap, bootstrap_headline
from gatebench.metrics.bootstrap.percentile import (
    ConfidenceInterval,
    order_statistic_ranks,
    percentile_interval,
)
from gatebench.metrics.bootstrap.resampler import resample_counts

__all__ = [
    "DEFAULT_LEVELS",
    "SMALL_N",
    "ConfidenceInterval",
    "DatasetInterval",
    "HeadlineBootstrap",
    "bootstrap_headline",
    "by_source_intervals",
    "dataset_intervals",
    "order_statistic_ranks",
    "percentile_interval",
    "resample_counts",
    "subsample_interval",
]
