"""Per-row audit ledger of adapter failures and silent truncation.

A detector's ``score()`` must return one probability per text, so an adapter
whose backend fails on a row has to put *some* number there. The ledger is how
that never becomes a hidden default: every failed or truncated row is written
as one JSON line keyed by the text's hash (:func:`gatebench.text.text_hash`,
the same hash as the trace's ``text_sha256`` column), and the comparison code
joins it back to the run's out-of-fold table to report the error rate, the
metrics with failures counted both ways, and the truncated share.

Layout::

    <audit root>/<detector name>/meta.json      what the adapter is and does
    <audit root>/<detector name>/<pid>.jsonl    one line per failed/truncated row

One file per process keeps concurrent fold workers from interleaving lines.
The audit root is, in order: the adapter's ``audit_dir`` parameter,
``$GATEBENCH_AUDIT_DIR``, ``.cache/gatebench/audit``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gatebench.errors import SchemaError

__all__ = [
    "AUDIT_ENV",
    "AuditLedger",
    "AuditSummary",
    "RowRecord",
    "audit_dir",
    "audit_root",
    "read_audit",
]

AUDIT_ENV = "GATEBENCH_AUDIT_DIR"
DEFAULT_AUDIT_ROOT = Path(".cache/gatebench/audit")


def audit_root(audit_dir: str | os.PathLike[str] | None = None) -> Path:
    """The audit root: ``audit_dir``, else ``$GATEBENCH_AUDIT_DIR``, else the cache default."""
    if audit_dir:
        return Path(audit_dir)
    env = os.environ.get(AUDIT_ENV)
    return Path(env) if env else DEFAULT_AUDIT_ROOT


@dataclass(frozen=True, slots=True)
class RowRecord:
    """One audited row.

    Attributes
    ----------
    sha256 : str
        :func:`gatebench.text.text_hash` of the scored text.
    error : str or None
        ``"ExceptionType: message"`` when the backend failed on this row.
    fallback : float or None
        The score written in place of the failed one (the adapter's ``on_error``).
    truncated : bool
        True when the backend saw only a prefix of the text.
    """

    sha256: str
    error: str | None = None
    fallback: float | None = None
    truncated: bool = False

    def as_dict(self) -> dict[str, Any]:
        """Plain dict, one ledger line."""
        return {
            "sha256": self.sha256,
            "error": self.error,
            "fallback": self.fallback,
            "truncated": self.truncated,
        }


class AuditLedger:
    """Append-only writer of one adapter's audit records in this process.

    Parameters
    ----------
    detector : str
        Registry name of the adapter; the ledger folder is named after it.
    meta : dict
        What the adapter is (parameters, graded or boolean-only, truncation
        limit); written once to ``meta.json``.
    audit_dir : path, optional
        Audit root (see the module docstring).
    """

    def __init__(
        self, detector: str, meta: dict[str, Any], audit_dir: str | os.PathLike[str] | None = None
    ) -> None:
        self.folder = audit_root(audit_dir) / detector
        self._meta = meta
        self._lock = threading.Lock()
        self._started = False

    def _start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        meta_path = self.folder / "meta.json"
        tmp = meta_path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self._meta, indent=2, sort_keys=True, default=str))
        tmp.replace(meta_path)
        self._started = True

    def write(self, records: Iterable[RowRecord]) -> int:
        """Append ``records``; returns how many lines were written."""
        lines = [json.dumps(r.as_dict(), sort_keys=True) for r in records]
        if not lines:
            return 0
        with self._lock:
            if not self._started:
                self._start()
            with (self.folder / f"{os.getpid()}.jsonl").open("a", encoding="utf-8") as fh:
                fh.write("\n".join(lines) + "\n")
        return len(lines)

    def set_meta(self, meta: dict[str, Any]) -> None:
        """Rewrite ``meta.json`` when ``meta`` changed (e.g. an API turned out boolean-only)."""
        with self._lock:
            if meta != self._meta:
                self._meta = meta
                self._start()

    def touch(self) -> None:
        """Write ``meta.json`` even when no row was ever flagged (a clean run is evidence too)."""
        with self._lock:
            if not self._started:
                self._start()


@dataclass(frozen=True)
class AuditSummary:
    """Everything a ledger folder holds, merged over processes.

    Attributes
    ----------
    folder : Path
        Where it was read from.
    meta : dict
        The adapter's ``meta.json`` (empty when absent).
    errors : dict
        sha256 -> error message (the last one seen).
    truncated : frozenset of str
        sha256 of the rows the backend saw only partly.
    """

    folder: Path
    meta: dict[str, Any]
    errors: dict[str, str]
    truncated: frozenset[str]


def read_audit(folder: str | os.PathLike[str]) -> AuditSummary:
    """Merge every ``*.jsonl`` ledger in ``folder``.

    A row that failed in one call and succeeded in a later one (a retried
    HTTP call that came back) still counts as failed once: the run used the
    fallback score the first time, and checkpoints kept it.

    Raises
    ------
    SchemaError
        When a line is not a JSON object with a ``sha256`` string, naming the
        file and line.
    """
    path = Path(folder)
    meta: dict[str, Any] = {}
    if (path / "meta.json").is_file():
        meta = json.loads((path / "meta.json").read_text())
    errors: dict[str, str] = {}
    truncated: set[str] = set()
    for file in sorted(path.glob("*.jsonl")):
        for lineno, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SchemaError(
                    f"{file}:{lineno}: audit line is not JSON ({exc.msg}); "
                    "delete the partial line or the ledger folder and re-run"
                ) from exc
            if not isinstance(rec, dict) or not isinstance(rec.get("sha256"), str):
                raise SchemaError(
                    f"{file}:{lineno}: audit line lacks a 'sha256' string: {line[:120]!r}; "
                    "the ledger was not written by gatebench; remove it"
                )
            if rec.get("error"):
                errors[rec["sha256"]] = str(rec["error"])
            if rec.get("truncated"):
                truncated.add(rec["sha256"])
    return AuditSummary(folder=path, meta=meta, errors=errors, truncated=frozenset(truncated))


@contextmanager
def audit_dir(path: Path) -> Iterator[None]:
    """Point adapters' failure ledgers at ``path`` for the block, unless the user chose a root.

    The variable, not an argument, carries the folder because the adapters
    write from fold worker processes, which inherit the environment.
    """
    if os.environ.get(AUDIT_ENV):
        yield
        return
    os.environ[AUDIT_ENV] = str(path)
    try:
        yield
    finally:
        os.environ.pop(AUDIT_ENV, None)
