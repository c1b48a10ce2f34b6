"""Shared machinery for loaders: the result type, row validation and safe file readers.

A loader never drops a row silently: every row it cannot use becomes a
:class:`Malformed` record with the file, the line (or element index) and the
reason, and the trace reports them.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatebench.data.cards import DatasetCard
from gatebench.errors import DataError
from gatebench.types import Position, Sample

__all__ = [
    "LoadResult",
    "Loader",
    "Malformed",
    "RowSink",
    "iter_csv",
    "iter_csv_rows",
    "iter_jsonl",
    "read_json",
    "read_parquet",
    "read_text",
]


@dataclass(frozen=True)
class Malformed:
    """A row the loader could not turn into a sample."""

    source: str
    file: str
    line: int
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "file": self.file, "line": self.line, "reason": self.reason}


@dataclass
class LoadResult:
    """What a loader returns: the samples, every row it refused, and what it left out.

    ``excluded`` counts well-formed rows the loader leaves out by design (a
    category whose label does not fit, a weakly labelled file), keyed by reason,
    so that the trace reports them instead of losing them silently.
    """

    samples: list[Sample] = field(default_factory=list)
    malformed: list[Malformed] = field(default_factory=list)
    excluded: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Loader:
    """A registered source: its card and the function that reads its files.

    ``load(root, seed=...)`` receives the source root (mirror folder or hub
    snapshot, both in the upstream layout) and the trace seed, for sources whose
    samples are constructed deterministically.
    """

    card: DatasetCard
    load: Callable[..., LoadResult]


def _has_surrogates(text: str) -> bool:
    # Files are decoded with surrogateescape, so undecodable bytes survive as
    # lone surrogates and can be reported per row instead of failing the file.
    return any("\ud800" <= ch <= "\udfff" for ch in text)


class RowSink:
    """Validates rows and collects samples and malformed records for one source.

    Parameters
    ----------
    source : str
        Source name stamped on every sample and record.
    root : Path
        Source root, so that file names in reports are relative to it.
    position : str or None
        Where the source's texts sit in an agent's input (a
        :class:`~gatebench.types.Position`), stamped on every sample; None for
        a user turn. A row can say otherwise through :meth:`add`.
    """

    def __init__(self, source: str, root: Path, *, position: str | None = None) -> None:
        self.source = source
        self.root = root
        self.position = position
        self.result = LoadResult()

    def _rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    def exclude(self, reason: str, n: int = 1) -> None:
        """Count ``n`` well-formed rows left out by design, under ``reason``."""
        self.result.excluded[reason] = self.result.excluded.get(reason, 0) + n

    def reject(self, path: Path, line: int, reason: str) -> None:
        """Record a row that cannot be used."""
        self.result.malformed.append(Malformed(self.source, self._rel(path), line, reason))

    def add(
        self,
        text: Any,
        label: Any,
        *,
        path: Path,
        line: int,
        sample_id: str,
        parent_id: str | None = None,
        language: str | None = None,
        position: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Sample | None:
        """Validate one row and keep it, or record why it was refused.

        Returns the sample, or ``None`` when the row was malformed.

        Raises
        ------
        DataError
            The row's position (``position``, else the sink's) is not a
            :class:`~gatebench.types.Position`. The loader chose it, not the
            file, so it is a loader's bug and fails loudly instead of being
            counted as a malformed row.
        """
        position = self.position if position is None else position
        if position is not None:
            try:
                position = str(
                    Position.parse(
                        position, f"source {self.source!r}, {self._rel(path)} row {line}"
                    )
                )
            except ValueError as exc:
                raise DataError(str(exc)) from None
        if text is None or (isinstance(text, float) and text != text):
            self.reject(path, line, "missing text")
            return None
        if not isinstance(text, str):
            self.reject(path, line, f"text is {type(text).__name__}, expected a string")
            return None
        if not text.strip():
            self.reject(path, line, "empty or whitespace-only text")
            return None
        if _has_surrogates(text):
            self.reject(path, line, "invalid UTF-8 in text")
            return None
        if isinstance(label, bool) or label not in (0, 1):
            self.reject(path, line, f"unknown label {label!r} (expected 0 or 1)")
            return None
        sample = Sample(
            sample_id=f"{self.source}:{sample_id}",
            text=text,
            label=int(label),
            source=self.source,
            parent_id=None if parent_id is None else f"{self.source}:{parent_id}",
            language=language,
            position=position,
            meta=meta or {},
        )
        self.result.samples.append(sample)
        return sample


def read_text(path: Path) -> str:
    """Read a whole file, keeping undecodable bytes as lone surrogates."""
    try:
        return path.read_bytes().decode("utf-8", errors="surrogateescape")
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc}. Check the data mirror.") from exc


def read_json(path: Path) -> Any:
    """Parse a JSON file; a corrupt or truncated file raises :class:`DataError` naming it."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "the file is corrupt or truncated. "
            "Re-fetch it from the upstream at the pinned revision."
        ) from exc


def iter_jsonl(path: Path, sink: RowSink) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, object)`` for each JSON line; bad lines go to ``sink``.

    A truncated last line is reported as a malformed row, not a crash, because
    every earlier line is still intact.
    """
    for lineno, raw in enumerate(read_text(path).splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            yield lineno, json.loads(raw)
        except json.JSONDecodeError as exc:
            sink.reject(path, lineno, f"invalid JSON line ({exc.msg})")


def _numbered(reader: Any, path: Path) -> Iterator[tuple[int, Any]]:
    """Pair each CSV record with the physical line it starts on; a broken file names itself."""
    try:
        start = reader.line_num + 1
        for record in reader:
            yield start, record
            start = reader.line_num + 1
    except csv.Error as exc:
        raise DataError(
            f"{path} is not a readable CSV file near line {reader.line_num}: {exc}. "
            "Re-fetch it from the upstream at the pinned revision."
        ) from exc


def iter_csv(
    path: Path, sink: RowSink | None = None, **kwargs: Any
) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line_number, row)`` from a CSV file with a header.

    The line number is the physical line where the record starts, so it can be
    found in an editor even when fields span lines. A record with fewer fields
    than the header (a file cut off mid-row, a broken quote) goes to ``sink``
    as malformed instead of loading with its missing fields empty.
    """
    text = read_text(path)
    reader = csv.DictReader(io.StringIO(text, newline=""), **kwargs)
    if reader.fieldnames is None:
        raise DataError(f"{path} is empty; expected a CSV file with a header row.")
    width = len(reader.fieldnames)
    for start, row in _numbered(reader, path):
        if None in row:
            # Extra fields: the row has more columns than the header.
            row.pop(None)
        short = sum(v is None for v in row.values())
        if short and sink is not None:
            sink.reject(
                path,
                start,
                f"row has {width - short} of {width} fields (file cut off mid-row or a "
                "broken quote)",
            )
            continue
        yield start, row


def iter_csv_rows(path: Path, **kwargs: Any) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, fields)`` from a CSV file without a header (a BOM is dropped)."""
    text = read_text(path).removeprefix("\ufeff")
    yield from _numbered(csv.reader(io.StringIO(text, newline=""), **kwargs), path)


def read_parquet(path: Path) -> list[dict[str, Any]]:
    """Read a Parquet file into row dicts; a corrupt file raises :class:`DataError`."""
    import pyarrow.parquet as pq

    try:
        rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
        return rows
    except (OSError, ValueError) as exc:
        raise DataError(
            f"{path} is not a readable Parquet file ({exc}); it is corrupt or truncated. "
            "Re-fetch it from the upstream at the pinned revision."
        ) from exc
