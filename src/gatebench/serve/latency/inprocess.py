"""In-process timing: scoring without HTTP, one text at a time and in batches.

The same texts go through :class:`~gatebench.served.ServedModel` one at a
time (windowing and stage attribution included, as the service does them)
and through the detector's own ``score`` on batches, so the HTTP sweep's
overhead and the model's batch throughput can be read apart.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from gatebench.serve.latency.stats import loadavg, stage_split, summarize

__all__ = ["inprocess_latency"]


def inprocess_latency(
    served: Any,
    texts: Sequence[str],
    *,
    n_single: int = 300,
    batch_sizes: Sequence[int] = (1, 16, 256),
    batch_texts: int = 512,
) -> dict[str, Any]:
    """Scoring without HTTP.

    ``single``: ``served.score_details([text])`` per text (windowing and stage
    attribution as the service does them), split by stage. ``batches``: the
    detector's own ``score(batch)`` at each batch size, over about
    ``batch_texts`` texts (at least three batches).
    """
    served.score_details(list(texts[:3]))  # warm caches and lazy state
    load_before = loadavg()
    records = []
    for text in texts[:n_single]:
        t0, c0 = time.perf_counter(), time.thread_time()
        r = served.score_details([text])[0]
        ms, cpu = (time.perf_counter() - t0) * 1e3, (time.thread_time() - c0) * 1e3
        records.append({"ms": ms, "cpu_ms": cpu, "stage": r["stage"], "timings": r["timings_ms"]})
    single = {
        "how": "ServedModel.score_details([text]) per text: windowing and stage "
        "attribution included, no HTTP; cpu_ms is the scoring thread's CPU time",
        "latency_ms": summarize([r["ms"] for r in records]),
        "cpu_ms": summarize([r["cpu_ms"] for r in records]),
        "stages": stage_split(records) if records else {},
    }
    batches = []
    for b in batch_sizes:
        k = max(3, -(-batch_texts // b))
        times = []
        for j in range(k):
            batch = [texts[(j * b + i) % len(texts)] for i in range(b)]
            t0 = time.perf_counter()
            served.detector.score(batch)
            times.append((time.perf_counter() - t0) * 1e3)
        per_batch = summarize(times)
        batches.append(
            {
                "batch": b,
                "batches": k,
                "ms_per_batch": per_batch,
                "ms_per_text": per_batch["mean"] / b,
                "texts_per_s": 1e3 * b / per_batch["mean"],
            }
        )
    return {
        "single": single,
        "batches": batches,
        "batch_how": "detector.score(batch), texts not windowed",
        "loadavg": {"before": load_before, "after": loadavg()},
    }
