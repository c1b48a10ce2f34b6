"""Per-position forest plot (22): the primary metric at θ_op of the prompts in each position of
an agent's input (user turn, tool result, document), with its 95% bootstrap interval."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from gatebench.errors import DataError
from gatebench.per_position import MIN_POSITION_PROMPTS
from gatebench.report.figures._slices import draw_slices, slice_rows
from gatebench.report.figures._spec import Absent, FigureSpec, Prepared
from gatebench.result import PositionRow
from gatebench.rundata import RunData
from gatebench.types import Position

__all__ = ["POSITIONS", "draw_positions", "position_rows"]

#: How each position reads in a row label.
NAMES = {
    str(Position.USER): "user turn",
    str(Position.TOOL): "tool result",
    str(Position.DOCUMENT): "document",
}
_ORDER = {str(p): i for i, p in enumerate(Position)}


def draw_positions(data: Mapping[str, Any]) -> Figure:
    """Forest plot of per-position estimates with 95% interval bars.

    Parameters
    ----------
    data : mapping
        ``rows``: records ``{label, group, estimate, low, high}`` in drawing
        order, grouped by ``group`` (a metric key of ``_slices.GROUPS``).
    """
    return draw_slices(
        {**data, "title": r"Primary metric per position in the input at $\theta_{\mathrm{op}}$"}
    )


def _name(r: PositionRow) -> str:
    return NAMES.get(r.position, r.position)


def position_rows(by_position: Sequence[PositionRow]) -> list[dict[str, Any]]:
    """The positions with a defined primary metric, as :func:`draw_positions` takes them.

    Grouped by metric; user turn, tool result, document within a group.
    """
    return slice_rows(by_position, name=_name, order=lambda r: _ORDER.get(r.position, len(_ORDER)))


def _sources(run: RunData) -> str:
    """Which sources sit in a tool result or a document, read off the headline OOF rows."""
    try:
        prompts = run.prompts
    except DataError:
        return ""
    if "position" not in prompts:
        return ""
    placed = prompts[prompts["position"].notna() & (prompts["position"] != str(Position.USER))]
    parts = [
        f"{NAMES.get(str(position), str(position))}: {', '.join(sorted(rows['source'].unique()))}"
        for position, rows in sorted(
            placed.groupby("position"), key=lambda g: _ORDER.get(str(g[0]), len(_ORDER))
        )
    ]
    if not parts:
        return "Every scored prompt of this run is a user turn. "
    return f"Sources not in a user turn: {'; '.join(parts)}; every other source is a user turn. "


def _extract_positions(run: RunData) -> Prepared | Absent:
    result = run.result
    if not result.by_position:
        if result.by_position_skipped:
            return Absent(
                f"no position reaches {MIN_POSITION_PROMPTS} headline prompts "
                f"({len(result.by_position_skipped)} positions, all smaller)."
            )
        return Absent(
            "result.json has no per-position results (`by_position`): the run predates them "
            "or its trace records no position."
        )
    rows = position_rows(result.by_position)
    if not rows:
        return Absent("result.json `by_position` has no position with a defined primary metric.")
    skipped = result.by_position_skipped
    few = (
        f"Fewer than {MIN_POSITION_PROMPTS} prompts, so no row: "
        f"{', '.join(f'{NAMES.get(k, k)} ({v:,})' for k, v in sorted(skipped.items()))}. "
        if skipped
        else ""
    )
    alt = (
        f"Forest plot of the primary metric for {len(rows)} positions in an agent's input at "
        f"θ_op = {run.threshold:.3f}, each with its 95% bootstrap interval, grouped by metric."
    )
    caption = (
        "Each row is one position a text takes in an LLM agent's input: a user turn, a tool "
        "result (what a tool or function call returned), or a document (retrieved or pasted "
        "content: an email, a web page, a table). Each is scored at the single global threshold "
        "θ_op on the metric its label mix allows: F1 where it has attacks and benign prompts "
        "(the row adds recall and FPR), recall where only attacks, ODA = 1 − FPR where only "
        "benign. The bar is the label-stratified 95% bootstrap interval, the dark tick the "
        "estimate. Each position comes from a few sources, so a gap between two rows mixes "
        "position with source. " + _sources(run) + few
    )
    return Prepared({"rows": rows}, alt, caption)


POSITIONS = FigureSpec(
    22,
    "positions",
    "Per-position forest plot",
    "not in the paper",
    _extract_positions,
    draw_positions,
)
