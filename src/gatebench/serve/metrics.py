"""Prometheus text-format metrics, kept in process (no extra dependency)."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

__all__ = ["ServiceMetrics"]

BUCKETS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)


class _Histogram:
    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS_MS) + 1)
        self.total = 0.0
        self.n = 0

    def observe(self, value: float) -> None:
        i = next((i for i, b in enumerate(BUCKETS_MS) if value <= b), len(BUCKETS_MS))
        self.counts[i] += 1
        self.total += value
        self.n += 1

    def lines(self, name: str, labels: str) -> list[str]:
        out, running = [], 0
        for bound, count in zip([*map(str, BUCKETS_MS), "+Inf"], self.counts, strict=True):
            running += count
            out.append(f'{name}_bucket{{{labels}le="{bound}"}} {running}')
        tail = f"{{{labels.rstrip(',')}}}" if labels else ""
        out.append(f"{name}_sum{tail} {self.total}")
        out.append(f"{name}_count{tail} {self.n}")
        return out


class ServiceMetrics:
    """Request counts, latency histograms per stage, and the deferred rate."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.texts = 0
        self.errors: Counter[int] = Counter()
        self.stages: Counter[str] = Counter()
        self.conversations = 0
        self.messages_scanned = 0
        self.blocks_by_role: Counter[str] = Counter()
        self.request_ms = _Histogram()
        self.stage_ms: dict[str, _Histogram] = {}

    def observe(self, results: list[dict[str, Any]], elapsed_ms: float) -> None:
        with self._lock:
            self.requests += 1
            self.texts += len(results)
            self.request_ms.observe(elapsed_ms)
            for r in results:
                self.stages[r["stage"]] += 1
                if "messages" in r:  # a conversation's result
                    self.conversations += 1
                    self.messages_scanned += r["scanned"]
                    if r.get("decision") == "block":
                        self.blocks_by_role[r["driver"]["role"]] += 1
            for stage, ms in results[0]["timings_ms"].items():
                if stage != "total":
                    self.stage_ms.setdefault(stage, _Histogram()).observe(ms)

    def count_error(self, status: int) -> None:
        with self._lock:
            self.errors[status] += 1

    def render(self) -> str:
        with self._lock:
            deferred = self.stages.get("deferred", 0)
            lines = [
                "# HELP gatebench_requests_total Scoring requests answered.",
                "# TYPE gatebench_requests_total counter",
                f"gatebench_requests_total {self.requests}",
                "# HELP gatebench_texts_total Texts and conversations scored.",
                "# TYPE gatebench_texts_total counter",
                f"gatebench_texts_total {self.texts}",
                "# HELP gatebench_conversations_total Conversations scored.",
                "# TYPE gatebench_conversations_total counter",
                f"gatebench_conversations_total {self.conversations}",
                "# HELP gatebench_messages_scanned_total Messages of conversations scanned.",
                "# TYPE gatebench_messages_scanned_total counter",
                f"gatebench_messages_scanned_total {self.messages_scanned}",
                "# HELP gatebench_conversation_blocks_total Conversations blocked, by the role "
                "of the message that drove the score.",
                "# TYPE gatebench_conversation_blocks_total counter",
                *(
                    f'gatebench_conversation_blocks_total{{role="{r}"}} {n}'
                    for r, n in sorted(self.blocks_by_role.items())
                ),
                "# HELP gatebench_errors_total Requests refused, by HTTP status.",
                "# TYPE gatebench_errors_total counter",
                *(
                    f'gatebench_errors_total{{status="{s}"}} {n}'
                    for s, n in sorted(self.errors.items())
                ),
                "# HELP gatebench_stage_texts_total Texts decided, by cascade stage.",
                "# TYPE gatebench_stage_texts_total counter",
                *(
                    f'gatebench_stage_texts_total{{stage="{s}"}} {n}'
                    for s, n in sorted(self.stages.items())
                ),
                "# HELP gatebench_deferred_ratio Share of texts decided by the deferred stage.",
                "# TYPE gatebench_deferred_ratio gauge",
                f"gatebench_deferred_ratio {deferred / self.texts if self.texts else 0.0}",
                "# HELP gatebench_request_latency_ms Request latency in milliseconds.",
                "# TYPE gatebench_request_latency_ms histogram",
                *self.request_ms.lines("gatebench_request_latency_ms", ""),
                "# HELP gatebench_stage_latency_ms Per-stage scoring latency in milliseconds.",
                "# TYPE gatebench_stage_latency_ms histogram",
            ]
            for stage, hist in sorted(self.stage_ms.items()):
                lines += hist.lines("gatebench_stage_latency_ms", f'stage="{stage}",')
        return "\n".join(lines) + "\n"
