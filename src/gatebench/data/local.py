"""A user's labelled file read into samples, with the same row checks as a registered loader.

A row may hold a conversation instead of a text: a ``messages`` column of
``{"role", "content"}`` objects (a JSON string in a CSV). It is evaluated as
the text of the messages the default scanning policy reads (user turns, tool
results and documents), in order, joined by blank lines and windowed like any
long prompt, and its position is the most indirect one it holds (a tool
result, else a document, else a user turn). A text row takes its position
from a ``position`` column (``user``, ``tool`` or ``document``; empty: a user
turn), or the column ``--position-field`` names, so that a file of tool
results is evaluated as tool results. ``--assume-position`` places every text
row that has no position of its own: a file of retrieved documents need not
be rewritten to be read as documents.

The columns and the label spellings are options, not guesses: the defaults
(``text``, ``label``) and the label table of :mod:`gatebench.data.labels`
cover common files, and anything else is named by the user. A file that does
not fit fails with the file, the column or line, and the option that fixes
it; a row that does not fit is counted with its file and line, like any
loader's malformed row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatebench.conversation import ConversationError, ScanPolicy, parse_conversation
from gatebench.data.files import Table, read_table
from gatebench.data.labels import LabelColumn
from gatebench.data.loaders._base import LoadResult, RowSink
from gatebench.errors import ConfigError, DataError
from gatebench.types import POSITIONS

__all__ = ["MESSAGES", "FileOptions", "conversation_text", "read_files"]

#: The column that holds a conversation, read when the text column is absent.
MESSAGES = "messages"
#: The column a text row's position is read from unless ``position_field`` names another.
POSITION = "position"

_LABELS = ("attack", "benign")


@dataclass(frozen=True)
class FileOptions:
    """How to read a user's files: columns, label spellings, and the source's name.

    ``assume_label`` (``attack`` or ``benign``) labels every row of a file
    that has no label column, which is then scored for recall or FPR only.
    ``position_field`` names the column of each text row's position (default:
    ``position``, when the file has one); ``assume_position`` is the position
    of a text row without one (default: a user turn). A conversation's
    messages place it, whatever either says.
    """

    text_field: str = "text"
    label_field: str = "label"
    id_field: str | None = None
    group_field: str | None = None
    label_map: dict[str, str] = field(default_factory=dict)
    assume_label: str | None = None
    source_name: str | None = None
    position_field: str | None = None
    assume_position: str | None = None

    def __post_init__(self) -> None:
        for value, label in self.label_map.items():
            if label not in _LABELS:
                raise ConfigError(
                    f"--label-map {value}={label}: the label must be attack or benign"
                )
        if self.assume_label not in (None, *_LABELS):
            raise ConfigError(f"--assume-label {self.assume_label}: use attack or benign")
        if self.assume_position not in (None, *POSITIONS):
            raise ConfigError(
                f"--assume-position {self.assume_position}: use one of {list(POSITIONS)}"
            )
        if self.assume_label and self.label_map:
            raise ConfigError("--label-map reads a label column; --assume-label says there is none")


def _check_columns(table: Table, options: FileOptions) -> None:
    found = ", ".join(map(repr, table.columns)) or "none"

    def need(column: str | None, what: str, fix: str) -> None:
        if column is not None and column not in table.columns:
            raise DataError(
                f"{table.path} has no {what} column {column!r} (columns found: {found}); {fix}"
            )

    if MESSAGES not in table.columns:
        need(
            options.text_field,
            "text",
            f"name the text column with --text-field, or give conversations a {MESSAGES!r} column",
        )
    if options.assume_label is None:
        fix = "name it with --label-field, or pass --assume-label benign (or attack) if it has none"
        need(options.label_field, "label", fix)
    elif options.label_field in table.columns:
        raise DataError(
            f"{table.path} has a label column {options.label_field!r}, but --assume-label "
            f"{options.assume_label} is for files without labels; drop --assume-label to use it"
        )
    need(options.id_field, "id", "name the id column with --id-field, or drop it to number rows")
    need(options.group_field, "group", "name the group column with --group-field, or drop it")
    need(
        options.position_field,
        "position",
        "name the position column with --position-field, or drop it (every row a user turn)",
    )


def _blank(value: Any) -> bool:
    """None, NaN (a columnar file's null) or whitespace: the row has no value there."""
    return value is None or value != value or not str(value).strip()


def _not_utf8(row: dict[str, Any], columns: tuple[str | None, ...]) -> str | None:
    # Undecodable bytes survive reading as lone surrogates; the text column is
    # checked by RowSink, the others here, before they become labels or ids.
    for column in columns:
        value = row.get(column) if column else None
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return column
    return None


def conversation_text(value: Any, where: str) -> tuple[str, str]:
    """A conversation's text as a trace holds it, and its position; ConversationError if unusable.

    The text is the contents of the messages the default policy scans, joined
    by blank lines; the position is the most indirect one among them.
    """
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ConversationError(f"{where}: {MESSAGES!r} is not JSON ({exc})") from None
    conversation = parse_conversation(value, where=MESSAGES)
    policy = ScanPolicy()
    scanned = [m for m in conversation.messages if policy.scans(m.role) and m.content.strip()]
    if not scanned:
        raise ConversationError(
            f"no message of a scanned role ({', '.join(policy.roles)}) has text"
        )
    roles = {m.role for m in scanned}
    position = next((r for r in ("tool", "document") if r in roles), "user")
    return "\n\n".join(m.content for m in scanned), position


def read_files(name: str, root: Path, files: list[Path], options: FileOptions) -> LoadResult:
    """The samples of ``files`` (under ``root``) as source ``name``, and every refused row."""
    sink = RowSink(name, root)
    assumed = None if options.assume_label is None else int(options.assume_label == "attack")
    seen: dict[str, int] = {}
    for path in files:
        table = read_table(path, sink)
        _check_columns(table, options)
        # Ids are unique within a source, so a directory's rows are prefixed by their file.
        prefix = f"{path.relative_to(root)}:" if len(files) > 1 else ""
        labels = LabelColumn(options.label_field, options.label_map)
        wanted = options.position_field or POSITION
        placed = wanted if wanted in table.columns else None
        for line, row in table.rows:
            bad = _not_utf8(row, (options.label_field, options.id_field, options.group_field))
            if bad is not None:
                sink.reject(path, line, f"invalid UTF-8 in column {bad!r}")
                continue
            label = labels.read(row.get(options.label_field), line) if assumed is None else assumed
            if isinstance(label, str):
                sink.reject(path, line, label)
                continue
            raw_id = row.get(options.id_field) if options.id_field else line
            if _blank(raw_id):
                sink.reject(path, line, f"missing id (column {options.id_field!r})")
                continue
            sample_id = f"{prefix}{raw_id}"
            if sample_id in seen:
                sink.reject(
                    path, line, f"duplicate id {raw_id!r} (first on {table.unit} {seen[sample_id]})"
                )
                continue
            group = row.get(options.group_field) if options.group_field else None
            # Group values get their own namespace: a group "7" must not join row id 7.
            parent = None if _blank(group) else f"group:{group}"
            given = None if placed is None or _blank(row.get(placed)) else row.get(placed)
            text, position = row.get(options.text_field), given
            if given is None and options.text_field in table.columns:
                position = options.assume_position
            if options.text_field not in table.columns:
                if given is not None:
                    sink.reject(
                        path,
                        line,
                        f"position {given!r} in column {placed!r} on a conversation: its "
                        "messages' roles place it; leave the position empty",
                    )
                    continue
                try:
                    text, position = conversation_text(row.get(MESSAGES), f"{path}:{line}")
                except ConversationError as exc:
                    sink.reject(path, line, f"conversation: {exc}")
                    continue
            elif given is not None and given not in POSITIONS:
                sink.reject(
                    path,
                    line,
                    f"position {given!r} in column {placed!r} is not one of "
                    f"{list(POSITIONS)}; leave it empty for a user turn",
                )
                continue
            kept = sink.add(
                text,
                label,
                path=path,
                line=line,
                sample_id=sample_id,
                parent_id=parent,
                position=position,
            )
            if kept is not None:
                seen[sample_id] = line
        labels.check(path, table.unit)
    return sink.result
