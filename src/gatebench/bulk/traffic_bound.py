"""A threshold with a statistical FPR bound on a sample of benign traffic.

A sample quantile meets an FPR target on the sample it was read from and
misses it on the next sample about half the time: with 500 benign prompts
and five of them flagged, the true rate may well be 2%. The threshold here is
the lowest at which the one-sided exact (Clopper-Pearson) upper confidence
bound of the FPR is at most the target, so the target holds for the traffic
the sample was drawn from at the stated confidence, not only for the sample.
The price is a few flags fewer than the target allows, and a floor on the
sample's size: with no prompt flagged the bound is ``1 - (1 - c) ** (1 / n)``,
so 1% at 95% confidence needs 299 prompts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import binomtest

from gatebench.errors import ConfigError

__all__ = [
    "TrafficBound",
    "allowed_flags",
    "bound_at",
    "check_bound",
    "fpr_upper_bound",
    "min_prompts",
    "traffic_bound",
]


def check_bound(target_fpr: float, confidence: float) -> None:
    """Refuse a target outside (0, 1) or a confidence outside (0.5, 1), naming the option."""
    if not 0.0 < target_fpr < 1.0:
        raise ConfigError(f"--target-fpr {target_fpr!r}: give the FPR bound in (0, 1), e.g. 0.01")
    if not 0.5 < confidence < 1.0:
        raise ConfigError(
            f"--confidence {confidence!r}: give the bound's confidence in (0.5, 1), e.g. 0.95"
        )


def fpr_upper_bound(flagged: int, n: int, confidence: float) -> float:
    """One-sided exact upper ``confidence`` bound of a rate seen as ``flagged`` of ``n``."""
    if flagged >= n:
        return 1.0
    ci = binomtest(flagged, n, alternative="less").proportion_ci(
        confidence_level=confidence, method="exact"
    )
    return float(ci.high)


def min_prompts(target_fpr: float, confidence: float) -> int:
    """The fewest benign prompts whose bound can meet ``target_fpr`` (none flagged)."""
    return math.ceil(math.log(1.0 - confidence) / math.log(1.0 - target_fpr))


def allowed_flags(n: int, target_fpr: float, confidence: float) -> int:
    """The most of ``n`` benign prompts that may be flagged with the bound <= target; -1 if none."""
    if n < 1 or fpr_upper_bound(0, n, confidence) > target_fpr:
        return -1
    # The bound rises with the count: bisect for the last count that meets the target.
    lo, hi = 0, n - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fpr_upper_bound(mid, n, confidence) <= target_fpr:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass(frozen=True)
class TrafficBound:
    """What a threshold flags on a benign sample: the count, the rate and its upper bound."""

    threshold: float
    n: int
    flagged: int
    fpr: float
    fpr_upper: float
    confidence: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def bound_at(scores: ArrayLike, threshold: float, confidence: float) -> TrafficBound:
    """The sample's flags at ``threshold`` (``score >= threshold`` is flagged)."""
    s = np.asarray(scores, dtype=np.float64)
    k = int((s >= threshold).sum())
    return TrafficBound(
        float(threshold), len(s), k, k / len(s), fpr_upper_bound(k, len(s), confidence), confidence
    )


def traffic_bound(scores: ArrayLike, target_fpr: float, confidence: float) -> TrafficBound:
    """The lowest threshold whose FPR upper bound on these benign scores is <= ``target_fpr``.

    Parameters
    ----------
    scores : array-like of float
        One score per benign prompt of the sample.
    target_fpr : float
        The bound, in (0, 1).
    confidence : float
        Of the one-sided bound, in (0.5, 1).

    Returns
    -------
    TrafficBound
        At the chosen threshold: the lowest float above the ``k + 1``-th highest
        score, ``k`` being :func:`allowed_flags`, so at most ``k`` prompts are
        flagged (fewer where scores tie there).

    Raises
    ------
    ConfigError
        If the sample is too small for the bound, or its top scores leave no
        threshold in [0, 1] that flags few enough.
    """
    s = np.sort(np.asarray(scores, dtype=np.float64))[::-1]
    k = allowed_flags(len(s), target_fpr, confidence)
    if k < 0:
        raise ConfigError(
            f"{len(s)} benign prompts scored: an FPR bound of {target_fpr:g} at {confidence:g} "
            f"confidence needs at least {min_prompts(target_fpr, confidence)}; add benign "
            "prompts, raise --target-fpr or lower --confidence"
        )
    threshold = float(np.nextafter(s[k], np.inf))
    if threshold > 1.0:
        raise ConfigError(
            f"{k + 1} of the {len(s)} benign prompts score 1.0, so no threshold in [0, 1] "
            f"flags at most {k}; the sample holds attacks or text this model cannot tell "
            "from them; check the sample, or raise --target-fpr"
        )
    return bound_at(s, threshold, confidence)
