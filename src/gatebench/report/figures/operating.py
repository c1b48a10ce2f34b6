"""Operating-point figures: F1-vs-FPR sweep (4), prevalence ratio (5), θ_s vs θ_op (6),
DET on probit axes (14) and maximum TPR per FPR budget (15).

The sweep, DET and max-TPR figures are drawn from the stored threshold sweep
(``result.sweep``), never from the OOF table, so they show exactly the
curve the operating point was read from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from gatebench.report.figures._common import as_records, finite
from gatebench.report.figures._spec import Absent, FigureSpec, Prepared
from gatebench.report.figures._style import (
    BLUE,
    GREEN,
    GREY,
    ORANGE,
    RED,
    new_figure,
    probit,
    probit_ticks,
    rate_axis,
    rate_limits,
)
from gatebench.report.fmt import is_num, num, pct
from gatebench.rundata import RunData

__all__ = ["DET", "MAX_TPR", "PREVALENCE", "SWEEP", "THETA_S"]

#: Linear zone of the symlog FPR axis: FPR = 0 is a real, common value at
#: high thresholds, and a log axis would drop it.
SYMLOG_LINTHRESH = 1e-3


def _points(run: RunData) -> dict[str, Any]:
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
    data["points"] = _points(run)
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


# -- 14. DET on probit axes ---------------------------------------------------------------


def _published_points(run: RunData) -> list[dict[str, Any]]:
    """Published (system × dataset) points with both an FPR and a recall, if compared."""
    pareto = run.comparison("pareto")
    rows = as_records(pareto.get("per_dataset")) if isinstance(pareto, Mapping) else []
    return [
        r
        for r in rows
        if r.get("point") == "published" and is_num(r.get("fpr")) and is_num(r.get("recall"))
    ]


def _micro_fpr_recall(run: RunData) -> list[tuple[float, float]]:
    """The stored sweep's (micro FPR, micro recall) pairs where both are defined."""
    sweep = run.result.sweep
    if sweep is None:
        return []
    return [
        (x, r)
        for x, r in zip(sweep.micro_fpr, sweep.micro_recall, strict=False)
        if is_num(x) and is_num(r)
    ]


def draw_det(data: Mapping[str, Any]) -> Figure:
    """Detection error trade-off: miss rate vs false-alarm rate, both on probit axes.

    Parameters
    ----------
    data : mapping
        ``fpr``, ``fnr`` (pooled sweep); ``folds``: list of ``{fold, fpr, fnr}``;
        ``points``: ``{label: (fpr, fnr)}``; ``published``: list of ``{system, fpr, fnr}``.
    """
    fig = new_figure(5.2, 4.6)
    ax = fig.add_subplot()
    for curve in data.get("folds") or []:
        ax.plot(probit(curve["fpr"]), probit(curve["fnr"]), color=GREY, lw=0.8, alpha=0.5)
    if data.get("folds"):
        ax.plot([], [], color=GREY, lw=0.8, label="each held-out fold")
    ax.plot(probit(data["fpr"]), probit(data["fnr"]), color=BLUE, lw=1.8, label="pooled OOF")
    markers = {"headline": ("o", RED), "natural": ("s", GREEN)}
    for name, (x, y) in (data.get("points") or {}).items():
        m, c = markers.get(name, ("^", "black"))
        ax.plot(probit([x]), probit([y]), m, color=c, ms=7, zorder=5, label=f"{name} point")
    pub = data.get("published") or []
    if pub:
        ax.plot(
            probit([p["fpr"] for p in pub]),
            probit([p["fnr"] for p in pub]),
            "D",
            color="black",
            ms=4,
            label="published competitors",
        )
    probit_ticks(ax)
    ax.set_xlabel("false-positive rate (probit)")
    ax.set_ylabel("false-negative rate = 1 − recall (probit)")
    ax.set_title("Detection error trade-off")
    ax.legend(loc="upper right", frameon=False)
    return fig


def _extract_det(run: RunData) -> Prepared | Absent:
    pairs = [(x, 1 - r) for x, r in _micro_fpr_recall(run)]
    if not pairs:
        return Absent("result.json `sweep` has no micro FPR and recall to draw a DET curve from.")
    folds = [
        {"fold": c.fold, "fpr": c.fpr, "fnr": [1 - t for t in c.tpr]}
        for c in run.result.roc_per_fold
        if finite(c.fpr) and finite(c.tpr)
    ]
    points = {}
    for name, p in (
        ("headline", run.result.operating_point),
        ("natural", run.result.natural_point),
    ):
        if is_num(p.fpr) and is_num(p.recall):
            points[name] = (p.fpr, 1 - p.recall)
    published = [
        {"system": p["system"], "fpr": p["fpr"], "fnr": 1 - p["recall"]}
        for p in _published_points(run)
    ]
    data: dict[str, Any] = {
        "fpr": [p[0] for p in pairs],
        "fnr": [p[1] for p in pairs],
        "folds": folds,
        "points": points,
        "published": published,
    }
    alt = (
        "DET curve (miss rate against false-alarm rate on probit axes) of the pooled OOF "
        f"scores, with {len(folds)} per-fold curves in grey"
        + (f" and {len(published)} published competitor points." if published else ".")
    )
    caption = (
        "The detection error trade-off plots misses (1 − recall) against false alarms (FPR) "
        "on normal-quantile axes, which stretch the low-FPR corner where deployable detectors "
        "differ; lower-left is better and a good detector is close to a straight line. Blue: "
        "pooled OOF sweep; grey: each held-out fold; red circle: headline point; green "
        "square: natural point. Rates of exactly 0 or 1 are drawn at 0.01% / 99.99%."
        + (
            ""
            if published
            else " No published competitor reports both FPR and recall in "
            "this run's comparisons, so none is marked."
        )
    )
    return Prepared(data, alt, caption)


DET = FigureSpec(14, "det", "DET on probit axes", "paper Fig. 16", _extract_det, draw_det)


# -- 15. maximum TPR per FPR budget --------------------------------------------------------


def draw_max_tpr(data: Mapping[str, Any]) -> Figure:
    """The best recall reachable at each FPR budget, with its bootstrap band if stored.

    Parameters
    ----------
    data : mapping
        ``budgets``, ``tpr`` (equal length); optional ``low``/``high`` (band);
        ``tau``; ``published``: list of ``{system, fpr, recall}``.
    """
    fig = new_figure(6.0, 3.8)
    ax = fig.add_subplot()
    b = np.asarray(data["budgets"], float)
    ax.step(b, data["tpr"], where="post", color=BLUE, lw=1.8, label="max TPR (pooled OOF)")
    if data.get("low") is not None and data.get("high") is not None:
        ax.fill_between(
            b,
            data["low"],
            data["high"],
            step="post",
            color=BLUE,
            alpha=0.2,
            label="95% bootstrap band",
        )
    pub = data.get("published") or []
    if pub:
        ax.plot(
            [p["fpr"] for p in pub],
            [p["recall"] for p in pub],
            "o",
            color="black",
            ms=4,
            label="published competitors",
        )
    if is_num(data.get("tau")):
        ax.axvline(data["tau"], color=GREY, ls="--", lw=1, label=f"τ = {pct(data['tau'], 2)}")
    rate_axis(ax)
    ax.set_xlim(max(b.min(), 1e-4), 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("FPR budget (log)")
    ax.set_ylabel("maximum TPR with FPR ≤ budget")
    ax.set_title("Maximum TPR per FPR budget")
    ax.legend(loc="lower right", frameon=False)
    return fig


def _extract_max_tpr(run: RunData) -> Prepared | Absent:
    tau = run.result.operating_point.target_fpr
    published = [
        {"system": p["system"], "fpr": p["fpr"], "recall": p["recall"]}
        for p in _published_points(run)
    ]
    # The schema has no section for a bootstrapped max-TPR band yet, so the curve
    # is always read off the stored sweep and drawn without one.
    pairs = _micro_fpr_recall(run)
    if not pairs:
        return Absent("result.json has neither `max_tpr` nor a `sweep` with micro FPR and recall.")
    # A read-out of the stored curve, not a new metric: the upper envelope
    # of (FPR, recall) pairs, i.e. the best recall within each budget.
    budgets = np.unique(np.concatenate([np.geomspace(1e-4, 1, 81), [x for x, _ in pairs if x > 0]]))
    fprs = np.asarray([p[0] for p in pairs])
    recs = np.asarray([p[1] for p in pairs])
    tpr = [float(recs[fprs <= bb].max()) if (fprs <= bb).any() else 0.0 for bb in budgets]
    data: dict[str, Any] = {
        "budgets": budgets.tolist(),
        "tpr": tpr,
        "low": None,
        "high": None,
        "tau": tau,
        "published": published,
    }
    band = (
        "without a bootstrap band: result.json has no `max_tpr` band yet, so the "
        "curve is the upper envelope of the stored sweep"
    )
    at_tau = None
    if is_num(tau):
        ok = [t for bb, t in zip(data["budgets"], data["tpr"], strict=False) if bb <= tau]
        at_tau = ok[-1] if ok else None
    alt = "Step curve of the highest recall reachable at each FPR budget (log axis)" + (
        f"; at the budget τ = {pct(tau, 2)} it is {pct(at_tau)}." if at_tau is not None else "."
    )
    caption = (
        "For each FPR budget on the x axis, the highest recall any single global threshold "
        f"reaches without exceeding it, {band}. Read up from a budget to see what that "
        "false-alarm rate buys; the dashed line is τ. "
        + (
            "Black dots are published competitors that report FPR and recall on one row."
            if published
            else "No published competitor point is recorded in this run."
        )
    )
    return Prepared(data, alt, caption)


MAX_TPR = FigureSpec(
    15, "max-tpr", "Maximum TPR per FPR budget", "paper Fig. 17", _extract_max_tpr, draw_max_tpr
)
