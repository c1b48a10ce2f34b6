"""``gatebench detectors list``, ``gatebench diagnostics list``: what is registered, from where.

Every entry is imported to read its docstring, so a broken plug-in shows up
here, by name, rather than in the middle of a run.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gatebench.cli.options import AsJson
from gatebench.errors import GatebenchError
from gatebench.registry import Registry

__all__ = ["detectors_app", "diagnostics_app"]

detectors_app = typer.Typer(
    help="Detectors: built-in and installed plug-ins.", no_args_is_help=True
)
diagnostics_app = typer.Typer(
    help="Diagnostic checks: built-in and installed plug-ins.", no_args_is_help=True
)


@detectors_app.command("list")
def detectors_list(as_json: AsJson = False) -> None:
    """One row per detector: name, trained or frozen, where it comes from, what it does."""
    from gatebench.detectors import DETECTORS

    _show(DETECTORS, "kind", _detector_kind, _first_line, "gatebench detectors", as_json)


@diagnostics_app.command("list")
def diagnostics_list(as_json: AsJson = False) -> None:
    """One row per check: name, tier, where it comes from, what it measures."""
    from gatebench.diagnostics import DIAGNOSTICS

    _show(DIAGNOSTICS, "tier", lambda c: str(c.tier), _check_line, "gatebench diagnostics", as_json)


def _show(
    registry: Registry[Any],
    kind_header: str,
    kind_of: Callable[[Any], str],
    describe: Callable[[Any], str],
    title: str,
    as_json: bool,
) -> None:
    rows: list[dict[str, str]] = []
    errors: list[str] = []
    for name in registry.names():
        row = {"name": name, kind_header: "", "origin": registry.origin(name), "description": ""}
        try:
            obj = registry.get(name)
        except GatebenchError as exc:
            row[kind_header] = "broken"
            row["description"] = "cannot be loaded; the error is printed below the table"
            errors.append(str(exc))
        else:
            row[kind_header] = kind_of(obj)
            row["description"] = describe(obj)
        rows.append(row)
    warnings = registry.problems()
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    else:
        table = Table(title=title)
        for col in ("name", kind_header, "origin", "description"):
            table.add_column(col, overflow="fold", no_wrap=col == "name")
        for row in rows:
            table.add_row(*(escape(row[c]) for c in ("name", kind_header, "origin", "description")))
        Console().print(table)
    err = Console(stderr=True)
    for message in warnings:
        err.print(f"[yellow]warning:[/] {escape(message)}", soft_wrap=True, highlight=False)
    for message in errors:
        err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True, highlight=False)
    if errors:
        # The table is still useful, but scripts must see that a plug-in is broken.
        raise typer.Exit(code=2)


def _detector_kind(factory: Any) -> str:
    requires_fit = getattr(factory, "requires_fit", None)
    if requires_fit is None:
        return "factory"
    return "trained" if requires_fit else "frozen"


def _first_line(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.strip().partition("\n")[0]


def _check_line(check: Any) -> str:
    # A check's module docstring says what it measures; the run function's says how.
    module = sys.modules.get(getattr(check.run, "__module__", ""), None)
    return _first_line(module) or _first_line(check.run)
