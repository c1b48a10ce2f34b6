"""Matched-FPR lines between runs of one trace (§2.7).

Each run has its own operating point, so comparing runs at their own
thresholds mixes operating points. Here run A (with a score curve) is
re-thresholded to run B's FPR at B's own threshold, and A's metrics there are
set against B's. Boolean-only runs have one operating point: they are never
re-thresholded, but other runs are matched to their FPR.

Pooled (micro) line
    A's threshold is the lowest whose pooled FPR is <= B's pooled FPR. The
    interval of ``F1(A matched) - F1(B)`` is a paired bootstrap (source x
    label strata, the same indices for A and B); inside every resample B's FPR
    is re-measured and A's threshold re-picked to it, with the closed form of
    :func:`gatebench.compare.matching.matched_counts`, so the interval carries
    the threshold-selection uncertainty (:data:`~gatebench.compare.matching.CAVEAT`).

Per-dataset line
    On a dataset with attack and benign prompts, A's primary metric at B's FPR
    on that dataset (:func:`gatebench.compare.matching.matched_value`) against
    B's value at B's threshold; "within noise" when B's value lies inside A's
    matched interval. All-attack and all-benign datasets get a note instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from gatebench.compare._metrics import count_metric, counts, metric_at
from gatebench.compare.matching import CAVEAT, matched_counts, matched_value
from gatebench.errors import ConfigError
from gatebench.metrics._validate import to_seed_sequence
from gatebench.metrics.bootstrap import percentile_interval
from gatebench.seeding import child_sequence
from gatebench.threshold import matched_fpr_threshold

__all__ = [
    "ALL_ATTACK_NOTE",
    "ALL_BENIGN_NOTE",
    "BOOLEAN_NOTE",
    "POOLED_CAVEAT",
    "RunScores",
    "dataset_matched_runs",
    "pooled_matched",
    "pooled_matched_line",
]

#: Why the pooled interval is wider than a fixed-threshold one.
POOLED_CAVEAT = (
    f"{CAVEAT}; the target is the other run's pooled FPR, re-measured in each paired resample"
)
BOOLEAN_NOTE = (
    "boolean-only detector: one operating point, never re-thresholded "
    "(other runs are matched to its FPR)"
)
ALL_ATTACK_NOTE = (
    "no benign prompts: FPR is undefined, so there is no matched-FPR line; "
    "runs are compared at their own thresholds"
)
ALL_BENIGN_NOTE = (
    "no attack prompts: FPR is the primary axis itself (ODA = 1 - FPR), so matching it "
    "would make every run equal by construction; runs are compared at their own thresholds"
)
# Bound on resamples x prompts held in memory at once (two float matrices).
_CHUNK_CELLS = 2_000_000


@dataclass(frozen=True, eq=False)
class RunScores:
    """One run's per-prompt scores, aligned with the labels it is compared on.

    Attributes
    ----------
    label : str
        Display name of the run (unique within a comparison).
    scores : ndarray
        Out-of-fold headline scores, one per prompt.
    threshold : float
        The run's own operating threshold (block iff ``score >= threshold``).
    boolean_only : bool
        One fixed operating point: never re-thresholded, only matched to.
    """

    label: str
    scores: NDArray[np.float64]
    threshold: float
    boolean_only: bool = False

    def __post_init__(self) -> None:
        if not math.isfinite(self.threshold):
            raise ConfigError(
                f"run {self.label!r} has threshold {self.threshold!r}; a finite operating "
                "threshold is needed (re-run the evaluation)"
            )


def _check(y: NDArray[np.bool_], runs: Sequence[RunScores], n_resamples: int, level: float) -> None:
    labels = [r.label for r in runs]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"run labels must be unique to match runs, got {labels}")
    for r in runs:
        if r.scores.shape != y.shape:
            raise ConfigError(
                f"run {r.label!r} has {r.scores.size} scores for {y.size} prompts; "
                "align every run to the same prompts first"
            )
    if y.all() or not y.any():
        raise ConfigError(
            "pooled matching needs attack and benign prompts; this trace has only "
            f"{'attacks' if y.any() else 'benign prompts'} (use a trace with both)"
        )
    # The percentile interval needs at least one replicate in each tail.
    least = math.ceil(round(2.0 / (1.0 - level), 9))
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < least:
        raise ConfigError(
            f"n_resamples={n_resamples!r} is too small for a {level:.0%} matched-FPR interval; "
            f"use an int >= {least}"
        )


def _cells(y: NDArray[np.bool_], sources: NDArray[Any]) -> tuple[list[Any], list[Any]]:
    """Row indices of every source x label cell, split into attack and benign cells."""
    pos, neg = [], []
    for name in sorted(set(sources.tolist())):
        in_src = sources == name
        neg.append(np.flatnonzero(in_src & ~y))
        pos.append(np.flatnonzero(in_src & y))
    return [c for c in pos if c.size], [c for c in neg if c.size]


def _draw(cells: list[Any], b: int, rng: np.random.Generator) -> NDArray[np.intp]:
    """``(b, n)`` resampled row indices, drawn with replacement within each cell."""
    return np.concatenate([c[rng.integers(0, c.size, size=(b, c.size))] for c in cells], axis=1)


def _matched_rows(
    pos: NDArray[np.float64], neg: NDArray[np.float64], k: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Row-wise ``(tp, fp)`` at the lowest threshold allowing ``k[row]`` false positives."""
    tp = np.empty(k.size, dtype=np.int64)
    fp = np.empty(k.size, dtype=np.int64)
    # matched_counts takes one k; B's FP count takes few distinct values.
    for kk in np.unique(k):
        rows = k == kk
        tp[rows], fp[rows] = matched_counts(pos[rows], neg[rows], int(kk))
    return tp, fp


def _difference_replicates(
    y: NDArray[np.bool_],
    sources: NDArray[Any],
    run: RunScores,
    against: RunScores,
    rng: np.random.Generator,
    n_resamples: int,
) -> NDArray[np.float64]:
    """``F1(run matched to against's FPR) - F1(against)`` per paired resample."""
    pos_cells, neg_cells = _cells(y, sources)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    blocked = against.scores >= against.threshold
    chunk = max(1, _CHUNK_CELLS // y.size)
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, chunk):
        b = min(chunk, n_resamples - start)
        neg_idx, pos_idx = _draw(neg_cells, b, rng), _draw(pos_cells, b, rng)
        tp_b, fp_b = blocked[pos_idx].sum(axis=1), blocked[neg_idx].sum(axis=1)
        # Strata keep n_neg fixed, so B's resampled FPR fp_b / n_neg allows exactly
        # fp_b false positives (allowed_false_positives of that FPR).
        tp_a, fp_a = _matched_rows(run.scores[pos_idx], run.scores[neg_idx], fp_b)
        f1_a = count_metric("f1", tp_a, fp_a, n_neg - fp_a, n_pos - tp_a)
        f1_b = count_metric("f1", tp_b, fp_b, n_neg - fp_b, n_pos - tp_b)
        out[start : start + b] = f1_a - f1_b
    return out


def _at_threshold(y: NDArray[np.bool_], run: RunScores) -> dict[str, float]:
    """Micro metrics of ``run`` at its own threshold."""
    tp, fp, tn, fn = counts(y, run.scores, run.threshold)
    return {m: float(count_metric(m, tp, fp, tn, fn)) for m in ("f1", "precision", "recall", "fpr")}


def pooled_matched_line(
    y: ArrayLike,
    sources: ArrayLike,
    run: RunScores,
    against: RunScores,
    *,
    seed: int | np.random.SeedSequence,
    n_resamples: int = 2000,
    level: float = 0.95,
) -> dict[str, Any]:
    """``run`` re-thresholded to ``against``'s pooled FPR, with a paired CI of the F1 gap.

    Parameters
    ----------
    y : array
        Labels (1 attack) of the prompts both runs scored, aligned with the scores.
    sources : array
        Source of each prompt (the bootstrap strata are source x label).
    run : RunScores
        The run to re-threshold; must not be boolean-only.
    against : RunScores
        The run whose FPR at its own threshold is the target.
    seed : int or SeedSequence
        Resampling seed.
    n_resamples : int
        B of the paired bootstrap.
    level : float
        Interval level.

    Returns
    -------
    dict
        ``run``, ``against``, ``target_fpr`` (against's pooled FPR),
        ``threshold`` / ``feasible`` / ``fpr`` / ``f1`` / ``precision`` /
        ``recall`` / ``tp`` / ``fp`` of ``run`` at the matched threshold,
        ``against_threshold`` / ``against_f1`` / ``against_precision`` /
        ``against_recall``, ``difference`` ``{metric, value, low, high, level}``
        of the F1 gap, ``within_noise`` (the interval contains 0),
        ``n_resamples`` and ``caveat``.

    Raises
    ------
    ConfigError
        ``run`` is boolean-only, the inputs are misaligned, the trace lacks
        attack or benign prompts, or B is too small for the level.
    """
    yy = np.asarray(y).astype(bool)
    src = np.asarray(sources).astype(str)
    _check(yy, [run, against], n_resamples, level)
    if run.boolean_only:
        raise ConfigError(
            f"run {run.label!r} is boolean-only (one operating point) and cannot be "
            "re-thresholded; use it only as the run matched against"
        )
    theirs = _at_threshold(yy, against)
    op = matched_fpr_threshold(yy.astype(np.int8), run.scores, theirs["fpr"])
    rng = np.random.Generator(np.random.PCG64(to_seed_sequence(seed)))
    reps = _difference_replicates(yy, src, run, against, rng, n_resamples)
    low, high, _ = percentile_interval(reps, level)
    return {
        "run": run.label,
        "against": against.label,
        "against_boolean_only": against.boolean_only,
        "target_fpr": theirs["fpr"],
        "threshold": op.threshold,
        "feasible": op.feasible,
        "fpr": op.fpr,
        "f1": op.f1,
        "precision": op.precision,
        "recall": op.recall,
        "tp": op.tp,
        "fp": op.fp,
        "against_threshold": against.threshold,
        "against_f1": theirs["f1"],
        "against_precision": theirs["precision"],
        "against_recall": theirs["recall"],
        "difference": {
            "metric": "f1",
            "value": op.f1 - theirs["f1"],
            "low": low,
            "high": high,
            "level": level,
        },
        "within_noise": bool(low <= 0.0 <= high),
        "n_resamples": n_resamples,
        "caveat": POOLED_CAVEAT,
    }


def pooled_matched(
    y: ArrayLike,
    sources: ArrayLike,
    runs: Sequence[RunScores],
    *,
    seed: int,
    n_resamples: int = 2000,
    level: float = 0.95,
) -> list[dict[str, Any]]:
    """Pooled matched lines for every ordered pair (A, B), A != B, A not boolean-only.

    Each pair's resamples use the child seed
    ``("compare", "matched_runs", "pooled", A, B)`` of ``seed``, so a pair's
    interval does not depend on which other runs are compared.
    """
    return [
        pooled_matched_line(
            y,
            sources,
            a,
            b,
            seed=child_sequence(seed, "compare", "matched_runs", "pooled", a.label, b.label),
            n_resamples=n_resamples,
            level=level,
        )
        for a in runs
        if not a.boolean_only
        for b in runs
        if b is not a
    ]


def _dataset_line(
    y: NDArray[np.int8],
    run: RunScores,
    against: RunScores,
    *,
    metric: str,
    seed: np.random.SeedSequence,
    n_resamples: int,
    level: float,
) -> dict[str, Any]:
    benign = y == 0
    target = float(np.mean(against.scores[benign] >= against.threshold))
    m = matched_value(
        y,
        run.scores,
        target_fpr=target,
        metric=metric,
        seed=seed,
        n_resamples=n_resamples,
        level=level,
    )
    theirs = metric_at(y, against.scores, against.threshold, metric)
    return {
        "against": against.label,
        "metric": metric,
        "target_fpr": target,
        "threshold": m.threshold,
        "fpr": m.fpr,
        "value": m.value,
        "low": m.low,
        "high": m.high,
        "level": level,
        "against_threshold": against.threshold,
        "against_value": theirs,
        "delta": m.value - theirs,
        "within_noise": m.contains(theirs),
    }


def dataset_matched_runs(
    y: ArrayLike,
    runs: Sequence[RunScores],
    *,
    source: str,
    metric: str,
    seed: int,
    n_resamples: int = 2000,
    level: float = 0.95,
) -> dict[str, dict[str, Any]]:
    """Per run, its matched lines against every other run on one dataset.

    Parameters
    ----------
    y : array
        Labels of the dataset's prompts, aligned with each run's ``scores``
        (the runs hold this dataset's rows only).
    runs : sequence of RunScores
        Every run compared.
    source : str
        Dataset name (seeds and messages).
    metric : str
        The dataset's primary metric.
    seed : int
        Root seed; each (A, B) gets child ``("compare", "matched_runs", source, A, B)``.

    Returns
    -------
    dict
        Run label -> ``{"matched_runs": [...]}``, one line per other run with
        ``against``, ``metric``, ``target_fpr`` (against's FPR here),
        ``threshold`` / ``fpr`` / ``value`` / ``low`` / ``high`` / ``level``
        of this run matched, ``against_threshold``, ``against_value``,
        ``delta`` and ``within_noise`` (against's value inside the matched
        interval); or ``{"matched_runs_note": str}`` for boolean-only runs and
        for datasets without attack or without benign prompts.
    """
    yy = np.asarray(y).astype(np.int8)
    if not (yy == 0).any():
        return {r.label: {"matched_runs_note": ALL_ATTACK_NOTE} for r in runs}
    if not (yy == 1).any():
        return {r.label: {"matched_runs_note": ALL_BENIGN_NOTE} for r in runs}
    _check(yy.astype(bool), runs, n_resamples, level)
    out: dict[str, dict[str, Any]] = {}
    for a in runs:
        if a.boolean_only:
            out[a.label] = {"matched_runs_note": BOOLEAN_NOTE}
            continue
        lines = [
            _dataset_line(
                yy,
                a,
                b,
                metric=metric,
                seed=child_sequence(seed, "compare", "matched_runs", source, a.label, b.label),
                n_resamples=n_resamples,
                level=level,
            )
            for b in runs
            if b is not a
        ]
        out[a.label] = {"matched_runs": lines}
    return out
