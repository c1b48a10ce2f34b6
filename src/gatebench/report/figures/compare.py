"""Comparison figures (paper §4): every (system × dataset) point (16), the global Pareto
(17), benign-set FPR against every competitor (18) and the run's detector against Lakera
Guard at matched FPR (19).

They read ``result.comparisons`` as :func:`gatebench.compare.build_comparisons`
writes it: ``leaderboard`` (per dataset: ``ours``, ``ranking``, ``competitors``,
``lakera`` …), ``pareto.global`` (``ours``, ``competitors``) and ``pareto.per_dataset``.
Systems are named as the run and the published table spell them, never by a fixed label.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from gatebench.report.figures._common import as_records
from gatebench.report.figures._competitors import (
    is_lakera,
    lakera_name,
    leaderboard,
    pareto_tables,
    published_ranking,
)
from gatebench.report.figures._spec import DEFAULT_NAMES, Absent, FigureSpec, Prepared
from gatebench.report.figures._style import (
    BLUE,
    GREEN,
    GREY,
    ORANGE,
    RED,
    new_figure,
    rate_limits,
)
from gatebench.report.fmt import is_num, pct
from gatebench.rundata import RunData

__all__ = ["BENIGN_FPR", "LAKERA", "PARETO", "POINTS"]

BENIGN_SETS = ("notinject", "wildguard-benign")
#: FPR axis of Figures 16 and 17: symlog, linear below 1%.
LINTHRESH = 1e-2


def _missing(key: str) -> Absent:
    return Absent(
        f"result.json has no `comparisons.{key}` (published competitor numbers were not "
        "compared in this run; see `gatebench compare`)."
    )


# -- 16. every (system × dataset) operating point -----------------------------------------


def draw_points(data: Mapping[str, Any]) -> Figure:
    """Scatter of F1 against FPR, one point per (system × dataset).

    Parameters
    ----------
    data : mapping
        ``points``: records ``{system, dataset, f1, fpr, role}`` where role is one of
        ``headline``, ``natural``, ``lakera``, ``second``, ``other``; ``second`` names the
        second-most-published competitor; ``detector`` and ``lakera`` name those systems.
    """
    fig = new_figure(6.4, 4.6)
    ax = fig.add_subplot()
    det = data.get("detector") or DEFAULT_NAMES["detector"]
    style = {
        "other": (GREY, "o", 18, "other competitors"),
        "second": (ORANGE, "o", 24, data.get("second") or "second-most published"),
        "lakera": (RED, "D", 26, data.get("lakera") or DEFAULT_NAMES["competitor"]),
        "natural": (BLUE, "s", 30, f"{det}, natural point"),
        "headline": (GREEN, "o", 34, f"{det}, headline point"),
    }
    for role, (colour, marker, size, label) in style.items():
        pts = [p for p in data["points"] if p["role"] == role]
        if pts:
            ax.scatter(
                [p["fpr"] for p in pts],
                [p["f1"] for p in pts],
                s=size,
                c=colour,
                marker=marker,
                edgecolors="white",
                linewidths=0.5,
                label=label,
                zorder=3 if role in ("headline", "natural") else 2,
            )
    rate_limits(ax, linthresh=LINTHRESH)
    ax.set_xlabel("FPR (log scale; linear below 1%)")
    ax.set_ylabel("F1")
    ax.set_title("Every (system × dataset) operating point")
    fig.legend(loc="outside lower center", ncols=3, frameon=False)
    return fig


def _extract_points(run: RunData) -> Prepared | Absent:
    rows = [
        r
        for r in as_records(pareto_tables(run).get("per_dataset"))
        if is_num(r.get("f1")) and is_num(r.get("fpr"))
    ]
    if not rows:
        return _missing("pareto.per_dataset")
    theirs = [r for r in rows if r.get("point") == "published"]
    counts = Counter(str(r["system"]) for r in theirs if not is_lakera(r["system"]))
    second = counts.most_common(1)[0][0] if counts else None
    pts = []
    for r in rows:
        if r.get("point") in ("headline", "natural"):
            role = str(r["point"])
        elif is_lakera(r["system"]):
            role = "lakera"
        else:
            role = "second" if str(r["system"]) == second else "other"
        pts.append({**r, "role": role})
    n_systems = len({str(r["system"]) for r in theirs})
    det, lakera = run.detector, lakera_name(run)
    alt = (
        f"Scatter of F1 against FPR for {len(pts)} (system × dataset) operating points: "
        f"{det}'s per-dataset points and {len(theirs)} published points from "
        f"{n_systems} competitors."
    )
    caption = (
        "One point per (system × dataset) pair where F1 and FPR are both known (for "
        f"competitors: published on the same row). Green: {det} at the headline point; "
        f"blue: at the natural point; red: {lakera}; orange: "
        f"{second or 'the second-most-published competitor'}; grey: every other competitor. "
        "Up and left is better. Points come from different datasets, so compare the clouds; "
        "the per-dataset leaderboard pairs them."
        + (
            ""
            if theirs
            else " No competitor publishes F1 and FPR on the same row for a dataset of this "
            f"trace, so only {det}'s points are drawn."
        )
    )
    data = {"points": pts, "second": second, "detector": det, "lakera": lakera}
    return Prepared(data, alt, caption)


POINTS = FigureSpec(
    16,
    "system-dataset-points",
    "Every (system × dataset) operating point",
    "paper Fig. 18",
    _extract_points,
    draw_points,
)


# -- 17. global Pareto --------------------------------------------------------------------


def draw_pareto(data: Mapping[str, Any]) -> Figure:
    """Mean F1 against mean FPR per system, marker size by latency, labelled.

    Parameters
    ----------
    data : mapping
        ``systems``: records ``{system, f1, fpr, latency_ms, role}`` with role
        ``headline``, ``natural``, ``lakera``, ``multi`` or ``single``; ``detector``
        and ``lakera`` name those systems in the legend.
    """
    fig = new_figure(6.4, 4.8)
    ax = fig.add_subplot()
    colours = {
        "headline": GREEN,
        "natural": BLUE,
        "lakera": RED,
        "multi": GREY,
        "single": ORANGE,
    }
    lat = [s["latency_ms"] for s in data["systems"] if is_num(s.get("latency_ms"))]
    fallback = float(np.median(lat)) if lat else 100.0
    for s in data["systems"]:
        ms = s["latency_ms"] if is_num(s.get("latency_ms")) else fallback
        ax.scatter(
            [s["fpr"]],
            [s["f1"]],
            s=20 + 25 * np.log10(1 + ms),
            c=colours[s["role"]],
            edgecolors="black",
            linewidths=0.4,
            alpha=0.85,
            zorder=3,
        )
        # Names of points past 10% FPR go to their left, so none runs off the figure.
        right = s["fpr"] > 0.1
        ax.annotate(
            s["system"],
            (s["fpr"], s["f1"]),
            xytext=(-4 if right else 4, 3),
            textcoords="offset points",
            ha="right" if right else "left",
            fontsize=7,
        )
    det = data.get("detector") or DEFAULT_NAMES["detector"]
    for role, label in (
        ("headline", f"{det}, headline"),
        ("natural", f"{det}, natural"),
        ("lakera", data.get("lakera") or DEFAULT_NAMES["competitor"]),
        ("multi", "≥ 2 benchmarks"),
        ("single", "1 benchmark"),
    ):
        ax.scatter([], [], c=colours[role], label=label)
    rate_limits(ax, linthresh=LINTHRESH)
    ax.set_xlabel("mean FPR (log scale; linear below 1%)")
    ax.set_ylabel("mean F1")
    ax.set_title("Global Pareto (marker area grows with latency)")
    fig.legend(loc="outside lower center", ncols=3, frameon=False)
    return fig


def _extract_pareto(run: RunData) -> Prepared | Absent:
    glob = pareto_tables(run).get("global") or {}
    comps = [
        r
        for r in as_records(glob.get("competitors"))
        if is_num(r.get("f1")) and is_num(r.get("fpr"))
    ]
    if not comps:
        return _missing("pareto.global.competitors")
    systems = []
    for r in comps:
        name = str(r.get("system"))
        n_ds = r.get("n_datasets") or 1
        role = "lakera" if is_lakera(name) else ("multi" if n_ds >= 2 else "single")
        systems.append(
            {
                "system": f"{name} ({n_ds})",
                "f1": r["f1"],
                "fpr": r["fpr"],
                "latency_ms": r.get("mean_latency_ms"),
                "role": role,
            }
        )
    for r in as_records(glob.get("ours")):
        if is_num(r.get("f1")) and is_num(r.get("fpr")):
            point = "natural" if r.get("point") == "natural" else "headline"
            systems.append(
                {
                    "system": f"{r.get('system')} ({point})",
                    "f1": r["f1"],
                    "fpr": r["fpr"],
                    "latency_ms": None,
                    "role": point,
                }
            )
    alt = f"Scatter of mean F1 against mean FPR for {len(systems)} systems, labelled by name."
    note = str(glob.get("note") or "")
    det, lakera = run.detector, lakera_name(run)
    caption = (
        "One point per system: F1 and FPR averaged within each benchmark, then across "
        "benchmarks, over third-party rows that publish both on the same row (the number in "
        f"brackets counts benchmarks). Green / blue: {det} at the headline / natural "
        f"point; red: {lakera}; grey: competitors on two or more benchmarks; orange: "
        "single-benchmark competitors. Marker area grows with published mean latency (the "
        f"median where none is published, and for {det}). Up and left is better."
        + (f" Note: {note}." if note else "")
    )
    return Prepared({"systems": systems, "detector": det, "lakera": lakera}, alt, caption)


PARETO = FigureSpec(
    17, "global-pareto", "Global Pareto", "paper Fig. 15", _extract_pareto, draw_pareto
)


# -- 18. NotInject and WildGuard-benign FPR -----------------------------------------------


def draw_benign_fpr(data: Mapping[str, Any]) -> Figure:
    """Per benign set, horizontal FPR bars: ours blue, competitors green (worse) or red.

    Parameters
    ----------
    data : mapping
        ``panels``: list of ``{dataset, ours, rows}`` where rows are ``{system, fpr}``
        (system labels carry their * for self-evaluations); ``ours`` is our FPR at θ_op;
        ``detector`` names our bar.
    """
    panels = data["panels"]
    height = sum(len(p["rows"]) + 2 for p in panels)
    fig = new_figure(6.4, 0.9 + 0.26 * height)
    axes = fig.subplots(
        len(panels), 1, squeeze=False, height_ratios=[len(p["rows"]) + 1 for p in panels]
    )[:, 0]
    for ax, panel in zip(axes, panels, strict=True):
        rows = sorted(panel["rows"], key=lambda r: r["fpr"])
        names = [data.get("detector") or DEFAULT_NAMES["detector"]] + [r["system"] for r in rows]
        vals = [panel["ours"]] + [r["fpr"] for r in rows]
        colours = [BLUE] + [GREEN if r["fpr"] > panel["ours"] else RED for r in rows]
        y = np.arange(len(vals))
        ax.barh(y, vals, color=colours, height=0.6)
        # Values in the tick labels: one text per bar keeps layout cheap.
        names = [f"{n}  {100 * v:.1f}%" for n, v in zip(names, vals, strict=True)]
        ax.set_yticks(y, names)
        ax.invert_yaxis()
        ax.set_xlim(0, min(1.0, max(vals) * 1.25 + 0.02))
        ax.set_title(f"{panel['dataset']}: false-positive rate (lower is better)")
    for ax in axes:
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    axes[-1].set_xlabel("FPR on benign prompts")
    return fig


def _benign_panel(run: RunData, row: Mapping[str, Any]) -> dict[str, Any] | None:
    ours = {r.source: r.get("fpr") for r in run.result.by_source}
    mine = ours.get(str(row.get("dataset")))
    rows = []
    for c in published_ranking(row):
        v, metric = c["value"], str(c.get("metric"))
        label = str(c.get("label") or c.get("system"))
        # On an all-benign set ODA (or accuracy) is 1 − FPR: the same number, restated.
        if metric == "fpr":
            rows.append({"system": label, "fpr": v})
        elif metric in ("oda", "accuracy"):
            rows.append({"system": label, "fpr": 1 - v})
    if not rows or not is_num(mine):
        return None
    return {"dataset": str(row["dataset"]), "ours": mine, "rows": rows}


def _extract_benign_fpr(run: RunData) -> Prepared | Absent:
    board = leaderboard(run)
    if not board:
        return _missing("leaderboard")
    panels = []
    for row in board:
        if row.get("dataset") in BENIGN_SETS:
            panel = _benign_panel(run, row)
            if panel is not None:
                panels.append(panel)
    if not panels:
        return Absent(
            "neither NotInject nor WildGuard-benign has both our FPR (the source is in the "
            "trace) and a published competitor FPR or over-defence accuracy."
        )
    missing = [d for d in BENIGN_SETS if d not in {p["dataset"] for p in panels}]
    det = run.detector
    alt = (
        "; ".join(
            f"{p['dataset']}: {det}'s FPR {pct(p['ours'])} against {len(p['rows'])} "
            "published competitor values"
            for p in panels
        )
        + "."
    )
    caption = (
        f"False-positive rate on all-benign over-defence sets, lower is better. Blue: {det} "
        "at the global headline threshold; green: competitors with a higher FPR than ours; "
        "red: lower. One bar per system: where several sources publish a system's number, "
        "its best is drawn (as the leaderboard ranks it). A published over-defence accuracy "
        "is shown as 1 − accuracy. * = self-evaluation (an upper bound), its own bar."
        + (
            f" Not drawn (not in this trace or nothing published): {', '.join(missing)}."
            if missing
            else ""
        )
    )
    return Prepared({"panels": panels, "detector": det}, alt, caption)


BENIGN_FPR = FigureSpec(
    18,
    "benign-fpr",
    "NotInject and WildGuard-benign FPR vs competitors",
    "paper Figs. 19-20",
    _extract_benign_fpr,
    draw_benign_fpr,
)


# -- 19. the run's detector vs Lakera Guard at matched FPR --------------------------------


def draw_lakera(data: Mapping[str, Any]) -> Figure:
    """Paired bars per dataset: the run's detector (blue, with its CI) and Lakera Guard (red).

    Parameters
    ----------
    data : mapping
        ``rows``: records ``{dataset, metric, ours, low, high, lakera, mark}``;
        ``detector`` and ``lakera``: the two systems' names.
    """
    det = data.get("detector") or DEFAULT_NAMES["detector"]
    lakera = data.get("lakera") or DEFAULT_NAMES["competitor"]
    rows = data["rows"]
    fig = new_figure(6.4, 1.2 + 0.5 * len(rows))
    ax = fig.add_subplot()
    y = np.arange(len(rows))
    ours = np.asarray([r["ours"] for r in rows], float)
    lak = np.asarray([r["lakera"] for r in rows], float)
    err = np.asarray(
        [
            [r["ours"] - r["low"], r["high"] - r["ours"]]
            if is_num(r.get("low")) and is_num(r.get("high"))
            else [0.0, 0.0]
            for r in rows
        ]
    ).T
    ax.barh(
        y - 0.2,
        ours,
        height=0.38,
        color=BLUE,
        xerr=err,
        ecolor="black",
        error_kw={"lw": 0.8, "capsize": 2},
        label=f"{det} (95% CI)",
    )
    ax.barh(y + 0.2, lak, height=0.38, color=RED, label=f"{lakera} (published)")
    for i in range(len(rows)):
        ax.annotate(
            f"{100 * ours[i]:.1f}",
            (ours[i], i - 0.2),
            xytext=(6, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
        )
        ax.annotate(
            f"{100 * lak[i]:.1f}",
            (lak[i], i + 0.2),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
        )
    ax.set_yticks(y, [f"{r['dataset']} ({r['metric']}){r['mark']}" for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, 1.12)
    ax.set_xlabel("primary metric")
    ax.set_title(f"{det} vs {lakera} at matched FPR")
    fig.legend(loc="outside lower center", ncols=2, frameon=False)
    return fig


def _extract_lakera(run: RunData) -> Prepared | Absent:
    rows = []
    for r in leaderboard(run):
        lk = r.get("lakera") or {}
        ours = lk.get("ours") or {}
        if is_num(ours.get("value")) and is_num(lk.get("their_value")):
            rows.append(
                {
                    "dataset": str(r.get("dataset")),
                    "metric": str(ours.get("metric") or r.get("primary_metric") or ""),
                    "ours": ours["value"],
                    "low": ours.get("low"),
                    "high": ours.get("high"),
                    "lakera": lk["their_value"],
                    "their_fpr": lk.get("their_fpr"),
                    "mark": str(lk.get("mark") or ""),
                }
            )
    if not rows:
        return _missing("leaderboard[].lakera") if leaderboard(run) else _missing("leaderboard")
    true_match = [f"{r['dataset']} (FPR {pct(r['their_fpr'], 1)})" for r in rows if not r["mark"]]
    dagger = [r["dataset"] for r in rows if r["mark"] == "†"]
    ddagger = [r["dataset"] for r in rows if r["mark"] == "‡"]
    ahead = sum(r["ours"] >= r["lakera"] for r in rows if not r["mark"])
    det, lakera = run.detector, lakera_name(run)
    alt = (
        f"Paired bars for {len(rows)} datasets, {det} against {lakera}; {det} is at "
        f"or above {lakera} on {ahead} of {len(true_match)} true matched-FPR rows."
    )
    caption = (
        f"Per dataset, {det}'s primary metric (blue, with its 95% interval) with the "
        f"threshold re-tuned to {lakera}'s published FPR on that dataset, next to {lakera}'s "
        "published value (red). † : the primary metric is FPR or ODA, where matching FPR "
        f"collapses the comparison, so {det}'s value is at the global headline threshold"
        + (f" ({', '.join(dagger)})" if dagger else "")
        + f". ‡ : {lakera} published no FPR, so {det}'s threshold is matched to a 1% FPR "
        "surrogate"
        + (f" ({', '.join(ddagger)})" if ddagger else "")
        + f". True matched-FPR rows: {', '.join(true_match) or 'none'}. Datasets where "
        f"{lakera} publishes nothing are absent, not counted as wins."
    )
    return Prepared({"rows": rows, "detector": det, "lakera": lakera}, alt, caption)


LAKERA = FigureSpec(
    19,
    "lakera",
    "{detector} vs {competitor} at matched FPR",
    "paper Fig. 21",
    _extract_lakera,
    draw_lakera,
)
