"""Adapter failures and truncation, joined back to a run (error-rate column).

The adapter's audit ledger is keyed by text hash; the run's chunk table is
keyed by row id. The join uses a ``text_sha256`` column of
``oof_chunks.parquet`` when the run has one, else the trace itself (the run's
``trace_dir``, or the trace cache named by its id).

With failures present, the headline numbers are recomputed twice from the
chunk scores, the failed chunks scored 1 (failure counted as a flag) and 0
(counted as a pass), max-pooled to prompts and re-thresholded by the run's
own rule (max F1 s.t. pooled FPR <= tau), so the reader sees how much the
failures move the result either way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gatebench.compare._metrics import metric_at
from gatebench.detectors.adapters import ADAPTERS
from gatebench.detectors.adapters._audit import AuditSummary, audit_root, read_audit
from gatebench.rundata import HEADLINE_PASS, RunData
from gatebench.threshold import select_operating_point

__all__ = ["failure_report", "find_audit"]


def find_audit(run: RunData) -> AuditSummary | None:
    """The run's adapter ledger: ``RUN/audit/NAME``, the ``audit_dir`` param, or the default."""
    name = run.detector
    candidates = [run.run_dir / "audit" / name]
    if run.params.get("audit_dir"):
        candidates.append(Path(str(run.params["audit_dir"])) / name)
    candidates.append(audit_root() / name)
    for c in candidates:
        if (c / "meta.json").is_file():
            return read_audit(c)
    return None


def _chunk_hashes(run: RunData) -> pd.DataFrame | None:
    path = run.run_dir / "oof_chunks.parquet"
    if not path.is_file():
        return None
    chunks = pd.read_parquet(path)
    chunks = chunks[chunks["pass"] == HEADLINE_PASS]
    if "text_sha256" in chunks:
        return chunks
    manifest = run.run_dir / "manifest.json"
    config = json.loads(manifest.read_text()).get("config", {}) if manifest.is_file() else {}
    folders = []
    if config.get("trace_dir"):
        folders.append(Path(config["trace_dir"]))
    cache = Path(config.get("cache_dir") or ".cache/gatebench")
    folders.append(cache / f"trace-{run.trace_id[:16]}")
    for folder in folders:
        if (folder / "trace.parquet").is_file():
            trace = pd.read_parquet(folder / "trace.parquet", columns=["row_id", "text_sha256"])
            return chunks.merge(trace, on="row_id", how="left")
    return None


def _headline(chunks: pd.DataFrame, prompts: pd.DataFrame, tau: float) -> dict[str, Any]:
    pooled = chunks.groupby("sample_id")["score"].max()
    p = prompts.set_index("sample_id")
    s = pooled.reindex(p.index).to_numpy()
    y = p["label"].to_numpy()
    op = select_operating_point(y, s, max_fpr=tau)
    return {
        "threshold": op.threshold,
        **{m: metric_at(y, s, op.threshold, m) for m in ("f1", "precision", "recall", "fpr")},
    }


def failure_report(run: RunData) -> dict[str, Any]:
    """Error rate, truncated share and the metrics with failures both ways."""
    audit = find_audit(run)
    n = len(run.prompts)
    if audit is None:
        in_process = run.detector not in ADAPTERS
        return {
            "error_rate": 0.0 if in_process else None,
            "truncated_share": 0.0 if in_process else None,
            "note": "in-process detector: any scoring failure aborts the run"
            if in_process
            else "adapter run without an audit ledger: failures cannot be counted",
        }
    chunks = _chunk_hashes(run)
    if chunks is None or chunks["text_sha256"].isna().any():
        return {
            "error_rate": None,
            "truncated_share": None,
            "ledger": str(audit.folder),
            "note": "cannot join the ledger: no text_sha256 in oof_chunks.parquet and no trace",
        }
    failed = chunks["text_sha256"].isin(set(audit.errors))
    trunc = chunks["text_sha256"].isin(set(audit.truncated))
    failed_p = chunks.loc[failed, "sample_id"].unique()
    trunc_p = chunks.loc[trunc, "sample_id"].unique()
    per_source = (
        run.prompts.assign(truncated=run.prompts["sample_id"].isin(trunc_p))
        .groupby("source")["truncated"]
        .mean()
    )
    out: dict[str, Any] = {
        "ledger": str(audit.folder),
        "graded": audit.meta.get("graded", True),
        "truncation_limit": audit.meta.get("truncation"),
        "n_prompts": n,
        "n_failed": len(failed_p),
        "error_rate": len(failed_p) / n,
        "n_truncated": len(trunc_p),
        "truncated_share": len(trunc_p) / n,
        "truncated_share_by_source": {k: float(v) for k, v in per_source.items() if v > 0},
        "examples": sorted(set(audit.errors.values()))[:5],
    }
    if len(failed_p):
        tau = run.target_fpr
        for way, value in (("as_flag", 1.0), ("as_pass", 0.0)):
            changed = chunks.assign(score=np.where(failed, value, chunks["score"]))
            out[way] = _headline(changed, run.prompts, tau)
    return out
