"""Calibration figure (12): reliability diagrams with count histograms, before and after
isotonic regression, from ``result.calibration``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullLocator

from gatebench.report.figures._common import as_records
from gatebench.report.figures._spec import Absent, FigureSpec, Prepared
from gatebench.report.figures._style import BLUE, GREY, ORANGE, new_figure
from gatebench.report.fmt import num
from gatebench.rundata import RunData

__all__ = ["RELIABILITY"]


def draw_reliability(data: Mapping[str, Any]) -> Figure:
    """Two reliability diagrams side by side, each over its per-bin count histogram.

    Parameters
    ----------
    data : mapping
        ``panels``: list of ``{title, legend, colour, bins}`` where ``bins`` are
        records ``{lo, hi, mean_score, positive_rate, count}``.
    """
    panels = data["panels"]
    fig = new_figure(3.4 * len(panels), 4.4)
    grid = fig.add_gridspec(2, len(panels), height_ratios=[3, 1])
    for col, panel in enumerate(panels):
        top = fig.add_subplot(grid[0, col])
        bottom = fig.add_subplot(grid[1, col], sharex=top)
        bins = [b for b in panel["bins"] if (b.get("count") or 0) > 0]
        x = [b["mean_score"] for b in bins]
        y = [b["positive_rate"] for b in bins]
        top.plot([0, 1], [0, 1], ls=":", color=GREY, lw=1, label="perfect calibration")
        top.plot(x, y, "o-", color=panel["colour"], ms=4, lw=1.4, label="observed")
        # Past [0, 1] on both axes: an empty or all-attack bin sits at 0 or 1 and
        # its marker must be drawn whole.
        top.set_xlim(-0.03, 1.03)
        top.set_ylim(-0.04, 1.04)
        top.set_ylabel("observed attack rate")
        top.set_title(panel["title"])
        top.tick_params(labelbottom=False)
        edges = [panel["bins"][0]["lo"]] + [b["hi"] for b in panel["bins"]]
        counts = [b.get("count") or 0 for b in panel["bins"]]
        # One stepped area, not one bar per bin: same picture, far fewer artists.
        bottom.stairs(counts, edges, fill=True, color=panel["colour"], alpha=0.6)
        bottom.set_yscale("symlog", linthresh=1)
        # Plain counts (1, 10, 100) instead of 10^k: readable and no mathtext layout.
        bottom.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        # No minor ticks: each is a full Tick artist, and log axes make dozens.
        bottom.yaxis.set_minor_locator(NullLocator())
        bottom.set_xlabel("predicted probability (bin)")
        bottom.set_ylabel("prompts")
    # One legend under both panels: inside a panel it would sit on bins that can
    # fall anywhere in the unit square.
    fig.legend(
        handles=[
            Line2D([], [], ls=":", color=GREY, lw=1, label="perfect calibration"),
            *(
                Line2D([], [], marker="o", color=p["colour"], ms=4, lw=1.4, label=p["legend"])
                for p in panels
            ),
        ],
        loc="outside lower center",
        ncols=1 + len(panels),
        frameon=False,
    )
    return fig


def _extract_reliability(run: RunData) -> Prepared | Absent:
    cal = run.result.calibration
    panels = []
    for key, label, colour in (
        ("before", "Raw OOF scores", BLUE),
        ("after", "After isotonic regression", ORANGE),
    ):
        bins = [
            b
            for b in as_records(cal.get(f"reliability_{key}"))
            if all(k in b for k in ("lo", "hi", "mean_score", "positive_rate"))
        ]
        if bins:
            title = (
                f"{label}\nECE {num(cal.get(f'ece_{key}'))} · Brier {num(cal.get(f'brier_{key}'))}"
            )
            legend = f"observed, {label[0].lower()}{label[1:]}"
            panels.append({"title": title, "legend": legend, "colour": colour, "bins": bins})
    if not panels:
        return Absent("result.json has no `calibration` reliability tables.")
    alt = (
        "Reliability diagrams: observed attack rate against mean predicted probability in "
        f"{cal.get('n_bins', len(panels[0]['bins']))} equal-width bins, raw ECE "
        f"{num(cal.get('ece_before'))} and after isotonic regression "
        f"{num(cal.get('ece_after'))}, each above a histogram of prompts per bin."
    )
    caption = (
        "Points on the dotted diagonal mean a score of p is an attack p of the time. Points "
        "below it are over-confident, above under-confident. The histogram under each diagram "
        "(symlog counts) shows how many prompts fall in each bin, so a far-off point backed by "
        "few prompts weighs little in the ECE (the count-weighted mean gap). The right panel "
        "recalibrates the same OOF scores with isotonic regression fitted across folds; "
        "calibration changes probabilities, not the ranking, so AUC is unchanged."
    )
    return Prepared({"panels": panels}, alt, caption)


RELIABILITY = FigureSpec(
    12,
    "reliability",
    "Reliability diagram, before and after isotonic",
    "paper Fig. 12",
    _extract_reliability,
    draw_reliability,
)
