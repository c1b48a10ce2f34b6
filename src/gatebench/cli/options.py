"""What the command modules share: the consoles, the common options, and how errors end a command.

Every command catches :class:`~gatebench.errors.GatebenchError` and hands it
to :func:`fail`, so a user error prints one red line and exits with status 2
instead of a traceback, the same way in every command.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from gatebench.errors import ConfigError, GatebenchError
from gatebench.types import Role

if TYPE_CHECKING:
    from gatebench.conversation import ScanPolicy

__all__ = [
    "AsJson",
    "AssumeLabel",
    "AssumePosition",
    "Caps",
    "DataDir",
    "Embedded",
    "EmbeddedPayloads",
    "FilePositionField",
    "GroupField",
    "IdField",
    "LabelField",
    "LabelMap",
    "PersonaHalves",
    "PersonaTwins",
    "PositionOption",
    "QuoteTwins",
    "Roles",
    "Seed",
    "SkipMissing",
    "SourceName",
    "Sources",
    "TextField",
    "Twins",
    "console",
    "err",
    "fail",
    "file_options",
    "fmt_count",
    "fmt_pct",
    "parse_caps",
    "parse_label_map",
    "parse_roles",
    "print_note",
]

console = Console()
err = Console(stderr=True)

# Options that several commands take, spelled and explained once.
PositionOption = Annotated[
    str | None,
    typer.Option(
        "--position",
        help="Where the texts sit in the agent's input: user (the default), tool or "
        'document. A --jsonl line\'s own "position" wins over it.',
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Benchmark mirror (default: $GATEBENCH_DATA)."),
]
Sources = Annotated[
    list[str] | None,
    typer.Option(
        "--sources",
        "-s",
        help="Source names, a preset (default, paper, all), or a path to your own .jsonl, "
        ".csv or .parquet file, a directory of them, or a save_to_disk folder.",
    ),
]
Caps = Annotated[
    list[str] | None,
    typer.Option("--cap", help="Per-source cap override NAME=ROWS (or NAME=none)."),
]
Roles = Annotated[
    list[str] | None,
    typer.Option(
        "--role",
        help="Role override NAME=evaluation|training (training: fitted on, never scored).",
    ),
]
Embedded = Annotated[
    int | None,
    typer.Option(
        "--embedded",
        help="Constructed training rows: a training-corpus attack inside a benign training "
        "document (default 0).",
    ),
]
EmbeddedPayloads = Annotated[
    str | None,
    typer.Option(
        "--embedded-payloads",
        help="What --embedded rows embed: attacks (default), instructions (short benign "
        "training requests planted mid-document), mixed (half each) or addressed (pairs: a "
        "planted request after a line to an AI, attack; the same after a line to a person, "
        "benign).",
    ),
]
Twins = Annotated[
    int | None,
    typer.Option(
        "--twins",
        help="Constructed benign training rows: an English training prompt with learned "
        "trigger words inserted (default 3000; 0 for none).",
    ),
]
PersonaTwins = Annotated[
    int | None,
    typer.Option(
        "--persona-twins",
        help="Constructed training pairs: a persona frame from a benign training prompt "
        "before a benign request and before a training attack (default 0).",
    ),
]
PersonaHalves = Annotated[
    str | None,
    typer.Option(
        "--persona-halves",
        help="Which rows of each --persona-twins pair are built: both (default) or benign.",
    ),
]
QuoteTwins = Annotated[
    int | None,
    typer.Option(
        "--quote-twins",
        help="Constructed benign training rows: a training attack quoted inside a benign "
        "question about it (default 0).",
    ),
]
Documents = Annotated[
    bool | None,
    typer.Option(
        "--documents/--no-documents",
        help="Keep the training corpora's benign documents (worked solutions, threat "
        "reports, code), which Gate's data guard learns from (default: left out).",
    ),
]
SkipMissing = Annotated[
    bool, typer.Option("--skip-missing", help="Run on the available sources; record the rest.")
]
Seed = Annotated[int | None, typer.Option("--seed", help="Root seed.")]
Param = Annotated[
    list[str] | None, typer.Option("--param", help="Detector parameter KEY=JSON_VALUE.")
]
# How the files named in --sources are read (gatebench.data.local.FileOptions).
TextField = Annotated[
    str | None, typer.Option("--text-field", help="Text column of your files (default: text).")
]
LabelField = Annotated[
    str | None, typer.Option("--label-field", help="Label column of your files (default: label).")
]
IdField = Annotated[
    str | None,
    typer.Option("--id-field", help="Row id column of your files (default: line or row number)."),
]
GroupField = Annotated[
    str | None,
    typer.Option(
        "--group-field", help="Group column of your files: rows sharing a value share a fold."
    ),
]
FilePositionField = Annotated[
    str | None,
    typer.Option(
        "--position-field",
        help="Position column of your files: user, tool or document per text row "
        "(default: position, when there is one; empty: a user turn).",
    ),
]
LabelMap = Annotated[
    list[str] | None,
    typer.Option(
        "--label-map",
        help="VALUE=attack|benign for a label value of your files beyond the built-in forms.",
    ),
]
AssumePosition = Annotated[
    str | None,
    typer.Option(
        "--assume-position",
        help="user, tool or document: the position of every text row of your files that "
        "has none of its own (default: a user turn).",
    ),
]
AssumeLabel = Annotated[
    str | None,
    typer.Option(
        "--assume-label", help="attack or benign: the label of every row of unlabelled files."
    ),
]
SourceName = Annotated[
    str | None,
    typer.Option("--source-name", help="Name of the one file in --sources (default: its name)."),
]


ScanRoles = Annotated[
    str,
    typer.Option(
        "--scan-roles",
        help="Roles of a conversation scanned (comma-separated, of system, user, assistant, "
        "tool, document).",
    ),
]
SpanAdjacent = Annotated[
    bool,
    typer.Option(
        "--span-adjacent/--no-span-adjacent",
        help="Also score a window across the border of neighbouring scanned messages of the "
        "same role (one extra short window per such pair).",
    ),
]


def scan_policy(scan_roles: str, span_adjacent: bool) -> ScanPolicy:
    """The conversations' scanning policy from ``--scan-roles`` and ``--span-adjacent``."""
    from gatebench.conversation import ConversationError, ScanPolicy

    try:
        return ScanPolicy(ScanPolicy.parse(scan_roles, where="--scan-roles").roles, span_adjacent)
    except ConversationError as exc:
        raise ConfigError(f"--scan-roles {scan_roles!r}: {exc}") from None


def fail(exc: GatebenchError) -> NoReturn:
    """Print ``exc`` as one red line on stderr and end the command with exit status 2."""
    # Messages quote user input and file contents: brackets in them are text, not markup.
    err.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True, highlight=False)
    raise typer.Exit(code=2)


def print_note(line: str | None) -> None:
    """Print a warning line that quotes file content (a refused row's reason), if any."""
    if line:
        # File content in it is text, never markup.
        console.print(line, style="yellow", soft_wrap=True, highlight=False, markup=False)


def parse_caps(caps: list[str] | None) -> dict[str, int | None]:
    """``--cap NAME=ROWS`` (or ``NAME=none``) values as a mapping; a bad one is a ConfigError."""
    out: dict[str, int | None] = {}
    for item in caps or []:
        name, sep, value = item.partition("=")
        if not sep or not (value.isdigit() or value.lower() == "none"):
            raise ConfigError(
                f"--cap {item!r} is not NAME=ROWS; write e.g. --cap alpaca-instructions=500"
            )
        out[name] = None if value.lower() == "none" else int(value)
    return out


def parse_roles(roles: list[str] | None) -> dict[str, str]:
    """``--role NAME=evaluation|training`` values as a mapping; a bad one is a ConfigError."""
    out: dict[str, str] = {}
    for item in roles or []:
        name, sep, value = item.partition("=")
        if not sep or value not in set(Role):
            raise ConfigError(
                f"--role {item!r} is not NAME=evaluation or NAME=training; "
                "write e.g. --role toxicchat=evaluation"
            )
        out[name] = value
    return out


def file_options(
    text_field: str | None,
    label_field: str | None,
    id_field: str | None,
    group_field: str | None,
    label_map: list[str] | None,
    assume_label: str | None,
    source_name: str | None,
) -> dict[str, Any]:
    """The file options given on the command line, as :class:`~gatebench.config.RunConfig` keys.

    Unset ones are left out, so that they do not mask the config file.
    """
    options = {
        "text_field": text_field,
        "label_field": label_field,
        "id_field": id_field,
        "group_field": group_field,
        "label_map": parse_label_map(label_map) or None,
        "assume_label": assume_label,
        "source_name": source_name,
    }
    return {k: v for k, v in options.items() if v is not None}


def parse_label_map(items: list[str] | None) -> dict[str, str]:
    """``--label-map VALUE=attack|benign`` values as a mapping; a bad one is a ConfigError."""
    out: dict[str, str] = {}
    for item in items or []:
        value, sep, label = item.rpartition("=")
        if not sep or not value or label not in ("attack", "benign"):
            raise ConfigError(
                f"--label-map {item!r} is not VALUE=attack or VALUE=benign; "
                "write e.g. --label-map jailbreak_attempt=attack"
            )
        out[value] = label
    return out


def fmt_count(value: Any) -> str:
    """A table cell for a count: thousands separated, empty for None."""
    return "" if value is None else f"{value:,}"


def fmt_pct(x: float | None) -> str:
    """A share as a percentage with two decimals; ``n/a`` for None."""
    return "n/a" if x is None else f"{100 * x:.2f}%"
