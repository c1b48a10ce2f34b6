"""``gatebench neighbours``: the training texts a Gate score sits next to.

The command is a plain function; :mod:`gatebench.cli` registers it on the app.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from gatebench.cli.options import AsJson, DataDir, console, fail
from gatebench.errors import DataError, GatebenchError

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
    k: Annotated[int, typer.Option("--k", help="Nearest training texts of each label.")] = 5,
    data_dir: DataDir = None,
    as_json: AsJson = False,
) -> None:
    """Score a text and list the training attacks and benign texts nearest to it, by source."""
    from gatebench.unseen.nearest import nearest_training_rows

    origin = "stdin" if text is None or text == "-" else "the TEXT argument"
    one = sys.stdin.buffer.read().decode("utf-8", "replace") if origin == "stdin" else str(text)
    try:
        if not one.strip():
            raise DataError(
                f"the text from {origin} is empty or whitespace; give the text to look up"
            )
        result = nearest_training_rows(model_dir, [one], k=k, data_dir=data_dir)[0]
    except GatebenchError as exc:
        fail(exc)
    if as_json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
        return
    _print(result)


def _print(result: dict[str, Any]) -> None:
    chunk = result["chunk"]
    where = (
        f", window {chunk['index'] + 1} of {chunk['n_chunks']} (characters "
        f"{chunk['start']}-{chunk['end']})"
        if chunk["n_chunks"] > 1
        else ""
    )
    console.print(
        f"score {result['score']:.4f}: {result['decision']} at threshold "
        f"{result['threshold']:.4f}{where}",
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
