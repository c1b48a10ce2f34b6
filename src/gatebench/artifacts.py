"""The run directory: versioned, self-describing artifacts that reports read.

Layout::

    runs/<timestamp>-<trace id[:8]>-<detector>/
      manifest.json   versions, git commit, resolved config, trace info, seeds, LSH params
      trace_info.json the trace's own report (counts, skipped sources, malformed rows)
      oof.parquet     one row per (pass, prompt); oof.jsonl is the same with fixed floats
      oof_chunks.parquet  per (pass, chunk) scores before max pooling
      folds.json      per-fold sizes, thresholds, label marginals, timings
      result.json     everything the report shows (schema_version)
"""

from __future__ import annotations

import json
import math
import platform
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gatebench.errors import SchemaError
from gatebench.result import SCHEMA_VERSION, EvaluationResult

__all__ = [
    "SCHEMA_VERSION",
    "environment",
    "jsonable",
    "new_run_dir",
    "read_json",
    "read_result",
    "write_json",
    "write_oof",
]

_PACKAGES = (
    "gatebench",
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "scikit-learn",
    "lightgbm",
    "rensa",
    "joblib",
)
OOF_FLOAT_COLUMNS = ("score", "fold_threshold", "train_score")


def new_run_dir(root: Path, trace_id: str, detector: str, *, now: datetime | None = None) -> Path:
    """Create ``root/<UTC timestamp>-<trace id[:8]>-<detector>/`` and return it."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    path = root / f"{stamp}-{trace_id[:8]}-{detector}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).parent,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def environment() -> dict[str, Any]:
    """Versions of Python, the platform, key packages and the git commit."""
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": versions,
        "git_commit": _git_commit(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def jsonable(obj: Any) -> Any:
    """Plain JSON from numpy scalars and arrays, paths and tuples; NaN and inf become None."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating | float):
        value = float(obj)
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, Path):
        return str(obj)
    return obj


def write_json(path: Path, payload: Any) -> None:
    """Write JSON with NaN/inf as ``null`` (strict JSON), sorted keys, atomically."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(jsonable(payload), indent=2, sort_keys=True, allow_nan=False))
    tmp.replace(path)


def read_json(path: Path) -> Any:
    """Read a JSON artifact, naming the file when it is missing or corrupt."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SchemaError(f"cannot read {path}: {exc}. Re-run `gatebench run`.") from exc


def read_result(run_dir: Path) -> EvaluationResult:
    """Load ``result.json``, validated, refusing a schema this version cannot read."""
    path = run_dir / "result.json"
    return EvaluationResult.from_json(read_json(path), path=path)


def _fmt(value: float) -> str:
    # Fixed formatting makes replay diffs byte-exact and human-readable.
    return "null" if value != value else f"{value:.12f}"


def write_oof(run_dir: Path, oof: pd.DataFrame, chunks: pd.DataFrame | None = None) -> None:
    """Write the OOF table as Parquet and as JSONL with fixed float formatting."""
    oof.to_parquet(run_dir / "oof.parquet", index=False)
    if chunks is not None:
        chunks.to_parquet(run_dir / "oof_chunks.parquet", index=False)
    columns = list(oof.columns)
    with (run_dir / "oof.jsonl").open("w", encoding="utf-8") as fh:
        for row in oof.itertuples(index=False):
            parts = []
            for col, value in zip(columns, row, strict=True):
                if col in OOF_FLOAT_COLUMNS:
                    text = _fmt(float(value))
                elif value is None or (isinstance(value, float) and value != value):
                    text = "null"
                else:
                    text = json.dumps(value.item() if isinstance(value, np.generic) else value)
                parts.append(f'"{col}":{text}')
            fh.write("{" + ",".join(parts) + "}\n")
