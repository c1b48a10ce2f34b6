"""Streaming readers and writers for bulk scoring: never the whole file in memory.

Inputs are Parquet (read one record batch at a time with
:meth:`pyarrow.parquet.ParquetFile.iter_batches`) or JSON Lines (read line by
line). Each yields :class:`Partition` objects of at most ``batch_rows`` rows.
A row is a text or a conversation: a JSONL row with the text key is a text,
one with the messages key (and no text key) is a conversation; a Parquet file
with the text column holds texts, otherwise its messages column
(``list<struct<role, content>>``) holds conversations. A text row may carry
its position (``user``, ``tool`` or ``document``; null or absent: a user
turn), so that a detector with a data guard reads a tool result as the
service does. Conversations are kept
as read and checked by the worker, so a bad one is a rejected row, not a
failed run. Structural problems (neither key nor column, a non-string text
column, a line that is not a JSON object) stop the run with a
:class:`~gatebench.errors.DataError` naming the file, the row or line, the bad
value and the fix. Rows whose text is null or empty are not errors: they are
kept, marked with a reason, counted and reported, never dropped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from gatebench.errors import ConfigError, DataError
from gatebench.types import POSITIONS

__all__ = [
    "OUTPUT_SCHEMA",
    "REJECT_REASONS",
    "Partition",
    "PartitionReader",
    "ResultWriter",
    "file_digest",
    "input_format",
    "reject_reason",
    "summary_path",
]

#: Why a row was not scored. Every rejected row stays in the output with its reason.
REJECT_REASONS = {
    "null": "the text is null",
    "not_string": "the text is a number, boolean, list or object, not a string",
    "empty": "the text is empty or only whitespace",
    "lone_surrogate": "the text holds a lone UTF-16 surrogate (not valid Unicode)",
    "bad_conversation": "the messages are not a valid conversation (the error says why)",
    "nothing_to_scan": "no message of a scanned role has text",
    "bad_position": (
        "the position is not user, tool, document or null, or it is on a conversation "
        "(whose roles place its messages)"
    ),
}

#: Columns of the per-row output, one row per input row, in input order.
OUTPUT_SCHEMA = pa.schema(
    [
        pa.field("row", pa.int64(), nullable=False),
        pa.field("id", pa.string()),
        pa.field("text_hash", pa.string()),
        pa.field("score", pa.float64()),
        pa.field("flagged", pa.bool_()),
        pa.field("n_chunks", pa.int32()),
        pa.field("message", pa.int32()),
        pa.field("role", pa.string()),
        pa.field("rejected", pa.string()),
    ]
)

_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl"}
_STRING_TYPES = (pa.types.is_string, pa.types.is_large_string)


@dataclass(frozen=True)
class Partition:
    """A run of consecutive input rows, the unit of work sent to a worker.

    Attributes
    ----------
    index : int
        Partition number, 0-based, in input order.
    start_row : int
        0-based input row of the first text; row ``start_row + i`` is ``texts[i]``.
    texts : list of str or None
        The text column; None where the value is null and for a conversation row.
    ids : list of str or None
        The id column as strings (None where absent or null).
    lines : list of int, optional
        1-based line number of each row (JSONL only; blank lines are skipped).
    not_string : frozenset of int
        Rows (0-based within the partition) whose text was a JSON value other
        than a string or null; their ``texts`` entry is None. A JSONL file has
        no column type, so such a row is one bad row, rejected like a null,
        not a bad file.
    conversations : dict of int to object
        Conversation rows (0-based within the partition) and their messages
        value as read (decoded JSON, or Parquet structs as Python lists of
        dicts), not yet checked: the worker parses them.
    messages_field : str
        The key or column the conversations came from, to name in errors.
    positions : list, optional
        Each row's position value as read (None where absent or null), not
        yet checked; None when the input has no position field.
    default_position : str
        The position of a text row that has none of its own.
    """

    index: int
    start_row: int
    texts: list[str | None]
    ids: list[str | None]
    lines: list[int] | None = None
    not_string: frozenset[int] = frozenset()
    conversations: dict[int, object] = field(default_factory=dict)
    messages_field: str = "messages"
    positions: list[object] | None = None
    default_position: str = "user"

    def __len__(self) -> int:
        return len(self.texts)

    def reasons(self) -> list[str | None]:
        """Each text row's :data:`REJECT_REASONS` key, or None when it can be scored.

        Conversation rows get None here: the worker checks them when it parses them.
        """
        conv = self.conversations
        out = [
            None if i in conv else ("not_string" if i in self.not_string else reject_reason(t))
            for i, t in enumerate(self.texts)
        ]
        for i, value in enumerate(self.positions or ()):
            if value is None or out[i] is not None:
                continue
            if i in conv or value not in POSITIONS:
                out[i] = "bad_position"
        return out

    def text_positions(self) -> list[str]:
        """Each row's position for the detector (``default_position`` where none is given).

        Only meaningful for rows :meth:`reasons` accepts.
        """
        values = self.positions or [None] * len(self.texts)
        return [v if v in POSITIONS else self.default_position for v in values]


def reject_reason(text: str | None) -> str | None:
    """Why ``text`` cannot be scored (a key of :data:`REJECT_REASONS`), or None.

    Examples
    --------
    >>> [reject_reason(t) for t in ("hi", "  ", None, "a\\ud800")]
    [None, 'empty', 'null', 'lone_surrogate']
    """
    if text is None:
        return "null"
    if not text.strip():
        return "empty"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "lone_surrogate"
    return None


def input_format(path: Path) -> str:
    """``"parquet"`` or ``"jsonl"`` from the file name; a clear error otherwise."""
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ConfigError(
            f"{path}: cannot tell the input format from the suffix {path.suffix!r}; "
            "use a .parquet or .jsonl file (one JSON object per line)"
        )
    if not path.is_file():
        raise DataError(f"{path}: no such file; pass an existing .parquet or .jsonl file")
    return fmt


def _check_batch_rows(batch_rows: int) -> None:
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise ConfigError(f"--batch-rows {batch_rows!r} is invalid; use a positive row count")


def _holds_strings(kind: pa.DataType) -> bool:
    """Whether a Parquet column of type ``kind`` holds strings (or only nulls)."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return any(check(kind) for check in _STRING_TYPES) or pa.types.is_null(kind)


def _id_string(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return str(value)


class PartitionReader:
    """Iterate over the input in partitions of at most ``batch_rows`` rows.

    Parameters
    ----------
    path : Path
        A ``.parquet`` or ``.jsonl`` file.
    text_field : str
        Column (Parquet) or key (JSONL) holding the text.
    messages_field : str
        Column or key holding a conversation (a list of ``{role, content}``
        messages), read where there is no text column or key.
    id_field : str, optional
        Column or key holding a row id. When omitted, ``id`` is used if present.
    position_field : str, optional
        Column or key holding a text row's position. When omitted,
        ``position`` is used if present. A JSONL row without the key, and a
        null, is at ``assume_position``.
    assume_position : str
        The position of a text row without one of its own: ``user`` (the
        default), ``tool`` or ``document``.
    batch_rows : int
        Rows per partition; bounds the memory a partition takes.

    Attributes
    ----------
    format : str
        ``"parquet"`` or ``"jsonl"``.
    rows : int
        Rows yielded so far.
    blank_lines : int
        Blank JSONL lines skipped so far (they are not rows).
    position_column : str or None
        The column or key positions were read from so far (None: no row had one).

    Raises
    ------
    ConfigError
        ``assume_position`` is not a position.
    DataError
        While iterating: neither the text nor the messages field is there, a
        text column is not strings, a messages column is not lists, or a JSONL
        line is not a JSON object; the message names the file, row or line and
        the value.
    """

    def __init__(
        self,
        path: Path,
        *,
        text_field: str = "text",
        messages_field: str = "messages",
        id_field: str | None = None,
        position_field: str | None = None,
        assume_position: str = "user",
        batch_rows: int = 10_000,
    ) -> None:
        _check_batch_rows(batch_rows)
        if assume_position not in POSITIONS:
            raise ConfigError(f"--assume-position {assume_position}: use one of {list(POSITIONS)}")
        self.assume_position = assume_position
        self.path = path
        self.format = input_format(path)
        self.text_field = text_field
        self.messages_field = messages_field
        self.id_field = id_field
        self.position_field = position_field
        self.batch_rows = batch_rows
        self.rows = 0
        self.blank_lines = 0
        self.position_column: str | None = None

    def __iter__(self) -> Iterator[Partition]:
        parts = self._parquet() if self.format == "parquet" else self._jsonl()
        for part in parts:
            self.rows += len(part)
            yield part

    def _parquet(self) -> Iterator[Partition]:
        path, text_field = self.path, self.text_field
        try:
            # pre_buffer=False: with pre-buffering, pyarrow keeps the read-ahead
            # buffers of the whole file alive while iterating (measured: +1.3 MB per
            # 5,000-row batch of a 1M-row file), so memory would grow with the file.
            pf = pq.ParquetFile(path, pre_buffer=False)
        except (OSError, pa.ArrowException) as exc:
            raise DataError(f"{path}: not a readable Parquet file ({exc}); check the file") from exc
        schema = pf.schema_arrow
        names = schema.names
        if text_field not in names:
            if self.messages_field in names:
                yield from self._parquet_conversations(pf)
                return
            raise DataError(
                f"{path}: no column {text_field!r} (columns: {', '.join(names)}) and no "
                f"column {self.messages_field!r}; name the text column with --text-field, "
                "or a conversation column with --messages-field"
            )
        text_ok = _holds_strings(schema.field(text_field).type)
        id_col = self._parquet_id_column(names)
        pos_col = self._parquet_position_column(schema)
        columns = [text_field] + [c for c in (id_col, pos_col) if c and c != text_field]
        start = 0
        batches = pf.iter_batches(batch_size=self.batch_rows, columns=columns)
        for index, batch in enumerate(batches):
            texts = batch.column(text_field).to_pylist()
            if not text_ok:
                bad = next((i for i, t in enumerate(texts) if t is not None), 0)
                raise DataError(
                    f"{path}: column {text_field!r} has type {schema.field(text_field).type}, "
                    f"not string; row {start + bad} holds {texts[bad]!r:.60}. Store the texts "
                    "as strings or point --text-field at the text column"
                )
            ids: list[str | None] = [None] * len(texts)
            if id_col:
                ids = [_id_string(v) for v in batch.column(id_col).to_pylist()]
            positions = batch.column(pos_col).to_pylist() if pos_col else None
            self.position_column = pos_col
            yield Partition(
                index,
                start,
                texts,
                ids,
                positions=positions,
                default_position=self.assume_position,
            )
            start += len(texts)

    def _parquet_id_column(self, names: list[str]) -> str | None:
        id_field = self.id_field
        if id_field is not None and id_field not in names:
            raise DataError(
                f"{self.path}: no column {id_field!r} for --id-field "
                f"(columns: {', '.join(names)}); name an existing column or omit --id-field"
            )
        return id_field if id_field is not None else ("id" if "id" in names else None)

    def _parquet_position_column(self, schema: pa.Schema) -> str | None:
        """The position column of a file of texts, checked to hold strings."""
        names, field_name = schema.names, self.position_field
        if field_name is not None and field_name not in names:
            raise DataError(
                f"{self.path}: no column {field_name!r} for --position-field "
                f"(columns: {', '.join(names)}); name an existing column or omit --position-field"
            )
        column = field_name if field_name is not None else "position"
        if column not in names:
            return None
        if not _holds_strings(schema.field(column).type):
            raise DataError(
                f"{self.path}: column {column!r} has type {schema.field(column).type}, not "
                f"string; store each text's position as one of {sorted(POSITIONS)} or null"
            )
        return column

    def _parquet_conversations(self, pf: pq.ParquetFile) -> Iterator[Partition]:
        """Partitions of a file whose conversations are in the messages column."""
        path, field_name = self.path, self.messages_field
        schema = pf.schema_arrow
        kind = schema.field(field_name).type
        if not (pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_null(kind)):
            raise DataError(
                f"{path}: column {field_name!r} has type {kind}, not a list of messages; store "
                "each conversation as a list of {role, content} structs, or point "
                "--messages-field at such a column"
            )
        id_col = self._parquet_id_column(schema.names)
        columns = [field_name] + ([id_col] if id_col and id_col != field_name else [])
        start = 0
        batches = pf.iter_batches(batch_size=self.batch_rows, columns=columns)
        for index, batch in enumerate(batches):
            values = batch.column(field_name).to_pylist()
            ids: list[str | None] = [None] * len(values)
            if id_col:
                ids = [_id_string(v) for v in batch.column(id_col).to_pylist()]
            yield Partition(
                index,
                start,
                [None] * len(values),
                ids,
                conversations=dict(enumerate(values)),
                messages_field=field_name,
            )
            start += len(values)

    def _jsonl(self) -> Iterator[Partition]:
        path, text_field, id_field = self.path, self.text_field, self.id_field
        id_key = id_field if id_field is not None else "id"
        pos_key = self.position_field if self.position_field is not None else "position"
        messages_field = self.messages_field
        texts: list[str | None] = []
        ids: list[str | None] = []
        lines: list[int] = []
        not_string: set[int] = set()
        conversations: dict[int, object] = {}
        positions: list[object] = []
        index = start = 0

        def partition() -> Partition:
            return Partition(
                index,
                start,
                texts,
                ids,
                lines,
                frozenset(not_string),
                conversations,
                messages_field,
                positions if any(p is not None for p in positions) else None,
                self.assume_position,
            )

        with path.open("rb") as fh:
            for line_no, raw in enumerate(fh, start=1):
                if not raw.strip():
                    self.blank_lines += 1  # not a row; reported in the summary
                    continue
                row = _json_row(raw, path, line_no, text_field, id_field)
                if text_field in row:
                    text = row[text_field]
                    if text is not None and not isinstance(text, str):
                        not_string.add(len(texts))
                        text = None
                elif messages_field in row:
                    conversations[len(texts)] = row[messages_field]
                    text = None
                else:
                    keys = ", ".join(map(str, row))
                    raise DataError(
                        f"{path}:{line_no}: no {text_field!r} key (keys: {keys}) and no "
                        f"{messages_field!r} key; name the text key with --text-field, "
                        "or the conversation key with --messages-field"
                    )
                texts.append(text)
                ids.append(_id_string(row.get(id_key)))
                positions.append(row.get(pos_key))
                if pos_key in row:
                    self.position_column = pos_key
                lines.append(line_no)
                if len(texts) == self.batch_rows:
                    yield partition()
                    index, start = index + 1, start + len(texts)
                    texts, ids, lines, not_string, conversations = [], [], [], set(), {}
                    positions = []
        if texts:
            yield partition()


def _json_row(
    raw: bytes, path: Path, line_no: int, text_field: str, id_field: str | None
) -> dict[str, Any]:
    """One JSONL line as a JSON object, or a DataError naming the line."""
    raw = raw.rstrip(b"\r\n")
    try:
        row = json.loads(raw)
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path}:{line_no}: line is not valid UTF-8 ({exc.reason} at byte "
            f"{exc.start}); re-encode the file as UTF-8"
        ) from exc
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{path}:{line_no}: invalid JSON ({exc.msg} at character {exc.pos + 1}): "
            f"{raw[:80].decode('utf-8', 'replace')!r}. Write one JSON object per line"
        ) from exc
    if not isinstance(row, dict):
        raise DataError(
            f"{path}:{line_no}: expected a JSON object, got {type(row).__name__} "
            f"{raw[:60].decode('utf-8', 'replace').strip()!r}; write one "
            f'{{"{text_field}": "..."}} object per line'
        )
    if id_field is not None and id_field not in row:
        raise DataError(
            f"{path}:{line_no}: no {id_field!r} key for --id-field "
            f"(keys: {', '.join(map(str, row))}); add it or omit --id-field"
        )
    return row


def file_digest(path: Path, *, chunk_bytes: int = 1 << 20) -> dict[str, Any]:
    """Size and SHA-256 of a file, read in 1 MiB chunks."""
    sha = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk_bytes):
            sha.update(block)
    return {"bytes": path.stat().st_size, "sha256": sha.hexdigest()}


def summary_path(out: Path) -> Path:
    """``OUT.summary.json`` beside ``OUT.parquet``."""
    return out.with_name(f"{out.stem}.summary.json")


class ResultWriter:
    """Append per-row results to a Parquet file, one row group per partition.

    Rows go to ``OUT.partial`` and the file is renamed to ``OUT`` on
    :meth:`close`, so an interrupted run never leaves a truncated ``OUT``.
    """

    def __init__(self, out: Path, schema: pa.Schema = OUTPUT_SCHEMA) -> None:
        out.parent.mkdir(parents=True, exist_ok=True)
        self.out = out
        self._partial = out.with_name(out.name + ".partial")
        self._writer = pq.ParquetWriter(self._partial, schema)
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        """Append one partition's rows."""
        self._writer.write_table(table)
        self.rows += table.num_rows

    def close(self) -> None:
        """Finish the file and move it into place."""
        self._writer.close()
        self._partial.replace(self.out)

    def abort(self) -> None:
        """Drop the partial file after a failure."""
        self._writer.close()
        self._partial.unlink(missing_ok=True)
