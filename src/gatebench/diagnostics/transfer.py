"""Threshold transferability σ_θ and prevalence ratio ρ_s (methodology §2.6).

Both are computed by :func:`gatebench.summary.summarise`; this check judges
them. σ_θ = std over sources of (θ_s − θ_op), θ_s the threshold that gives
the target FPR on that source alone. ρ_s = p_s(eval) / p_s(train).
"""

from __future__ import annotations

import numpy as np

from gatebench.diagnostics._base import Check, DiagnosticResult
from gatebench.diagnostics.context import DiagnosticContext
from gatebench.types import Status

__all__ = ["CHECK"]

PASS_SIGMA = 0.05
FAIL_SIGMA = 0.15
RHO_RANGE = (0.8, 1.25)
MIN_ROWS = 50
CRITERION = (
    f"σ_θ = std_s(θ_s − θ_op) over sources with benign rows. PASS if σ_θ ≤ {PASS_SIGMA} and "
    f"every source with ≥ {MIN_ROWS} prompts has ρ_s in [{RHO_RANGE[0]}, {RHO_RANGE[1]}]; "
    f"FAIL if σ_θ > {FAIL_SIGMA}; else WARN. Sources whose FPR at θ_op exceeds 2τ are listed."
)


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and bool(np.isfinite(value))


def run(ctx: DiagnosticContext) -> DiagnosticResult:
    """Judge the summary's transferability and prevalence-ratio numbers."""
    tr = ctx.numbers.transferability
    if not _finite(tr.get("sigma")):
        return CHECK.not_applicable("fewer than two sources have benign rows, so σ_θ is undefined")
    by_source = ctx.numbers.by_source
    # In memory an undefined ratio (all-benign source) is NaN, in result.json null.
    rho = {
        r.source: float(r.get("prevalence_ratio"))
        for r in by_source
        if _finite(r.get("prevalence_ratio")) and r.n >= MIN_ROWS
    }
    off = sorted(s for s, v in rho.items() if not RHO_RANGE[0] <= float(v) <= RHO_RANGE[1])
    over = sorted(
        r["source"] for r in tr.get("by_source", []) if (r.get("fpr_at_op") or 0) > 2 * ctx.fpr
    )
    sigma = float(tr["sigma"])
    if sigma > FAIL_SIGMA:
        status = Status.FAIL
    elif sigma <= PASS_SIGMA and not off:
        status = Status.PASS
    else:
        status = Status.WARN
    reason = f"σ_θ = {sigma:.4f} (mean offset {float(tr.get('mean_delta') or 0):+.4f})"
    if off:
        reason += f"; ρ_s outside {list(RHO_RANGE)} for: " + ", ".join(off)
    if over:
        reason += f"; FPR at θ_op > 2τ for {len(over)} source(s): " + ", ".join(over[:8])
    return CHECK.result(
        status,
        reason,
        statistic=f"σ_θ {sigma:.3f}",
        statistics={
            "sigma_theta": sigma,
            "mean_delta": tr.get("mean_delta"),
            "theta_op": tr.get("theta_op", ctx.theta_op),
            "prevalence_ratio": rho,
            "rho_out_of_range": off,
            "fpr_over_2tau": over,
            "undefined": tr.get("undefined", []),
        },
        figure={
            "source": [r["source"] for r in tr.get("by_source", [])],
            "theta_s": [r["theta_s"] for r in tr.get("by_source", [])],
            "theta_op": tr.get("theta_op", ctx.theta_op),
        },
    )


CHECK = Check("threshold_transferability", "cheap", CRITERION, run)
