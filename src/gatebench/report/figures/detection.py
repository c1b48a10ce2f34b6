"""Detection figures: DET on probit axes (14) and maximum TPR per FPR budget (15).

Both are drawn from the stored threshold sweep (``result.sweep``), never from
the OOF table, so they show exactly the curve the operating point was read from.
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
    RED,
    new_figure,
    probit,
    probit_ticks,
    rate_axis,
)
from gatebench.report.fmt import is_num, pct
from gatebench.rundata import RunData

__all__ = ["DET", "MAX_TPR"]


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
