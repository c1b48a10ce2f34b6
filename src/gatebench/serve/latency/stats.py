"""Latency statistics: percentiles, the per-stage split, one concurrency level's summary.

The HTTP sweep and the in-process timings both reduce per-request records
(``ms``, ``stage``, the model's ``timings``) to the same figures, so they are
summarised here once and the two reports compare like with like.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["loadavg", "stage_split", "summarize", "summarize_records"]

_PERCENTILES = (50, 95, 99)


def summarize(ms: Sequence[float]) -> dict[str, Any]:
    """``n``, p50/p95/p99, mean, min and max of latencies in milliseconds."""
    a = np.asarray(list(ms), dtype=np.float64)
    if a.size == 0:
        return {"n": 0}
    p = np.percentile(a, _PERCENTILES)
    return {
        "n": int(a.size),
        **{f"p{q}": float(v) for q, v in zip(_PERCENTILES, p, strict=True)},
        "mean": float(a.mean()),
        "min": float(a.min()),
        "max": float(a.max()),
    }


def loadavg() -> list[float] | None:
    """The 1-, 5- and 15-minute load averages: numbers taken under load are upper bounds."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - platforms without getloadavg
        return None


def stage_split(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per deciding stage (fast, deferred, ...): its share, latency and own model time."""
    by: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by.setdefault(r["stage"], []).append(r)
    out = {}
    for stage, rs in sorted(by.items()):
        own = [r["timings"][stage] for r in rs if isinstance(r["timings"].get(stage), int | float)]
        out[stage] = {
            "n": len(rs),
            "share": len(rs) / len(records),
            "latency_ms": summarize([r["ms"] for r in rs]),
            "stage_model_ms": summarize(own),
        }
        if all("cpu_ms" in r for r in rs):
            out[stage]["cpu_ms"] = summarize([r["cpu_ms"] for r in rs])
    return out


def summarize_records(
    records: list[dict[str, Any]], wall_s: float, concurrency: int
) -> dict[str, Any]:
    """One concurrency level's figures from its per-request records."""
    ok = [r for r in records if r["status"] == 200]
    errors = Counter(
        str(r["status"]) if r["status"] is not None else r.get("error", "error")
        for r in records
        if r["status"] != 200
    )
    model = [r["timings"]["total"] for r in ok if "total" in r["timings"]]
    overhead = [r["ms"] - r["timings"]["total"] for r in ok if "total" in r["timings"]]
    server = [r["server_ms"] for r in ok if isinstance(r.get("server_ms"), int | float)]
    return {
        "concurrency": concurrency,
        "requests": len(records),
        "ok": len(ok),
        "errors": sum(errors.values()),
        "errors_by_status": dict(sorted(errors.items())),
        "error_examples": sorted({r["message"] for r in records if r.get("message")})[:5],
        "wall_s": wall_s,
        "throughput_rps": len(ok) / wall_s if wall_s > 0 else None,
        "latency_ms": summarize([r["ms"] for r in ok]),
        "server_ms": summarize(server),
        "model_ms": summarize(model),
        "http_overhead_ms": summarize(overhead),
        "stages": stage_split(ok) if ok else {},
        "samples_ms": [round(r["ms"], 3) for r in ok],
    }
