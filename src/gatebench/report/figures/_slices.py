"""Forest plots of result slices (per language, per position): one drawer, one row rule.

A slice row of ``result.json`` (:class:`~gatebench.result.LanguageRow`,
:class:`~gatebench.result.PositionRow`) carries the same rates whatever it is
sliced by, so the figures that draw them share the layout, the grouping by
primary metric and the row labels; only the slice's name and order differ.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from matplotlib.figure import Figure

from gatebench.report.figures._common import estimate_ticks, grouped_layout, label_groups
from gatebench.report.figures._style import BLUE, new_figure
from gatebench.report.fmt import is_num, pct
from gatebench.result import SliceRates

__all__ = ["GROUPS", "draw_slices", "slice_rows"]

#: Group headings, in drawing order: the metric each group's rows are read on.
GROUPS = {
    "f1": "F1 · attacks and benign",
    "recall": "RECALL · attacks only",
    "oda": "ODA = 1 − FPR · benign only",
}

R = TypeVar("R", bound=SliceRates)


def draw_slices(data: Mapping[str, Any]) -> Figure:
    """Forest plot of per-slice estimates with 95% interval bars.

    Parameters
    ----------
    data : mapping
        ``rows``: records ``{label, group, estimate, low, high}`` in drawing
        order, grouped by ``group`` (a key of :data:`GROUPS`); ``title``: the
        axis title.
    """
    rows = data["rows"]
    ys, headers = grouped_layout(rows, "group")
    # Wider than the per-dataset forest: the row labels carry recall and FPR too.
    fig = new_figure(8.4, 1.4 + 0.3 * (len(ys) + len(headers)))
    ax = fig.add_subplot()
    bars = [
        (y, r["low"], r["high"])
        for y, r in zip(ys, rows, strict=True)
        if is_num(r.get("low")) and is_num(r.get("high"))
    ]
    if bars:
        yy, lo, hi = zip(*bars, strict=True)
        ax.hlines(yy, lo, hi, color=BLUE, lw=4.0, alpha=0.45, capstyle="butt")
    estimate_ticks(ax, ys, rows)
    label_groups(
        ax, ys, headers, [r["label"] for r in rows], [GROUPS.get(h[1], h[1]) for h in headers]
    )
    ax.set_xlim(-0.03, 1.05)
    ax.set_xlabel(r"primary metric at $\theta_{\mathrm{op}}$ (F1, recall, or ODA = 1 − FPR)")
    ax.set_title(data["title"])
    handles = [
        ax.plot([], [], color=BLUE, lw=4.0, alpha=0.45, label="95% CI")[0],
        ax.plot([], [], "|", color="#0b2545", ms=10, mew=2, label="estimate")[0],
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, frameon=False)
    return fig


def _label(name: str, r: SliceRates) -> str:
    if not (r.n_attack and r.n_benign):
        return f"{name} · n={r.n:,}"
    # The benign count beside the FPR: 0.00% of 2 prompts is not 0.00% of 2,000.
    return (
        f"{name} · n={r.n:,} ({r.n_benign:,} benign) · recall {pct(r.recall)}, FPR {pct(r.fpr, 2)}"
    )


def slice_rows(
    rows: Sequence[R], *, name: Callable[[R], str], order: Callable[[R], Any]
) -> list[dict[str, Any]]:
    """The slices with a defined primary metric, as :func:`draw_slices` takes them.

    Parameters
    ----------
    rows : sequence
        Slice rows of ``result.json``.
    name : callable
        The row's display name, the start of its label.
    order : callable
        Sort key within a metric group (groups follow :data:`GROUPS`).
    """
    groups = {g: i for i, g in enumerate(GROUPS)}
    chosen = sorted(
        (r for r in rows if is_num(r.primary)),
        key=lambda r: (groups.get(r.primary_metric, 9), order(r)),
    )
    return [
        {
            "label": _label(name(r), r),
            "group": r.primary_metric,
            "estimate": r.primary,
            "low": r.primary_ci.low if r.primary_ci else None,
            "high": r.primary_ci.high if r.primary_ci else None,
        }
        for r in chosen
    ]
