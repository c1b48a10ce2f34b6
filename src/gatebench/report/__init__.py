"""The report: every figure and table of a run, in one self-contained HTML file.

Public API
----------
render_report(run_dir, out=None) -> Path
    ``report.html`` (or ``out``), plus ``result.md`` and ``figures/*.png|svg``.
report_command(run_dir, out=None) -> Path
    What ``gatebench report RUN_DIR [--out FILE]`` calls.
FIGURES
    The twenty-two figure specs (extractor + pure drawer), in report order.
"""

from __future__ import annotations

from pathlib import Path

from gatebench.report.figures import FIGURES, Absent, FigureSpec, Prepared
from gatebench.report.html import render_report
from gatebench.report.markdown import render_result_md, write_result_md
from gatebench.rundata import RunData, load_run

__all__ = [
    "FIGURES",
    "Absent",
    "FigureSpec",
    "Prepared",
    "RunData",
    "load_run",
    "render_report",
    "render_result_md",
    "report_command",
    "write_result_md",
]


def report_command(run_dir: Path | str, out: Path | str | None = None) -> Path:
    """Entry point of ``gatebench report``: check the folder, render, return the HTML path.

    Parameters
    ----------
    run_dir : path
        A run directory written by ``gatebench run``.
    out : path, optional
        Where the HTML goes; ``RUN_DIR/report.html`` by default.

    Raises
    ------
    gatebench.errors.ConfigError
        When ``run_dir`` is not a directory.
    gatebench.errors.SchemaError
        When its ``result.json`` is missing, corrupt or of another schema.
    """
    from gatebench.errors import ConfigError

    root = Path(run_dir)
    if not root.is_dir():
        raise ConfigError(
            f"RUN_DIR {str(root)!r} is not a directory; pass the folder `gatebench run` "
            "printed (it holds result.json)"
        )
    if _is_unseen(root / "result.json"):
        from gatebench.report.unseen import render_unseen

        if out is not None:
            raise ConfigError(
                f"{root} holds a `gatebench evaluate` result; its report is always written to "
                "RUN_DIR/report.html (drop --out)"
            )
        return render_unseen(root)
    return render_report(root, out)


def _is_unseen(path: Path) -> bool:
    """True for a ``gatebench evaluate`` result (``kind`` = ``unseen``); False otherwise."""
    import json

    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # the run reader names the problem
    return isinstance(payload, dict) and payload.get("kind") == "unseen"
