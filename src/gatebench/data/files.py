"""A user's files: which data files a path names, and their rows, whatever the format.

A path is a ``.jsonl``, ``.csv`` or ``.parquet`` file, a directory of them, or
a Hugging Face ``datasets`` directory written by ``save_to_disk`` (one dataset
or a ``DatasetDict`` of splits). The arrow files of the latter are read with
pyarrow directly, so reading a saved dataset does not need ``datasets``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gatebench.data.loaders._base import RowSink, iter_csv, iter_jsonl, read_parquet
from gatebench.errors import DataError

__all__ = ["SUFFIXES", "Table", "data_files", "read_table"]

SUFFIXES = (".jsonl", ".csv", ".parquet")
_KINDS = "a .jsonl, .csv or .parquet file, a directory of them, or a save_to_disk directory"


@dataclass(frozen=True)
class Table:
    """One file's rows as ``(line, row)`` and the columns seen in any row.

    ``line`` is the physical line for JSONL and CSV and the 1-based row for
    columnar files, which is what a user looks up (``unit`` says which).
    """

    path: Path
    columns: list[str]
    rows: list[tuple[int, dict[str, Any]]]
    unit: str


def data_files(path: Path) -> tuple[Path, list[Path]]:
    """The root and the data files ``path`` names, in reading order."""
    if path.is_file():
        if path.suffix.lower() not in SUFFIXES:
            raise DataError(f"{path}: cannot read {path.suffix or 'this'} files; give {_KINDS}")
        return path.parent, [path]
    if (path / "dataset_dict.json").is_file():
        splits = _json(path / "dataset_dict.json").get("splits", [])
        return path, [f for split in splits for f in _arrow_files(path / str(split))]
    if (path / "state.json").is_file():
        return path, _arrow_files(path)
    files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES)
    if not files:
        found = ", ".join(sorted(p.name for p in path.iterdir())[:10]) or "nothing"
        raise DataError(f"{path} holds no data file (found: {found}); give {_KINDS}")
    return path, files


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} is not readable JSON ({exc}); save the dataset again") from exc
    return data if isinstance(data, dict) else {}


def _arrow_files(folder: Path) -> list[Path]:
    # state.json lists the shards in order; an older or hand-made copy may lack it.
    state = _json(folder / "state.json") if (folder / "state.json").is_file() else {}
    names = [str(f.get("filename")) for f in state.get("_data_files", []) if isinstance(f, dict)]
    files = [folder / n for n in names] if names else sorted(folder.glob("*.arrow"))
    if not files or not all(f.is_file() for f in files):
        raise DataError(
            f"{folder}: the arrow files of the saved dataset are missing; save it again"
        )
    return files


def read_table(path: Path, sink: RowSink) -> Table:
    """Read one data file; unparseable lines go to ``sink``, a file without rows is an error."""
    before = len(sink.result.malformed)
    suffix = path.suffix.lower()
    rows: list[tuple[int, dict[str, Any]]] = []
    if suffix == ".jsonl":
        for line, obj in iter_jsonl(path, sink):
            if isinstance(obj, dict):
                rows.append((line, obj))
            else:
                sink.reject(path, line, f"expected a JSON object, got {type(obj).__name__}")
    elif suffix == ".csv":
        # Spreadsheets write a byte-order mark, which would stick to the first column's name.
        rows = [
            (n, {k.removeprefix("\ufeff"): v for k, v in r.items()})
            for n, r in iter_csv(path, sink)
        ]
    else:
        data = read_parquet(path) if suffix == ".parquet" else _read_arrow(path)
        rows = list(enumerate(data, start=1))
    if not rows and len(sink.result.malformed) == before:
        raise DataError(f"{path} is empty: no rows; write one row per sample, or remove the file")
    columns = list(dict.fromkeys(k for _, row in rows for k in row))
    return Table(path, columns, rows, "line" if suffix in (".jsonl", ".csv") else "row")


def _read_arrow(path: Path) -> list[dict[str, Any]]:
    import pyarrow as pa

    # save_to_disk writes the IPC stream format; accept the file format as well.
    for open_ipc in (pa.ipc.open_stream, pa.ipc.open_file):
        try:
            with pa.OSFile(str(path)) as fh:
                rows: list[dict[str, Any]] = open_ipc(fh).read_all().to_pylist()
                return rows
        except (OSError, ValueError):
            continue
    raise DataError(f"{path} is not a readable arrow file; it is corrupt or truncated")
