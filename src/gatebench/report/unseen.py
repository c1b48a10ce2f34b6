"""The report of ``gatebench evaluate``: never-seen figures beside the in-distribution ones.

One figure carries the comparison: recall, FPR, F1 and AUC at the shipped
threshold, each with its 95% interval, in distribution (the pooled OOF scores
of the run that chose the threshold) and on the never-seen sets. A gap
between the two is the number a user serving the model inherits. The
per-source table, the per-language and per-position forest plots (as the
run's report draws them) and the overlap that was set aside follow.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from markupsafe import Markup
from matplotlib.figure import Figure

from gatebench.report.figures.language import draw_languages, forest_rows
from gatebench.report.figures.position import draw_positions, position_rows
from gatebench.report.html import _environment, _version
from gatebench.report.svg import figure_svg, inline_svg
from gatebench.unseen.result import Rates, UnseenResult

__all__ = ["METRICS", "draw_gap", "render_unseen"]

#: The metrics the comparison figure shows, in order.
METRICS = ("recall", "fpr", "f1", "auc")
_SIDES = (("in distribution (OOF)", "#4c72b0", "o"), ("never seen", "#dd8452", "s"))


def _point(rates: Rates | None, metric: str) -> tuple[float, float, float] | None:
    if rates is None:
        return None
    value = getattr(rates, metric)
    if value is None:
        return None
    ci = rates.ci.get(metric)
    low = ci.low if ci is not None and ci.low is not None else value
    high = ci.high if ci is not None and ci.high is not None else value
    return float(value), float(low), float(high)


def gap_data(result: UnseenResult) -> dict[str, Any]:
    """Per metric, the in-distribution and never-seen (value, low, high), None where absent."""
    return {
        m: {"in": _point(result.in_distribution, m), "unseen": _point(result.pooled, m)}
        for m in METRICS
    }


def draw_gap(data: dict[str, Any], title: str) -> Figure:
    """Dot-and-whisker pairs, one row per metric, both sides on a shared [0, 1] axis."""
    fig = Figure(figsize=(7.0, 3.2), layout="constrained")
    ax = fig.add_subplot()
    for offset, key, (label, colour, marker) in (
        (-0.15, "in", _SIDES[0]),
        (0.15, "unseen", _SIDES[1]),
    ):
        ys, xs, lo, hi = [], [], [], []
        for i, metric in enumerate(METRICS):
            point = data[metric][key]
            if point is None:
                continue
            ys.append(i + offset)
            xs.append(point[0])
            lo.append(point[0] - point[1])
            hi.append(point[2] - point[0])
        if xs:
            ax.errorbar(
                xs, ys, xerr=[lo, hi], fmt=marker, color=colour, label=label, capsize=3, ms=6
            )
    ax.set_yticks(range(len(METRICS)), [m.upper() if m != "f1" else "F1" for m in METRICS])
    ax.invert_yaxis()
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("value at the shipped threshold (95% CI)")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.12), ncol=2, frameon=False, fontsize=8)
    return fig


def _forest(
    rows: list[dict[str, Any]], draw: Callable[[dict[str, Any]], Figure], prefix: str, what: str
) -> Markup | None:
    """A never-seen forest plot of ``rows`` as inline SVG, or None when there is no row."""
    if not rows:
        return None
    alt = f"Forest plot of the primary metric for {len(rows)} {what}, never seen"
    return Markup(inline_svg(figure_svg(draw({"rows": rows})), prefix=prefix, alt=alt))


def render_unseen(out_dir: Path, result: UnseenResult | None = None) -> Path:
    """Write ``out_dir/report.html`` for an evaluation written by ``gatebench evaluate``."""
    result = result or UnseenResult.read(out_dir / "result.json")
    name = str(result.model.detector.get("name", "this detector"))
    figure = draw_gap(gap_data(result), f"{name}: in distribution vs never seen")
    alt = (
        "Recall, FPR, F1 and AUC at the shipped threshold with 95% intervals, in distribution "
        "and on never-seen sets"
    )
    svg = Markup(inline_svg(figure_svg(figure), prefix="gap", alt=alt))
    languages = _forest(forest_rows(result.by_language), draw_languages, "lang", "prompt languages")
    positions = _forest(position_rows(result.by_position), draw_positions, "pos", "input positions")
    template = _environment().get_template("unseen.html.j2")
    html = template.render(
        r=result,
        refused=result.refused_note("manifest.json"),
        name=name,
        svg=svg,
        languages=languages,
        positions=positions,
        version=_version(),
        metrics=METRICS,
    )
    path = out_dir / "report.html"
    path.write_text(html, encoding="utf-8")
    return path
