"""Pareto data (F1 vs FPR) and latency rows.

Global view (report Figure 17): one point per system, from third-party rows that
publish F1 *and* FPR on the same row (self-evaluations, secondary
reproductions and composite rows are left out), averaged within each
benchmark first and then across benchmarks, so each benchmark counts once.
Our points are the run's micro F1/FPR at the headline and natural thresholds.
Marker size can use the system's mean published latency.

Per-dataset view (report Figure 16): one point per (system x dataset) with whatever
of F1 / FPR / recall / precision the row publishes, plus ours per dataset.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from gatebench.compare._metrics import metric_at
from gatebench.compare.published import LATENCY_METRIC, PublishedTable
from gatebench.rundata import RunData

__all__ = ["global_pareto", "latency_rows", "per_dataset_pareto"]


def latency_rows(table: PublishedTable) -> list[dict[str, Any]]:
    """Per system: mean / min / max / count of published latencies, and the rows.

    Values mix hardware, batch sizes and network round trips; they are not
    comparable across sources (the notes say which).
    """
    by: dict[str, list[Any]] = defaultdict(list)
    for r in table.rows:
        if r.metric == LATENCY_METRIC:
            by[r.system].append(r)
    out = []
    for system, rows in sorted(by.items()):
        v = np.array([r.value for r in rows])
        out.append(
            {
                "system": system,
                "mean_ms": float(v.mean()),
                "min_ms": float(v.min()),
                "max_ms": float(v.max()),
                "n": len(rows),
                "self_eval": any(r.self_eval for r in rows),
                "rows": [
                    {"dataset": r.dataset, "ms": r.value, "source": r.source, "notes": r.notes}
                    for r in rows
                ],
            }
        )
    return out


def global_pareto(run: RunData, table: PublishedTable) -> dict[str, Any]:
    """Per-system mean F1 and FPR (within benchmark, then across) plus our two points."""
    per: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for r in table.rows:
        if (
            r.metric == "f1"
            and r.fpr is not None
            and not r.self_eval
            and not r.secondary
            and not r.composite
        ):
            per[r.system][r.dataset].append((r.value, r.fpr))
    latency = {row["system"]: row["mean_ms"] for row in latency_rows(table)}
    points = []
    for system, by_ds in sorted(per.items()):
        means = np.array([np.mean(v, axis=0) for v in by_ds.values()])
        points.append(
            {
                "system": system,
                "f1": float(means[:, 0].mean()),
                "fpr": float(means[:, 1].mean()),
                "n_datasets": len(by_ds),
                "datasets": sorted(by_ds),
                "mean_latency_ms": latency.get(system),
            }
        )
    metrics = run.result.metrics
    ours = [
        {
            "system": run.label(),
            "point": name,
            "threshold": metrics[name].threshold,
            "f1": metrics[name].micro.f1,
            "fpr": metrics[name].micro.fpr,
        }
        for name in ("headline", "natural")
        if name in metrics
    ]
    return {
        "competitors": points,
        "ours": ours,
        "rule": "third-party rows with F1 and FPR on the same row; mean within benchmark, "
        "then across benchmarks",
        "note": "our points are micro over the whole trace; competitors' are over the "
        "benchmarks they published on",
    }


def per_dataset_pareto(run: RunData, table: PublishedTable) -> list[dict[str, Any]]:
    """One point per (system x dataset) on the run's datasets, ours included."""
    points: list[dict[str, Any]] = []
    natural = run.result.metrics.get("natural")
    nat = natural.threshold if natural is not None else None
    for source in run.sources():
        rows = table.for_dataset(source)
        y, s = run.dataset(source)
        for name, t in (("headline", run.threshold), ("natural", nat)):
            if t is None:
                continue
            points.append(
                {
                    "system": run.label(),
                    "dataset": source,
                    "point": name,
                    **{m: metric_at(y, s, float(t), m) for m in ("f1", "fpr", "recall")},
                    "self_eval": False,
                }
            )
        by: dict[tuple[str, str, str], dict[str, Any]] = {}
        for r in rows:
            if r.metric == LATENCY_METRIC:
                continue
            key = (r.system, r.source, r.table)
            p = by.setdefault(
                key,
                {
                    "system": r.system,
                    "dataset": source,
                    "point": "published",
                    "self_eval": r.self_eval,
                    "source": r.source,
                },
            )
            p[r.metric] = r.value
            if r.fpr is not None:
                p.setdefault("fpr", r.fpr)
            if r.metric == "oda":
                p.setdefault("fpr", round(1.0 - r.value, 12))
        points.extend(by.values())
    return points
