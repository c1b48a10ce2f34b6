"""Leakage premium: ΔF1 = F1(strat) − F1(grouped), with a paired bootstrap interval.

Both passes score every prompt, so one resample of prompts (stratified by
source × label, the headline scheme) is applied to both passes at once and
the difference is taken inside each resample. Each pass keeps its own
operating point (max F1 s.t. FPR ≤ τ on its own OOF scores), held fixed
across resamples: the interval is conditional on the chosen thresholds.
"""

from __future__ import annotations

import numpy as np

from gatebench.diagnostics._base import Check, DiagnosticResult
from gatebench.diagnostics.context import DiagnosticContext
from gatebench.metrics.bootstrap import percentile_interval, resample_counts
from gatebench.seeding import child_sequence
from gatebench.types import Status

__all__ = ["CHECK"]

CHUNK = 500
PASS_AT = 0.01
FAIL_LOW = 0.03
CRITERION = (
    f"ΔF1 = F1(strat) − F1(sgk) at each pass's own θ_op (max F1 s.t. FPR ≤ τ), paired "
    f"bootstrap 95% CI over prompts. PASS if ΔF1 ≤ {PASS_AT:.2f} or the CI contains 0; "
    f"FAIL if the CI's lower end > {FAIL_LOW:.2f}; else WARN. NOT_APPLICABLE without a grouped "
    "pass or when the group key collapses to row identity."
)


def _f1_replicates(w: np.ndarray, y: np.ndarray, pred: np.ndarray) -> np.ndarray:
    tp = w @ (pred & (y == 1)).astype(w.dtype)
    fp = w @ (pred & (y == 0)).astype(w.dtype)
    fn = w @ (~pred & (y == 1)).astype(w.dtype)
    den = 2 * tp + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, 2 * tp / np.maximum(den, 1), np.nan)


def run(ctx: DiagnosticContext) -> DiagnosticResult:
    """Compute the premium and its interval; see :data:`CRITERION`."""
    if "sgk" not in ctx.folds or ctx.groups is None:
        return CHECK.not_applicable("the grouped (sgk) pass was not run, so there is no ΔF1")
    if ctx.groups.stats.degenerate:
        return CHECK.not_applicable(ctx.groups.stats.note, degenerate=True)
    by_pass = {
        p: part.set_index("sample_id").sort_index()
        for p, part in ctx.prompts.groupby("pass")
        if p in ("strat", "sgk")
    }
    strat, sgk = by_pass["strat"], by_pass["sgk"].reindex(by_pass["strat"].index)
    y = strat["label"].to_numpy(dtype=np.int64)
    theta = {p: ctx.numbers.passes[p].headline.threshold for p in ("strat", "sgk")}
    pred = {
        "strat": strat["score"].to_numpy() >= theta["strat"],
        "sgk": sgk["score"].to_numpy() >= theta["sgk"],
    }
    ones = np.ones((1, y.size), dtype=np.int64)
    f1 = {p: float(_f1_replicates(ones, y, pred[p])[0]) for p in pred}
    delta = f1["strat"] - f1["sgk"]
    parts = []
    # Chunks bound memory (B x N int32 weights) whatever B is; each has its own child seed.
    for i, start in enumerate(range(0, ctx.n_resamples, CHUNK)):
        w = resample_counts(
            y,
            strat["score"].to_numpy(),
            strat["source"].to_numpy(),
            seed=child_sequence(ctx.seed, "diagnostics", "leakage", i),
            n_resamples=min(CHUNK, ctx.n_resamples - start),
        )
        parts.append(_f1_replicates(w, y, pred["strat"]) - _f1_replicates(w, y, pred["sgk"]))
    reps = np.concatenate(parts)
    low, high, n_undef = percentile_interval(reps, 0.95)
    if delta <= PASS_AT or low <= 0.0:
        status, why = Status.PASS, "no premium beyond noise"
    elif low > FAIL_LOW:
        status, why = Status.FAIL, f"the premium is above {FAIL_LOW:.2f} with 95% confidence"
    else:
        status, why = Status.WARN, "a premium above 0 but not clearly above 3 pp"
    counts, edges = np.histogram(reps[~np.isnan(reps)], bins=30)
    return CHECK.result(
        status,
        f"ΔF1 = {delta:+.4f} [{low:+.4f}, {high:+.4f}]: {why}. {ctx.groups.stats.note}",
        statistic=f"ΔF1 {100 * delta:+.2f} pp [{100 * low:+.2f}, {100 * high:+.2f}]",
        statistics={
            "delta_f1": delta,
            "ci_low": low,
            "ci_high": high,
            "level": 0.95,
            "n_resamples": ctx.n_resamples,
            "n_undefined": n_undef,
            "f1": f1,
            "thresholds": theta,
            "resampling": "paired, stratified by source x label, thresholds fixed",
        },
        figure={"f1": f1, "hist_counts": counts, "hist_edges": edges, "delta_f1": delta},
    )


CHECK = Check("leakage_premium", "cheap", CRITERION, run)
