"""Labelled conversations from a user's files, for the turn-by-turn evaluation.

A row holds a ``messages`` list, a label (a column, or ``--assume-label``
for a file of one kind), optionally an id and an ``attack_turn``: the index
of the first message that carries the attack, so that detection delay can be
counted from where the attack arrives rather than from the first message. A
row that cannot be used is counted with its file, line and reason, never
dropped silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatebench.conversation import Conversation, ConversationError, parse_conversation
from gatebench.data.files import data_files, read_table
from gatebench.data.labels import LabelColumn
from gatebench.data.loaders._base import Malformed, RowSink
from gatebench.errors import DataError

__all__ = ["ATTACK_TURN", "LabelledConversation", "Rows", "read_conversations"]

#: Optional column: 0-based index of the first message that carries the attack.
ATTACK_TURN = "attack_turn"
MESSAGES = "messages"


@dataclass(frozen=True)
class LabelledConversation:
    """One usable row: its id, conversation, label and (optional) attack turn."""

    id: str
    conversation: Conversation
    label: int
    attack_turn: int | None = None


@dataclass
class Rows:
    """What the files held: usable conversations and refused rows."""

    conversations: list[LabelledConversation] = field(default_factory=list)
    refused: list[Malformed] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def _attack_turn(value: Any, n_messages: int) -> int | str | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        return f"{ATTACK_TURN} {value!r} is not a message index"
    if not 0 <= int(value) < n_messages:
        return f"{ATTACK_TURN} {int(value)} is outside the {n_messages} messages"
    return int(value)


def _messages(value: Any) -> Any:
    # A CSV cell holds the list as JSON text.
    return json.loads(value) if isinstance(value, str) else value


def read_conversations(
    paths: list[Path],
    *,
    label_field: str = "label",
    label_map: dict[str, str] | None = None,
    assume_label: str | None = None,
    id_field: str | None = None,
    max_messages: int | None = None,
) -> Rows:
    """Read every conversation row of ``paths`` (files or directories of them).

    Raises
    ------
    DataError
        A file has no ``messages`` column, or no label column while no
        ``assume_label`` is given, or its label column holds unknown values.
    """
    rows = Rows()
    assumed = None if assume_label is None else int(assume_label == "attack")
    for given in paths:
        root, files = data_files(given)
        for path in files:
            sink = RowSink("conversations", root)
            table = read_table(path, sink)
            rows.files.append(str(path))
            for column, fix in (
                (MESSAGES, "write each conversation as a list of {role, content} objects"),
                (
                    None if assumed is not None else label_field,
                    "name it with --label-field, or pass --assume-label",
                ),
            ):
                if column is not None and column not in table.columns:
                    raise DataError(
                        f"{path} has no {column!r} column (columns found: "
                        f"{', '.join(table.columns) or 'none'}); {fix}"
                    )
            labels = LabelColumn(label_field, label_map or {})
            for line, row in table.rows:
                label = labels.read(row.get(label_field), line) if assumed is None else assumed
                if isinstance(label, str):
                    sink.reject(path, line, label)
                    continue
                try:
                    conv = parse_conversation(
                        _messages(row.get(MESSAGES)), where=MESSAGES, max_messages=max_messages
                    )
                except (ConversationError, ValueError) as exc:
                    sink.reject(path, line, f"conversation: {exc}")
                    continue
                turn = _attack_turn(row.get(ATTACK_TURN), len(conv.messages))
                if isinstance(turn, str):
                    sink.reject(path, line, turn)
                    continue
                raw_id = row.get(id_field) if id_field else None
                ident = f"{path.name}:{line}" if raw_id is None else str(raw_id)
                rows.conversations.append(LabelledConversation(ident, conv, label, turn))
            labels.check(path, table.unit)
            rows.refused += sink.result.malformed
    if not rows.conversations:
        first = "; ".join(f"{m.file}:{m.line}: {m.reason}" for m in rows.refused[:3])
        raise DataError(
            f"no usable conversation in {', '.join(map(str, paths))} "
            f"({len(rows.refused)} rows refused, first: {first or 'none'})"
        )
    return rows
