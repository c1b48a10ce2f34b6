"""Synthetic run directories and published tables for the comparison tests."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

HEADER = [
    "system",
    "dataset",
    "metric",
    "value",
    "fpr",
    "n",
    "source",
    "table",
    "date",
    "self_eval",
    "notes",
]


def write_run(
    folder: Path,
    sources: dict[str, tuple[list[int], list[float]]],
    *,
    threshold: float,
    detector: str = "toy",
    params: dict[str, Any] | None = None,
    trace_id: str = "t" * 64,
    seed: int = 7,
    by_source: dict[str, dict[str, Any]] | None = None,
    chunks: pd.DataFrame | None = None,
) -> Path:
    """Write result.json + oof.parquet (+ oof_chunks.parquet) for ``sources``."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for src, (y, s) in sources.items():
        for i, (lab, sc) in enumerate(zip(y, s, strict=True)):
            rows.append(
                {
                    "pass": "strat",
                    "sample_id": f"{src}:{i}",
                    "source": src,
                    "label": lab,
                    "score": sc,
                    "fold": i % 5,
                }
            )
    oof = pd.DataFrame(rows)
    oof.to_parquet(folder / "oof.parquet", index=False)
    if chunks is not None:
        chunks.to_parquet(folder / "oof_chunks.parquet", index=False)
    primary = {}
    for src, (y, _) in sources.items():
        primary[src] = "recall" if min(y) == 1 else ("oda" if max(y) == 0 else "f1")
    op = {"threshold": threshold, "target_fpr": 0.01, "rule": "max F1 s.t. pooled FPR <= tau"}
    micro = {"f1": 0.5, "fpr": 0.01}
    result = {
        "schema_version": "1.0",
        "run_dir": folder.name,
        "operating_point": op,
        "natural_point": {**op, "target_fpr": None, "rule": "max_f1"},
        "fold_median_threshold": threshold,
        "config": {"seed": seed, "fpr": 0.01, "folds": 5, "bootstrap": 200, "passes": ["strat"]},
        "detector": {"name": detector, "params": params or {}},
        "trace": {"trace_id": trace_id, "n_prompts": len(rows), "n_rows": len(rows), "labels": {}},
        "by_source": [
            {
                "source": src,
                "n": len(sources[src][0]),
                "primary_metric": primary[src],
                **(by_source or {}).get(src, {}),
            }
            for src in sources
        ],
        "metrics": {"headline": {"threshold": threshold, "micro": micro, "macro": {}}},
        "passes": {},
        "latency_ms": {"p50": 1.0, "p95": 2.0, "n": 10},
    }
    (folder / "result.json").write_text(json.dumps(result))
    return folder


def write_table(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write a competitor CSV; missing fields are blank."""
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=HEADER)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in HEADER})
    return path


def pub(system: str, dataset: str, metric: str, value: float, **kw: Any) -> dict[str, Any]:
    """One published row with sensible defaults."""
    return {
        "system": system,
        "dataset": dataset,
        "metric": metric,
        "value": value,
        "source": kw.pop("source", "paper"),
        "table": kw.pop("table", "T1"),
        "self_eval": kw.pop("self_eval", 0),
        **kw,
    }


@pytest.fixture
def table(tmp_path: Path) -> Callable[[list[dict[str, Any]]], Path]:
    """Write a competitor CSV from row dicts (see :func:`pub`)."""
    counter = iter(range(1000))
    return lambda rows: write_table(tmp_path / f"table{next(counter)}.csv", rows)


@pytest.fixture
def row() -> Callable[..., dict[str, Any]]:
    """Build one published row: ``row(system, dataset, metric, value, **fields)``."""
    return pub


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    counter = iter(range(1000))

    def make(sources: dict[str, tuple[list[int], list[float]]], **kw: Any) -> Path:
        return write_run(tmp_path / f"run{next(counter)}", sources, **kw)

    return make


@pytest.fixture
def balanced() -> tuple[list[int], list[float]]:
    """20 attacks and 20 benign prompts with known ordering.

    Attacks score 0.95, 0.9, ..., 0.0 (step 0.05); benign score 0.62 and
    0.61 (two), then 0.30 down. At threshold 0.7: TP 6, FP 0 (recall 0.3).
    """
    pos = [round(0.95 - 0.05 * i, 2) for i in range(20)]
    neg = [0.62, 0.61] + [round(0.30 - 0.01 * i, 2) for i in range(18)]
    return [1] * 20 + [0] * 20, pos + neg


def rng_scores(n_pos: int, n_neg: int, seed: int = 0) -> tuple[list[int], list[float]]:
    rng = np.random.default_rng(seed)
    s = np.r_[rng.beta(5, 2, n_pos), rng.beta(2, 5, n_neg)].round(3)
    return [1] * n_pos + [0] * n_neg, s.tolist()
