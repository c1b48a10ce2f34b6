"""``gatebench neighbours``: the training texts a Gate score sits next to.

The command is a plain function; :mod:`gatebench.cli` registers it on the app.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from gatebench.cli.options import (
    AsJson,
    DataDir,
    PositionOption,
    ScanRoles,
    SpanAdjacent,
    console,
    fail,
)
from gatebench.cli.serve import read_inputs
from gatebench.errors import GatebenchError

__all__ = ["neighbours"]

#: Characters of a neighbour's text shown in the table (the JSON holds it whole).
SHOWN_CHARS = 160


def neighbours(
    model_dir: Annotated[
        Path, typer.Argument(help="A Gate model directory from `gatebench train`.")
    ],
    text: Annotated[
        str | None, typer.Argument(help="Text to look up; '-' or omit for stdin.")
    ] = None,
    jsonl: Annotated[
        Path | None,
        typer.Option(
            "--jsonl",
            help='Look up every {"text": ...} and {"messages": [...]} line of a JSONL file '
            "instead.",
        ),
    ] = None,
    k: Annotated[int, typer.Option("--k", help="Nearest training texts of each label.")] = 5,
    position: PositionOption = None,
    scan_roles: ScanRoles = "user,tool,document",
    span_adjacent: SpanAdjacent = True,
    data_dir: DataDir = None,
    as_json: AsJson = False,
) -> None:
    """Score texts and list the training attacks and benign texts nearest to each, by source."""
    from gatebench.unseen.nearest import nearest_training_rows

    try:
        inputs, positions, policy = read_inputs(
            text, jsonl, position, scan_roles, span_adjacent, "look up"
        )
        results = nearest_training_rows(
            model_dir, inputs, k=k, policy=policy, positions=positions, data_dir=data_dir
        )
    except GatebenchError as exc:
        fail(exc)
    if as_json:
        for result in results:
            sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    elif len(results) == 1:
        _print(results[0])
    else:
        _print_tally(results)


def _print(result: dict[str, Any]) -> None:
    where = _where(result)
    console.print(
        f"score {result['score']:.4f}: {result['decision']} at threshold "
        f"{result['threshold']:.4f}{where}",
        highlight=False,
    )
    if not result["neighbours_read"]:
        console.print(
            "this text is read by meaning in its own language: its score does not read the "
            "neighbour head, so the rows below are what it is near, not why it scored so",
            highlight=False,
        )
    table = Table(title="Nearest training texts (cosine in the neighbour head's space)")
    for col in ("label", "similarity", "source", "text"):
        table.add_column(col, overflow="fold")
    for n in result["neighbours"]:
        rows = n["rows"]
        sources = ", ".join(sorted({r["source"] for r in rows}))
        shown = rows[0]["text"].replace("\n", " ")
        if len(shown) > SHOWN_CHARS:
            shown = shown[:SHOWN_CHARS] + "…"
        if len(rows) > 1:
            shown += f"  (+{len(rows) - 1} more rows with this text)"
        table.add_row(n["label"], f"{n['similarity']:.3f}", escape(sources), escape(shown))
    console.print(table)


def _where(result: dict[str, Any]) -> str:
    """Which window drove the score: of a long text, or a conversation's message or border."""
    if "driver" not in result:
        chunk = result["chunk"]
        if chunk["n_chunks"] == 1:
            return ""
        return (
            f", window {chunk['index'] + 1} of {chunk['n_chunks']} (characters "
            f"{chunk['start']}-{chunk['end']})"
        )
    driver, n = result["driver"], len(result["messages"])
    if driver["spans_to"] is not None:
        return (
            f", driven by the border of messages {driver['message'] + 1} and "
            f"{driver['spans_to'] + 1} of {n} ({driver['role']})"
        )
    window = driver["window"]
    part = (
        f", window {window['index'] + 1} of {window['n_windows']}"
        if window["n_windows"] > 1
        else ""
    )
    return f", driven by message {driver['message'] + 1} of {n} ({driver['role']}){part}"


def _print_tally(results: list[dict[str, Any]]) -> None:
    """For many texts: by decision, the sources of each text's nearest training attack and text.

    A file of false alarms read this way shows which training sources they
    lean on, where one text at a time shows only examples.
    """
    for decision in ("block", "allow"):
        part = [r for r in results if r["decision"] == decision]
        if not part:
            continue
        table = Table(title=f"{len(part):,} texts scored {decision}: their nearest training rows")
        for col in ("nearest", "source", "texts", "share"):
            table.add_column(col)
        for label in ("attack", "benign"):
            first = [next((n for n in r["neighbours"] if n["label"] == label), None) for r in part]
            tally = Counter(n["rows"][0]["source"] for n in first if n is not None)
            for source, count in tally.most_common():
                table.add_row(label, escape(source), f"{count:,}", f"{count / len(part):.1%}")
        console.print(table)
