"""Render the run directory as one self-contained HTML file through Jinja2 templates.

Self-contained means: figures are inline SVG, the stylesheet is inline, there is
no script and no font file, and no attribute points outside the page. A report
opened offline, years later, looks the same.
"""

from __future__ import annotations

import re
import warnings
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from gatebench.report import tables
from gatebench.report._render import Job, draw_all
from gatebench.report.figures import Absent, Prepared, names, prepare
from gatebench.report.glossary import GLOSSARY
from gatebench.report.markdown import write_result_md
from gatebench.report.summary import executive_summary
from gatebench.report.views import FigureView
from gatebench.rundata import RunData, load_run

__all__ = ["FigureView", "render_figures", "render_report"]

#: Report sections and the figure numbers they hold, in reading order.
SECTIONS: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("cv", "Cross-validation and the operating point", (1, 2, 3, 4, 5, 6)),
    ("diagnostics-figures", "Generalisation diagnostics", (7, 8, 9, 10, 11)),
    (
        "per-dataset",
        "Calibration, per-dataset, per-language and per-position results",
        (12, 13, 21, 22),
    ),
    ("comparisons", "Trade-offs and published competitors", (14, 15, 16, 17, 18, 19)),
    ("latency", "Latency", (20,)),
)


def render_figures(
    run: RunData, *, figures_dir: Path | None = None, n_jobs: int | None = None
) -> list[FigureView]:
    """Extract and draw every figure; optionally write each as PNG and SVG.

    Parameters
    ----------
    run : RunData
        The loaded run directory.
    figures_dir : path, optional
        Where ``figNN-<key>.png`` and ``.svg`` go; nothing is written when omitted.
    n_jobs : int, optional
        Worker processes for drawing; default: idle cores, at most 4; 1 draws here.
    """
    prepared = prepare(run)
    jobs = [
        Job(spec.number, got.data, got.alt) for spec, got in prepared if isinstance(got, Prepared)
    ]
    drawn = {d.number: d for d in draw_all(jobs, figures_dir, n_jobs=n_jobs)}
    called = names(run)
    views = []
    for spec, got in prepared:
        title = spec.heading(called)
        if isinstance(got, Absent):
            views.append(FigureView(spec, title, absent=got.reason))
            continue
        d = drawn[spec.number]
        if d.error:
            warnings.warn(f"figure {spec.number} ({spec.key}) failed: {d.error}", stacklevel=2)
            views.append(FigureView(spec, title, absent=f"drawing failed ({d.error})."))
            continue
        views.append(
            FigureView(
                spec, title, svg=Markup(d.svg), alt=got.alt, caption=got.caption, files=d.files
            )
        )
    return views


_SUBSCRIPT = re.compile(r"([θρσκ]\*?|\bp)_([A-Za-z0-9θŷ]+)")
_CODE = re.compile(r"`([^`]+)`")


def typeset(text: Any) -> Markup:
    """Escape, then set θ_op as θ<sub>op</sub> and `code` as <code>code</code>.

    The figures and the Markdown summary keep the plain spelling; only the
    HTML, where subscripts render, gets them.
    """
    safe = str(escape(str(text)))
    return Markup(_CODE.sub(r"<code>\1</code>", _SUBSCRIPT.sub(r"\1<sub>\2</sub>", safe)))


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("gatebench.report", "templates"),
        autoescape=lambda name: bool(name) and ".html" in str(name),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["typeset"] = typeset
    return env


def _version() -> str:
    try:
        return metadata.version("gatebench")
    except metadata.PackageNotFoundError:
        return "unknown"


def context(run: RunData, views: list[FigureView]) -> dict[str, Any]:
    """Everything the HTML template reads."""
    by_number = {v.spec.number: v for v in views}
    leaderboard, has_comparisons = tables.leaderboard_rows(run)
    licences, licences_from_cards = tables.licence_rows(run)
    return {
        "h": tables.header(run),
        "summary": executive_summary(run),
        "sentences": tables.operating_sentences(run),
        "headline": tables.headline_rows(run),
        "macro": tables.macro_coverage(run),
        "macro_cis": tables.macro_intervals(run),
        "auc": tables.auc_row(run),
        "sections": [
            {
                "id": sid,
                "title": title,
                "figures": [by_number[n] for n in numbers if n in by_number],
            }
            for sid, title, numbers in SECTIONS
        ],
        "n_drawn": sum(v.svg is not None for v in views),
        "n_absent": sum(v.svg is None for v in views),
        "leaderboard": leaderboard,
        "has_comparisons": has_comparisons,
        "competitor": names(run)["competitor"],
        "folds": tables.fold_tables(run),
        "diagnostics": tables.diagnostics_rows(run),
        "duplicates": tables.duplicates(run),
        "licences": licences,
        "licences_from_cards": licences_from_cards,
        "glossary": GLOSSARY,
        "version": _version(),
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def render_report(
    run_dir: Path | str,
    out: Path | str | None = None,
    *,
    write_files: bool = True,
    n_jobs: int | None = None,
) -> Path:
    """Write the self-contained HTML report of a run directory.

    Parameters
    ----------
    run_dir : path
        A run directory written by ``gatebench run``.
    out : path, optional
        The HTML file; ``run_dir/report.html`` when omitted.
    write_files : bool
        Also write ``run_dir/result.md`` and every drawn figure as PNG and SVG
        under ``run_dir/figures/``.
    n_jobs : int, optional
        Processes that draw figures; default: idle cores (cores minus load), at most 4.

    Returns
    -------
    Path
        The HTML file written.

    Raises
    ------
    gatebench.errors.SchemaError
        When ``result.json`` is missing, corrupt or of an unreadable schema.
    """
    run = load_run(run_dir)
    figures_dir = run.run_dir / "figures" if write_files else None
    views = render_figures(run, figures_dir=figures_dir, n_jobs=n_jobs)
    html = _environment().get_template("report.html.j2").render(**context(run, views))
    target = Path(out) if out is not None else run.run_dir / "report.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(target.suffix + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(target)
    if write_files:
        write_result_md(run, views, report=target)
    return target
