"""Permutation importance on held-out rows (methodology §2.8).

Applies to detectors implementing
:class:`gatebench.diagnostics.protocols.PermutableDetector`. The headline
pass's fold-0 model is rebuilt with the run's seeds; on (at most
:data:`MAX_ROWS` of) its held-out rows each feature group or head is
permuted across rows and the drop in F1 at θ_op is recorded, averaged over
:data:`N_REPEATS` permutations. Rows are chunks (no pooling), each read at
its position, as the scores θ_op was placed on were, when the detector's
``score_permuted`` takes ``positions``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gatebench.detectors import score_detector, takes
from gatebench.diagnostics._base import Check, DiagnosticResult
from gatebench.diagnostics._refit import fitted_fold, probe_detector
from gatebench.diagnostics.context import DiagnosticContext
from gatebench.diagnostics.protocols import PermutableDetector
from gatebench.metrics.confusion import confusion_at
from gatebench.seeding import child_seed
from gatebench.trace import positions_at
from gatebench.types import Status

__all__ = ["CHECK"]

N_REPEATS = 3
MAX_ROWS = 3000
MIN_DROP = 0.01
SHORTCUT_WORDS = ("length", "len", "format")
CRITERION = (
    f"Held-out F1 drop at θ_op when one feature group/head is permuted (fold 0, ≤ {MAX_ROWS} "
    f"rows, mean of {N_REPEATS}). PASS if some group drops F1 by ≥ {MIN_DROP} and the top group "
    "is not a shortcut (length/format); else WARN. NOT_APPLICABLE unless the detector has "
    "feature_groups and score_permuted (PermutableDetector)."
)


def run(ctx: DiagnosticContext) -> DiagnosticResult:
    """Rank the detector's feature groups by held-out F1 drop."""
    if not isinstance(probe_detector(ctx.detector, ctx.seed), PermutableDetector):
        return CHECK.not_applicable(
            f"detector {ctx.detector.name!r} exposes no feature groups (it does not implement "
            "feature_groups + score_permuted, see gatebench.diagnostics.protocols)"
        )
    fitted = fitted_fold(ctx, "strat", 0)
    detector = fitted.detector
    assert isinstance(detector, PermutableDetector)  # the probe is the same class
    idx = fitted.task.test_idx
    if idx.size > MAX_ROWS:
        pick = np.random.default_rng(child_seed(ctx.seed, "diagnostics", "permutation", "rows"))
        idx = np.sort(pick.choice(idx, size=MAX_ROWS, replace=False))
    texts, y = list(ctx.texts[idx]), ctx.labels[idx]
    where = positions_at(ctx.positions, idx)
    if not takes(detector.score_permuted, "positions"):
        where = None  # its permuted scores read every row as a user turn: so must the base
    base = confusion_at(y, score_detector(detector, texts, where), ctx.theta_op).f1
    table: list[dict[str, Any]] = []
    for group in detector.feature_groups:
        drops = []
        for r in range(N_REPEATS):
            rng = np.random.default_rng(
                child_seed(ctx.seed, "diagnostics", "permutation", str(group), r)
            )
            s = np.asarray(_permuted(detector, texts, str(group), rng, where), dtype=float)
            drops.append(base - confusion_at(y, s, ctx.theta_op).f1)
        table.append(
            {"group": str(group), "f1_drop": float(np.mean(drops)), "sd": float(np.std(drops))}
        )
    table.sort(key=lambda r: -r["f1_drop"])
    top: dict[str, Any] = table[0] if table else {"group": "", "f1_drop": 0.0}
    shortcut = any(w in top["group"].lower() for w in SHORTCUT_WORDS)
    status = Status.PASS if top["f1_drop"] >= MIN_DROP and not shortcut else Status.WARN
    return CHECK.result(
        status,
        f"base F1 {base:.4f}; top group {top['group']!r} drops it by {top['f1_drop']:.4f}"
        + (" (a shortcut feature leads)" if shortcut else "")
        + ("" if top["f1_drop"] >= MIN_DROP else f"; no group moves F1 by ≥ {MIN_DROP}"),
        statistic=f"top {top['group']} ΔF1 {top['f1_drop']:.3f}",
        statistics={"base_f1": base, "by_group": table, "n_rows": int(idx.size)},
        figure={
            "features": [
                {"feature": r["group"], "drop": r["f1_drop"], "std": r["sd"]} for r in table
            ]
        },
    )


CHECK = Check("permutation_importance", "expensive", CRITERION, run)


def _permuted(
    detector: PermutableDetector,
    texts: list[str],
    group: str,
    rng: np.random.Generator,
    where: Sequence[str] | None,
) -> Any:
    if where is None:
        return detector.score_permuted(texts, group, rng)
    return detector.score_permuted(texts, group, rng, positions=where)  # type: ignore[call-arg]
