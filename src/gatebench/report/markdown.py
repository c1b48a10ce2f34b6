"""``result.md``: a short Markdown summary for pull requests and CI logs.

It carries the headline table, the per-dataset leaderboard, the per-language
and per-position tables and the failing diagnostics, and points at the HTML
report for everything else.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from gatebench.report import tables
from gatebench.report.figures import names
from gatebench.report.fmt import pct
from gatebench.report.views import FigureView
from gatebench.rundata import RunData
from gatebench.trace_info import refused_note

__all__ = ["render_result_md", "write_result_md"]


def _cell(value: Any) -> str:
    """Text safe inside a Markdown table cell (pipes escaped, one line)."""
    return " ".join(str(value).split()).replace("|", "\\|")


def render_result_md(
    run: RunData, views: Sequence[FigureView] = (), *, report: str | None = None
) -> str:
    """The Markdown summary as text.

    Parameters
    ----------
    run : RunData
        The loaded run directory.
    views : sequence of FigureView
        Rendered figures, to list those left out; may be empty.
    report : str, optional
        Link to the HTML report, relative to ``result.md``.
    """
    env = Environment(
        loader=PackageLoader("gatebench.report", "templates"),
        autoescape=False,  # Markdown, not HTML: cells are escaped by the `cell` filter
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["cell"] = _cell
    diagnostics = tables.diagnostics_rows(run)
    leaderboard, has_comparisons = tables.leaderboard_rows(run)
    return env.get_template("result.md.j2").render(
        h=tables.header(run),
        op=run.result.operating_point,
        headline=tables.headline_rows(run),
        auc=tables.auc_row(run),
        leaderboard=leaderboard,
        has_comparisons=has_comparisons,
        languages=run.result.by_language,
        languages_skipped=run.result.by_language_skipped,
        positions=run.result.by_position,
        positions_skipped=run.result.by_position_skipped,
        competitor=names(run)["competitor"],
        failing=[d for d in diagnostics if d["status"] == "FAIL"],
        warnings=[d for d in diagnostics if d["status"] == "WARN"],
        n_diagnostics=len(diagnostics),
        absent=[v for v in views if v.svg is None],
        n_drawn=sum(v.svg is not None for v in views),
        report=report,
        refused=refused_note(run.trace_info.get("malformed_rows", []), "`trace_info.json`"),
        pct=pct,
    )


def write_result_md(
    run: RunData, views: Sequence[FigureView] = (), *, report: Path | None = None
) -> Path:
    """Write ``run_dir/result.md`` and return its path."""
    target = run.run_dir / "result.md"
    link = None
    if report is not None:
        link = Path(os.path.relpath(report.resolve(), run.run_dir.resolve())).as_posix()
    target.write_text(render_result_md(run, views, report=link), encoding="utf-8")
    return target
