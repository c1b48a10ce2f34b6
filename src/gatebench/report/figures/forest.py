"""Per-dataset forest plot (13): the primary metric of every source at θ_op with tapered
50/80/95/99% bootstrap bands, grouped by family, with published competitors as markers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matplotlib.figure import Figure

from gatebench.report.figures._common import (
    as_records,
    estimate_ticks,
    grouped_layout,
    label_groups,
)
from gatebench.report.figures._competitors import is_lakera, lakera_name, published_ranking
from gatebench.report.figures._spec import DEFAULT_NAMES, Absent, FigureSpec, Prepared
from gatebench.report.figures._style import BLUE, GREY, RED, new_figure
from gatebench.report.fmt import is_num
from gatebench.rundata import RunData

__all__ = ["FOREST", "competitor_rows"]

#: Band level -> (line width, opacity): wide and faint at 99%, narrow core dark at 50%.
BANDS = ((99, 2.0, 0.25), (95, 4.0, 0.4), (80, 6.5, 0.6), (50, 9.0, 0.95))
FAMILY_ORDER = ("balanced", "all_attack", "all_benign")


def draw_forest(data: Mapping[str, Any]) -> Figure:
    """Forest plot of per-source estimates with tapered CI bands and competitor markers.

    Parameters
    ----------
    data : mapping
        ``rows``: records ``{label, family, estimate, low_50 .. high_99}``, grouped by
        family in drawing order; ``competitors``: records ``{row, value, lakera,
        self_eval}`` where ``row`` indexes ``rows``; ``lakera_name``: the legend's name
        for Lakera Guard.
    """
    rows = data["rows"]
    ys, headers = grouped_layout(rows, "family")
    fig = new_figure(7.2, 1.3 + 0.3 * (len(ys) + len(headers)))
    ax = fig.add_subplot()
    # One collection per band level (not one line per row and level): same
    # picture, a quarter of the artists to lay out and write.
    for level, width, alpha in BANDS:
        keep = [
            (y, r[f"low_{level}"], r[f"high_{level}"])
            for y, r in zip(ys, rows, strict=True)
            if is_num(r.get(f"low_{level}")) and is_num(r.get(f"high_{level}"))
        ]
        if keep:
            yy, lo, hi = zip(*keep, strict=True)
            ax.hlines(yy, lo, hi, color=BLUE, lw=width, alpha=alpha, capstyle="butt")
    estimate_ticks(ax, ys, rows)
    comps = data.get("competitors") or []
    for c in comps:
        colour, marker = (RED, "D") if c["lakera"] else (GREY, "o")
        y = ys[c["row"]]
        ax.plot(
            [c["value"]],
            [y],
            marker,
            color=colour,
            ms=5 if c["lakera"] else 4,
            mec="white",
            mew=0.5,
            zorder=5,
        )
        if c["self_eval"]:
            ax.annotate(
                "*",
                (c["value"], y),
                xytext=(3, 1),
                textcoords="offset points",
                fontsize=9,
                color=colour,
            )
    # Family header rows: a bold tick label on an empty row, so the grouping
    # reads like the paper's and never collides with data or the title.
    label_groups(
        ax,
        ys,
        headers,
        [r["label"] for r in rows],
        [h[1].replace("_", "-").upper() for h in headers],
    )
    # A little room either side of [0, 1]: a competitor at 0.3% or 100% is drawn whole.
    ax.set_xlim(-0.03, 1.05)
    ax.set_xlabel(r"primary metric at $\theta_{\mathrm{op}}$ (F1, recall, or ODA = 1 − FPR)")
    ax.set_title(r"Primary metric per dataset at $\theta_{\mathrm{op}}$")
    handles = [
        ax.plot([], [], color=BLUE, lw=w, alpha=a, label=f"{lvl}% CI")[0]
        for lvl, w, a in BANDS[::-1]
    ]
    if comps:
        lakera = data.get("lakera_name") or DEFAULT_NAMES["competitor"]
        handles.append(ax.plot([], [], "D", color=RED, label=lakera)[0])
        handles.append(ax.plot([], [], "o", color=GREY, label="other published (* self-eval)")[0])
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=min(len(handles), 4 if comps else 6),
        frameon=False,
    )
    return fig


def competitor_rows(run: RunData) -> dict[str, list[dict[str, Any]]]:
    """Dataset -> one published value per system on its primary metric (the leaderboard's)."""
    return {
        str(row.get("dataset")): published_ranking(row)
        for row in as_records(run.comparison("leaderboard"))
    }


def _extract_forest(run: RunData) -> Prepared | Absent:
    # The estimate and its bands are extra columns of the per-source table; plain
    # dicts, because each row gets its family and label added for the drawer.
    rows = [
        r.model_dump()
        for r in run.result.by_source
        if is_num(r.get("estimate")) and is_num(r.get("low_95"))
    ]
    if not rows:
        return Absent("result.json `by_source` has no per-source estimates with intervals.")
    family = {c.get("source"): c.get("family") for c in run.result.trace.composition}
    for r in rows:
        r["family"] = str(family.get(r.get("source")) or "other")
        metric = str(r.get("metric") or r.get("primary_metric") or "")
        flag = " (small n)" if r.get("small_n") else ""
        r["label"] = f"{r['source']} · {metric} · n={int(r.get('n') or 0):,}{flag}"
    rank = {f: i for i, f in enumerate(FAMILY_ORDER)}
    rows.sort(key=lambda r: (rank.get(r["family"], 9), r["family"], -r["estimate"]))
    published = competitor_rows(run)
    comps = [
        {
            "row": i,
            "value": c["value"],
            "lakera": is_lakera(c.get("system")),
            "self_eval": bool(c.get("self_eval")),
        }
        for i, r in enumerate(rows)
        for c in published.get(str(r.get("source")), [])
    ]
    small = [r["source"] for r in rows if r.get("small_n")]
    lakera = lakera_name(run)
    alt = (
        f"Forest plot of the primary metric for {len(rows)} sources grouped by family, "
        "each with nested 50/80/95/99% bootstrap bands"
        + (f", and {len(comps)} published competitor values." if comps else ".")
    )
    caption = (
        "Each row is one source scored at the single global threshold θ_op on its primary "
        "metric (F1 for balanced sources, recall for all-attack, ODA = 1 − FPR for all-benign). "
        "The band tapers from the 50% interval (dark core) through 80% and 95% to 99% (faint "
        "tail); the dark tick is the point estimate. Rows are grouped by family. "
        + (
            f"Red diamonds: {lakera}; grey dots: other published systems, one per system "
            "(* = self-evaluation, an upper bound). A competitor inside our 95% band is within "
            "noise. "
            if comps
            else "No published competitor value is recorded in this run's "
            "comparisons, so no markers are drawn. "
        )
        + (f"Small n (wide intervals): {', '.join(small)}." if small else "")
    )
    return Prepared({"rows": rows, "competitors": comps, "lakera_name": lakera}, alt, caption)


FOREST = FigureSpec(
    13, "forest", "Per-dataset forest plot", "paper Fig. 13", _extract_forest, draw_forest
)
