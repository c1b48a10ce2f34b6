"""Prometheus text-format metrics, kept in process (no extra dependency).

Besides counts and latency, the service reports what it decides: blocks and
allows by kind of input, the score distribution (with the threshold as one
bucket bound), and the benign flag rate the threshold was measured at. A
threshold is chosen on text the model was trained without, and a deployment
is one more source it never saw; on traffic that is mostly benign, a block
rate well above that baseline is the sign that the threshold does not hold
there, and the cue to re-pick it on a sample (``gatebench tune-threshold``).
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gatebench.serve.record import TrafficRecorder

__all__ = ["ServiceMetrics"]

_KINDS = ("text", "conversation")
BUCKETS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
#: Score bucket bounds, finest near the top where thresholds sit; the model's
#: threshold is added to them.
BUCKETS_SCORE = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999)


class _Histogram:
    def __init__(self, bounds: tuple[float, ...] = BUCKETS_MS) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0
        self.n = 0

    def observe(self, value: float) -> None:
        i = next((i for i, b in enumerate(self.bounds) if value <= b), len(self.bounds))
        self.counts[i] += 1
        self.total += value
        self.n += 1

    def lines(self, name: str, labels: str) -> list[str]:
        out, running = [], 0
        for bound, count in zip([*map(str, self.bounds), "+Inf"], self.counts, strict=True):
            running += count
            out.append(f'{name}_bucket{{{labels}le="{bound}"}} {running}')
        tail = f"{{{labels.rstrip(',')}}}" if labels else ""
        out.append(f"{name}_sum{tail} {self.total}")
        out.append(f"{name}_count{tail} {self.n}")
        return out


class ServiceMetrics:
    """Request counts, decisions and scores, latency histograms per stage, the deferred rate.

    Parameters
    ----------
    threshold : float, optional
        The model's operating threshold: a bound of the score buckets, and a gauge.
    shipped_fpr : dict, optional
        :func:`gatebench.modeldir.shipped_fpr` of the model: the baseline gauge.
    recorder : TrafficRecorder, optional
        The traffic recorder, whose lines written and lost are reported.
    """

    def __init__(
        self,
        threshold: float | None = None,
        shipped_fpr: dict[str, Any] | None = None,
        recorder: TrafficRecorder | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self.recorder = recorder
        self.threshold = threshold
        self.shipped_fpr = shipped_fpr
        self.decisions: Counter[tuple[str, str, str]] = Counter()
        bounds = set(BUCKETS_SCORE) | ({float(threshold)} if threshold is not None else set())
        self.scores = {kind: _Histogram(tuple(sorted(bounds))) for kind in _KINDS}
        self.requests = 0
        self.texts = 0
        self.errors: Counter[int] = Counter()
        self.stages: Counter[str] = Counter()
        self.conversations = 0
        self.messages_scanned = 0
        self.blocks_by_role: Counter[str] = Counter()
        self.request_ms = _Histogram()
        self.stage_ms: dict[str, _Histogram] = {}

    def observe(
        self,
        results: list[dict[str, Any]],
        elapsed_ms: float,
        positions: list[str] | None = None,
    ) -> None:
        """Count one answered request: its results, and the texts' positions (None: user)."""
        with self._lock:
            self.requests += 1
            self.texts += len(results)
            self.request_ms.observe(elapsed_ms)
            for i, r in enumerate(results):
                self.stages[r["stage"]] += 1
                if "messages" in r:  # a conversation's result
                    self.conversations += 1
                    self.messages_scanned += r["scanned"]
                    if r.get("decision") == "block":
                        self.blocks_by_role[r["driver"]["role"]] += 1
                    kind, position = "conversation", ""
                else:
                    kind, position = "text", positions[i] if positions else "user"
                self.scores[kind].observe(float(r["score"]))
                if "decision" in r:
                    self.decisions[(kind, position, r["decision"])] += 1
            for stage, ms in results[0]["timings_ms"].items():
                if stage != "total":
                    self.stage_ms.setdefault(stage, _Histogram()).observe(ms)

    def count_error(self, status: int) -> None:
        with self._lock:
            self.errors[status] += 1

    def _baseline(self) -> list[str]:
        if not self.shipped_fpr:
            return []
        on = _label(self.shipped_fpr["measured_on"])
        return [f'gatebench_shipped_fpr{{measured_on="{on}"}} {self.shipped_fpr["value"]}']

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
                "# HELP gatebench_decisions_total Inputs decided, by kind (text or "
                "conversation), a text's position, and decision.",
                "# TYPE gatebench_decisions_total counter",
                *(
                    f'gatebench_decisions_total{{input="{k}",{_position(p)}decision="{d}"}} {n}'
                    for (k, p, d), n in sorted(self.decisions.items())
                ),
                "# HELP gatebench_threshold The operating threshold: block iff score >= it.",
                "# TYPE gatebench_threshold gauge",
                *([f"gatebench_threshold {self.threshold}"] if self.threshold is not None else []),
                "# HELP gatebench_shipped_fpr The benign flag rate the threshold was measured at; "
                "a block rate on mostly benign traffic well above it says the threshold does not "
                "hold there.",
                "# TYPE gatebench_shipped_fpr gauge",
                *self._baseline(),
                "# HELP gatebench_score Scores of texts and conversations, by kind of input.",
                "# TYPE gatebench_score histogram",
                *(
                    line
                    for kind in _KINDS
                    for line in self.scores[kind].lines("gatebench_score", f'input="{kind}",')
                ),
                "# HELP gatebench_recorded_total Inputs written to the traffic files, by file.",
                "# TYPE gatebench_recorded_total counter",
                *(
                    f'gatebench_recorded_total{{file="{kind}"}} {n}'
                    for kind, n in (self.recorder.counts.items() if self.recorder else ())
                ),
                "# HELP gatebench_record_errors_total Inputs the traffic files could not take "
                "(the answer was sent; only the copy is lost), by file.",
                "# TYPE gatebench_record_errors_total counter",
                *(
                    f'gatebench_record_errors_total{{file="{kind}"}} {n}'
                    for kind, n in (self.recorder.failed.items() if self.recorder else ())
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


def _position(position: str) -> str:
    """A text's position label; a conversation's messages carry their own roles."""
    return f'position="{position}",' if position else ""


def _label(value: str) -> str:
    """A label value escaped as the exposition format asks (backslash, quote, newline)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
