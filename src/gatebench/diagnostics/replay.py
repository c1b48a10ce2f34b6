"""Determinism replay (methodology §2.12): refit one fold with the run's seeds, compare bytes.

The headline pass's fold 0 is refitted twice in this process: once through
:func:`gatebench.cv.run_fold` itself (the run's code path) and once through
the diagnostics' own refit (:func:`gatebench.diagnostics._refit.fitted_fold`,
whose model the paraphrase, permutation and head checks then reuse). Each
refit's held-out scores are compared with the run's recorded scores byte for
byte (``ndarray.tobytes``). Two refits catch a detector that is
non-deterministic within one process even when the recorded scores came from
a checkpoint, and they also certify that the model the other expensive
checks probe is the model the run evaluated.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from gatebench import cv
from gatebench.detectors import score_detector
from gatebench.diagnostics._base import Check, DiagnosticResult
from gatebench.diagnostics._refit import fitted_fold, fold_task
from gatebench.diagnostics.context import DiagnosticContext
from gatebench.trace import positions_at
from gatebench.types import Status

__all__ = ["CHECK"]

CRITERION = (
    "Refit headline fold 0 twice with the run's child seeds (cv.run_fold, and the diagnostics' "
    "shared refit); PASS if both refits' "
    "held-out scores and fold threshold are byte-identical to the recorded run and to each "
    "other; else FAIL."
)


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype=np.float64).tobytes()).hexdigest()[:16]


def run(ctx: DiagnosticContext) -> DiagnosticResult:
    """Refit and diff."""
    recorded = next((r for r in ctx.pass_results("strat") if r.fold == 0), None)
    if recorded is None:
        return CHECK.not_applicable("the run has no headline fold 0 to replay")
    task = fold_task(ctx, "strat", 0)
    first = cv.run_fold(task, ctx.texts, ctx.labels, ctx.sources, ctx.positions)
    shared = fitted_fold(ctx, "strat", 0)
    test = task.test_idx
    where = positions_at(ctx.positions, test)
    second = np.asarray(
        score_detector(shared.detector, list(ctx.texts[test]), where), dtype=np.float64
    )
    replays = [
        ("cv.run_fold", first.test_scores, first.threshold, first.fit_seconds),
        ("diagnostics refit", second, shared.threshold, shared.fit_seconds),
    ]
    ref = recorded.test_scores
    rows: list[dict[str, Any]] = []
    for name, scores, theta, seconds in replays:
        diff = np.abs(scores - ref)
        rows.append(
            {
                "refit": name,
                "identical": bool(scores.tobytes() == ref.tobytes()),
                "threshold_identical": theta == recorded.threshold,
                "n_differing": int((scores != ref).sum()),
                "max_abs_diff": float(diff.max()) if diff.size else 0.0,
                "sha256": _digest(scores),
                "fit_seconds": seconds,
            }
        )
    ok = all(r["identical"] and r["threshold_identical"] for r in rows)
    worst = max(rows, key=lambda r: r["max_abs_diff"])
    return CHECK.result(
        Status.PASS if ok else Status.FAIL,
        (
            f"2 refits of strat fold 0 reproduce the recorded {ref.size} scores and the fold "
            "threshold byte-for-byte"
            if ok
            else f"refit via {worst['refit']} differs from the run on {worst['n_differing']} of "
            f"{ref.size} rows (max |Δ| {worst['max_abs_diff']:.3g}): the detector is "
            "not deterministic under a fixed seed"
        ),
        statistic="byte-equal" if ok else f"max |Δ| {worst['max_abs_diff']:.2g}",
        statistics={
            "recorded_sha256": _digest(ref),
            "refits": rows,
            "n_rows": int(ref.size),
        },
    )


CHECK = Check("determinism_replay", "expensive", CRITERION, run)
