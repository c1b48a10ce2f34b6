"""Operating-point figures: F1-vs-FPR sweep (4), prevalence ratio (5), θ_s vs θ_op (6).

The sweep is drawn from the stored threshold sweep (``result.sweep``), never
from the OOF table, so it shows exactly the curve the operating point was read
from. :mod:`gatebench.report.figures.detection` draws the DET and max-TPR
figures from the same sweep.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from gatebench.report.figures._common import as_records
from gatebench.report.figures._spec import Absent, FigureSpec, Prepared
from gatebench.report.figures._style import (
    BLUE,
    GREY,
    ORANGE,
    RED,
    new_figure,
    rate_limits,
)
from gatebench.report.fmt import is_num, num, pct
from gatebench.rundata import RunData

__all__ = ["PREVALENCE", "SWEEP", "SYMLOG_LINTHRESH", "THETA_S", "points"]

#: Linear zone of the symlog FPR axis: FPR = 0 is a real, common value at
#: high thresholds, and a log axis would drop it.
SYMLOG_LINTHRESH = 1e-3


def points(run: RunData) -> dict[str, Any]:
    """Headline and natural points, micro and macro, as stored (None where undefined)."""
    out: dict[str, Any] = {}
    for name in ("headline", "natural"):
        m = run.result.metrics.get(name)
        if m is None:
            continue
        for agg, v in (("micro", m.micro), ("macro", m.macro)):
            if is_num(v.fpr) and is_num(v.f1):
                out[f"{name}_{agg}"] = (v.fpr, v.f1)
        out[f"{name}_threshold"] = m.threshold
    return out


# -- 4. F1 vs FPR sweep -------------------------------------------------------------------


def draw_sweep(data: Mapping[str, Any]) -> Figure:
    """Micro (blue) and macro (orange) F1 against FPR as the global threshold sweeps.

    Parameters
    ----------
    data : mapping
        ``micro_fpr, micro_f1, macro_fpr, macro_f1`` (sequences over thresholds);
        ``points``: ``{headline_micro: (fpr, f1), ...}``; ``tau``: the FPR cap.
    """
    fig = new_figure(6.4, 4.0)
    ax = fig.add_subplot()
    ax.plot(data["micro_fpr"], data["micro_f1"], color=BLUE, lw=1.6, label="micro F1")
    ax.plot(data["macro_fpr"], data["macro_f1"], color=ORANGE, lw=1.6, label="macro F1")
    pts = data.get("points") or {}
    style = {"headline": ("o", "headline (FPR ≤ τ)"), "natural": ("s", "natural (max F1)")}
    for name, (marker, label) in style.items():
        for agg, colour in (("micro", BLUE), ("macro", ORANGE)):
            if f"{name}_{agg}" in pts:
                x, y = pts[f"{name}_{agg}"]
                ax.plot(
                    [x],
                    [y],
                    marker,
                    ms=7,
                    mfc="white",
                    mec=colour,
                    mew=2,
                    zorder=5,
                    label=f"{label}, {agg}",
                )
    if is_num(data.get("tau")):
        ax.axvline(data["tau"], color=GREY, ls="--", lw=1, label=f"τ = {pct(data['tau'], 2)}")
    rate_limits(ax, linthresh=SYMLOG_LINTHRESH)
    ax.set_xlabel("false-positive rate (log scale; linear below 0.1% so that 0 shows)")
    ax.set_ylabel("F1")
    ax.set_title("F1 vs FPR as the global threshold sweeps")
    fig.legend(loc="outside lower center", frameon=False, ncols=3)
    return fig


def _extract_sweep(run: RunData) -> Prepared | Absent:
    sweep = run.result.sweep
    if sweep is None or not all((sweep.micro_fpr, sweep.micro_f1, sweep.macro_fpr, sweep.macro_f1)):
        return Absent("result.json has no `sweep` (micro/macro F1 and FPR over thresholds).")
    # Undefined F1 (no positives flagged) is stored as null: drop those grid points.
    data: dict[str, Any] = {}
    for agg, fprs, f1s in (
        ("micro", sweep.micro_fpr, sweep.micro_f1),
        ("macro", sweep.macro_fpr, sweep.macro_f1),
    ):
        pairs = [(x, y) for x, y in zip(fprs, f1s, strict=False) if is_num(x) and is_num(y)]
        data[f"{agg}_fpr"] = [p[0] for p in pairs]
        data[f"{agg}_f1"] = [p[1] for p in pairs]
    data["points"] = points(run)
    data["tau"] = run.result.operating_point.target_fpr
    pts = data["points"]
    head = pts.get("headline_micro")
    nat = pts.get("natural_micro")
    alt = (
        f"Micro and macro F1 against FPR over {len(sweep.thresholds)} thresholds."
        + (f" Headline point: FPR {pct(head[0], 2)}, micro F1 {pct(head[1])}." if head else "")
        + (f" Natural point: FPR {pct(nat[0], 2)}, micro F1 {pct(nat[1])}." if nat else "")
    )
    caption = (
        "Each curve sweeps one global threshold θ over the OOF scores of the headline pass. "
        "Micro (blue) pools every source's confusion counts, so the big sources dominate it; "
        "macro (orange) averages per-source F1 and FPR, so each source counts once. A gap "
        "between the curves at the same FPR is per-source skew: macro below micro means the "
        "model leans on a few large sources. Circles mark the headline point (max F1 with "
        "pooled FPR ≤ τ, dashed line), squares the natural point (unconstrained max F1), "
        "each on both curves. The FPR axis is logarithmic above 0.1% and linear below, so "
        "FPR = 0 stays visible."
    )
    return Prepared(data, alt, caption)


SWEEP = FigureSpec(
    4,
    "f1-fpr-sweep",
    "F1 vs FPR sweep, micro and macro",
    "paper Fig. 4",
    _extract_sweep,
    draw_sweep,
)


# -- 5. prevalence ratio per source -------------------------------------------------------


def draw_prevalence(data: Mapping[str, Any]) -> Figure:
    """Horizontal bar of ρ_s = p_s(eval) / p_s(train) per source, reference line at 1.

    Parameters
    ----------
    data : mapping
        ``sources`` and ``ratio`` (None where undefined), equal length.
    """
    names, ratio = list(data["sources"]), list(data["ratio"])
    fig = new_figure(6.0, 0.8 + 0.28 * len(names))
    ax = fig.add_subplot()
    y = np.arange(len(names))
    # Lollipops, not bars: stratified folds put most ratios within 1e-3 of 1,
    # where a bar from 1 would be invisible. Values go into the tick labels:
    # one text per row instead of two keeps the figure cheap to lay out.
    for colour, near in ((BLUE, True), (ORANGE, False)):
        pick = [(i, r) for i, r in enumerate(ratio) if is_num(r) and (abs(r - 1) <= 0.1) == near]
        if pick:
            yy, rr = [p[0] for p in pick], [p[1] for p in pick]
            ax.hlines(yy, 1, rr, color=colour, lw=1.5)
            ax.plot(rr, yy, "o", color=colour, ms=6, ls="none")
    names = [
        f"{n}  ({r:.3f})" if is_num(r) else f"{n}  (n/a)" for n, r in zip(names, ratio, strict=True)
    ]
    ax.axvline(1, color="black", lw=1)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    finite_r = [r for r in ratio if is_num(r)]
    span = max([0.15, *(abs(r - 1) for r in finite_r)]) * 1.3
    ax.set_xlim(1 - span, 1 + span)
    ax.set_xlabel(r"$\rho_s$ = attack rate evaluated / attack rate in training")
    ax.set_title("Prevalence ratio per source")
    return fig


def _extract_prevalence(run: RunData) -> Prepared | Absent:
    rows = run.result.by_source
    # ρ_s is an extra column of the per-source table, absent where the run did not compute it.
    if not any("prevalence_ratio" in (r.model_extra or {}) for r in rows):
        return Absent("result.json `by_source` has no `prevalence_ratio`.")
    names = [r.source for r in rows]
    ratio = [r.get("prevalence_ratio") for r in rows]
    defined = [r for r in ratio if is_num(r)]
    if not defined:
        return Absent("ρ_s is undefined for every source (no source has attacks in training).")
    worst = max(defined, key=lambda r: abs(r - 1))
    alt = (
        f"Bar chart of the prevalence ratio of {len(names)} sources around 1; the furthest "
        f"from 1 is {worst:.3f}; {len(ratio) - len(defined)} undefined."
    )
    caption = (
        "ρ_s compares each source's attack rate in the evaluated rows with its rate in the "
        "training folds (averaged over folds). Stratified folds keep ρ_s ≈ 1 (blue, within "
        "±0.1); a ρ_s far from 1 (orange) means the evaluation was re-balanced for that source "
        "in a way that flatters or punishes its per-source and macro numbers. All-benign "
        "sources have no training attacks, so ρ_s is undefined there (n/a)."
    )
    return Prepared({"sources": names, "ratio": ratio}, alt, caption)


PREVALENCE = FigureSpec(
    5,
    "prevalence-ratio",
    "Prevalence ratio ρ_s per source",
    "paper Fig. 5",
    _extract_prevalence,
    draw_prevalence,
)


# -- 6. per-source θ_s vs θ_op ------------------------------------------------------------


def draw_theta_s(data: Mapping[str, Any]) -> Figure:
    """One dot per source at its matched-FPR threshold θ_s, a line at the global θ_op.

    Parameters
    ----------
    data : mapping
        ``sources``, ``theta_s`` (equal length), ``theta_op``, ``sigma``, ``target_fpr``.
    """
    names, theta = list(data["sources"]), np.asarray(data["theta_s"], float)
    fig = new_figure(6.0, 1.0 + 0.3 * len(names))
    ax = fig.add_subplot()
    y = np.arange(len(names))
    op = float(data["theta_op"])
    ax.hlines(y, op, theta, color=GREY, lw=1)
    ax.plot(theta, y, "o", color=BLUE, ms=6, label=r"$\theta_s$ (FPR-matched on the source)")
    ax.axvline(op, color=RED, lw=1.5, label=rf"$\theta_{{\mathrm{{op}}}}$ = {op:.3f}")
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    lo, hi = min(theta.min(), op), max(theta.max(), op)
    pad = max(0.05, 0.1 * (hi - lo))
    # Not clamped to [0, 1]: a source at θ_s = 0 or 1 must show its whole dot.
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_xlabel("threshold")
    sigma = data.get("sigma")
    ax.set_title(
        r"Per-source $\theta_s$ vs $\theta_{\mathrm{op}}$"
        + (rf" ($\sigma_\theta$ = {sigma:.3f})" if is_num(sigma) else "")
    )
    fig.legend(loc="outside lower center", ncols=2, frameon=False)
    return fig


def _extract_theta_s(run: RunData) -> Prepared | Absent:
    tr = run.result.transferability
    rows = [r for r in as_records(tr.get("by_source")) if is_num(r.get("theta_s"))]
    if not rows or not is_num(tr.get("theta_op")):
        return Absent(
            "result.json `transferability` has no per-source θ_s (no source has "
            "benign rows to match the FPR on)."
        )
    undefined = list(tr.get("undefined") or [])
    data: dict[str, Any] = {
        "sources": [str(r["source"]) for r in rows],
        "theta_s": [r["theta_s"] for r in rows],
        "theta_op": tr["theta_op"],
        "sigma": tr.get("sigma"),
        "target_fpr": tr.get("target_fpr"),
    }
    alt = (
        f"Dot plot of the FPR-matched threshold of {len(rows)} sources against the global "
        f"threshold {num(tr['theta_op'])}; spread σ_θ = {num(tr.get('sigma'))}."
    )
    caption = (
        f"For each source, θ_s is the threshold that gives the same target FPR "
        f"({pct(tr.get('target_fpr'), 2)}) on that source's benign rows alone; the red line is "
        "the single global θ_op. Dots close to the line (small σ_θ) mean one threshold "
        "transfers across sources; a dot far away marks a source for which the global "
        "threshold is mis-calibrated."
        + (f" Not shown (no benign rows): {', '.join(undefined)}." if undefined else "")
    )
    return Prepared(data, alt, caption)


THETA_S = FigureSpec(
    6, "theta-s", "Per-source θ_s vs θ_op", "paper Fig. 6", _extract_theta_s, draw_theta_s
)
