"""The percentile interval rule, shared by every bootstrap interval in the package.

Percentile interval from the order statistics of the ``B`` replicates
``theta*_(1) <= ... <= theta*_(B)`` (1-based ranks):

    CI_level = [theta*_(ceil(q B)), theta*_(floor((1 - q) B))],   q = (1 - level) / 2

so for ``B = 10,000`` and ``level = 0.95`` the 250th and 9,750th values.
Replicates where a metric is undefined (NaN, e.g. precision of a resample in
which nothing is blocked) are dropped and counted in ``n_undefined``; the rule
is applied to the ``B'`` defined ones. The rule lives apart from the resampling
so that the paired and matched comparisons read their intervals the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from gatebench.errors import ConfigError
from gatebench.metrics._validate import check_level, check_positive_int

__all__ = [
    "ConfidenceInterval",
    "interval_from_replicates",
    "order_statistic_ranks",
    "percentile_interval",
]


def order_statistic_ranks(n_resamples: int, level: float = 0.95) -> tuple[int, int]:
    """1-based ranks of the percentile interval's endpoints among ``B`` sorted values.

    ``(ceil(q B), floor((1 - q) B))`` with ``q = (1 - level) / 2``. Products
    are rounded to 9 decimals first so that, e.g., ``0.025 * 10000`` is 250
    and not 250.00000000000003 (which would give 251). ``q B`` must be at
    least 1 (each tail holds at least one resample), else ConfigError.

    Examples
    --------
    >>> order_statistic_ranks(10_000, 0.95)
    (250, 9750)
    >>> order_statistic_ranks(40, 0.95)
    (1, 39)
    """
    b = check_positive_int(n_resamples, name="n_resamples")
    lvl = check_level(level)
    q = (1.0 - lvl) / 2.0
    if round(q * b, 9) < 1:
        raise ConfigError(
            f"n_resamples={b} is too small for a {lvl:g} percentile interval (each tail "
            f"needs at least one resample); use at least {math.ceil(round(1 / q, 9))} resamples"
        )
    lo = math.ceil(round(q * b, 9))
    hi = math.floor(round((1.0 - q) * b, 9))
    return lo, hi


def percentile_interval(replicates: ArrayLike, level: float = 0.95) -> tuple[float, float, int]:
    """Percentile interval by the order-statistic rule, ignoring NaN replicates.

    Returns
    -------
    low, high : float
        The ``ceil(qB')``-th and ``floor((1-q)B')``-th smallest defined values
        (1-based), ``B'`` = number of non-NaN replicates; NaN when ``B'`` is
        too small for the level (``q B' < 1``).
    n_undefined : int
        How many replicates were NaN.

    Examples
    --------
    >>> percentile_interval(np.arange(40.0, 0.0, -1.0), 0.95)
    (1.0, 39.0, 0)
    """
    r = np.asarray(replicates, dtype=np.float64).ravel()
    ok = ~np.isnan(r)
    n_undef = int(r.size - ok.sum())
    vals = np.sort(r[ok])
    lvl = check_level(level)
    if round((1.0 - lvl) / 2.0 * vals.size, 9) < 1:
        return float("nan"), float("nan"), n_undef
    lo, hi = order_statistic_ranks(int(vals.size), lvl)
    return float(vals[lo - 1]), float(vals[hi - 1]), n_undef


@dataclass(frozen=True, slots=True)
class ConfidenceInterval:
    """A point estimate with its bootstrap percentile interval.

    Attributes
    ----------
    estimate : float
        The metric on the original data.
    low, high : float
        Interval endpoints (order-statistic rule, see module docstring).
    level : float
        Nominal coverage, e.g. 0.95.
    n_resamples : int
        Replicates drawn (B).
    n_undefined : int
        Replicates where the metric was undefined and which were dropped.
    method : str
        ``"percentile"`` (stratified bootstrap) or ``"subsample"``.
    """

    estimate: float
    low: float
    high: float
    level: float
    n_resamples: int
    n_undefined: int = 0
    method: str = "percentile"

    def contains(self, value: float) -> bool:
        """True when ``value`` lies in [low, high] ("within noise", §2.9)."""
        return bool(self.low <= value <= self.high)

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for result.json."""
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "level": self.level,
            "n_resamples": self.n_resamples,
            "n_undefined": self.n_undefined,
            "method": self.method,
        }


def interval_from_replicates(
    estimate: float, replicates: NDArray[np.float64], level: float, method: str = "percentile"
) -> ConfidenceInterval:
    """``estimate`` with the percentile interval of its ``replicates`` (B = their count)."""
    lo, hi, n_undef = percentile_interval(replicates, level)
    return ConfidenceInterval(
        estimate=float(estimate),
        low=lo,
        high=hi,
        level=level,
        n_resamples=int(replicates.size),
        n_undefined=n_undef,
        method=method,
    )
