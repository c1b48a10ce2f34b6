"""``gatebench evaluate-turns``: conversations scored turn by turn, for detection delay.

The command is a plain function; :mod:`gatebench.cli` registers it on the app.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from gatebench.cli.options import (
    AssumeLabel,
    IdField,
    LabelField,
    LabelMap,
    ScanRoles,
    SpanAdjacent,
    console,
    fail,
    fmt_pct,
    parse_label_map,
    scan_policy,
)
from gatebench.errors import GatebenchError

__all__ = ["evaluate_turns"]


def evaluate_turns(
    model_dir: Annotated[Path, typer.Argument(help="A model directory from `gatebench train`.")],
    data: Annotated[
        list[Path],
        typer.Argument(help="Files or directories of rows with a `messages` list and a label."),
    ],
    out: Annotated[Path, typer.Option("--out", help="Output directory (result.json).")],
    scan_roles: ScanRoles = "user,tool,document",
    span_adjacent: SpanAdjacent = True,
    label_field: LabelField = None,
    id_field: IdField = None,
    label_map: LabelMap = None,
    assume_label: AssumeLabel = None,
) -> None:
    """Score labelled conversations message by message at the model's threshold.

    Reports the share of attack conversations caught and how many messages
    passed before the first flag (from the attack's arrival where rows give
    ``attack_turn``), and the share of benign conversations falsely flagged.
    """
    from gatebench.turns import evaluate_turns as run

    try:
        result = run(
            model_dir,
            list(data),
            out,
            policy=scan_policy(scan_roles, span_adjacent),
            label_field=label_field or "label",
            label_map=parse_label_map(label_map),
            assume_label=assume_label,
            id_field=id_field,
        )
    except GatebenchError as exc:
        fail(exc)
    _print(result)
    console.print(f"results: {out / 'result.json'}", highlight=False)


def _share(r: dict[str, Any]) -> str:
    if r["rate"] is None:
        return "n/a"
    low, high = r["ci"]
    return f"{fmt_pct(r['rate'])} [{fmt_pct(low)}, {fmt_pct(high)}] ({r['k']:,}/{r['n']:,})"


def _turns(s: dict[str, Any]) -> str:
    return "n/a" if s["median"] is None else f"median {s['median']:g}, mean {s['mean']:.2f}"


def _print(r: dict[str, Any]) -> None:
    m, roles = r["model"], ", ".join(r["policy"]["roles"])
    table = Table(title=f"{m['detector']} at θ = {m['threshold']:.4f}, scanning {roles}")
    for col in ("conversations", "flagged (95% CI)", "messages before the first flag"):
        table.add_column(col)
    a, b = r["attack"], r["benign"]
    table.add_row(
        f"attack: {a['conversations']:,}", _share(a["detected"]), _turns(a["messages_before_flag"])
    )
    table.add_row(
        f"benign: {b['conversations']:,}",
        _share(b["flagged"]),
        _turns(b["messages_before_false_flag"]),
    )
    console.print(table)
    if a["with_attack_turn"]:
        console.print(
            f"after the attack's turn: {_turns(a['delay_after_attack_turn'])} messages; "
            f"{a['flagged_before_attack_turn']} flagged before it, "
            f"{a['missed_after_attack_turn']} never",
            highlight=False,
        )
    if r["rows"]["refused"]:
        console.print(
            f"refused rows: {r['rows']['refused']:,} (listed in result.json)", highlight=False
        )
