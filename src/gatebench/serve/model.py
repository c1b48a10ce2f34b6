"""What the service serves: a detector, its operating threshold, and limits."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from gatebench.detectors import check_scores

__all__ = ["ServeSettings", "ServedModel"]


class ServeSettings(BaseModel):
    """Service limits; every one is configurable from ``gatebench serve``."""

    model_config = ConfigDict(frozen=True)

    max_body_bytes: int = Field(2_000_000, ge=1)
    max_batch: int = Field(256, ge=1)
    max_text_chars: int = Field(200_000, ge=1)
    chunk_chars: int = Field(4000, ge=64)
    chunk_overlap: int = Field(400, ge=0)
    body_timeout_s: float = Field(10.0, gt=0)
    score_threads: int = Field(2, ge=1)
    token: str | None = None


class _Scorer(Protocol):
    name: str

    def score(self, texts: Sequence[str]) -> np.ndarray: ...


def windows(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """Character spans of overlapping windows covering ``text`` (one span if it fits)."""
    if len(text) <= size:
        return [(0, len(text))]
    step = size - overlap
    return [(s, min(s + size, len(text))) for s in range(0, len(text) - overlap, step)]


def _has_cascade_stats(detector: object) -> bool:
    stats = getattr(detector, "stats", None)
    needed = {"requests", "fast_exit", "fast_seconds", "deferred_seconds"}
    return isinstance(stats, dict) and needed <= set(stats)


def _stage_ms(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """Per-stage milliseconds between two snapshots of a cascade's counters.

    The deferred stage (and the judge) appear only when a text went there.
    """
    out = {"fast": (after["fast_seconds"] - before["fast_seconds"]) * 1e3}
    if after["fast_exit"] - before["fast_exit"] < after["requests"] - before["requests"]:
        out["deferred"] = (after["deferred_seconds"] - before["deferred_seconds"]) * 1e3
        if after.get("judge_calls", 0) > before.get("judge_calls", 0):
            out["judge"] = (after["judge_seconds"] - before["judge_seconds"]) * 1e3
    return out


class ServedModel:
    """A detector plus the operating threshold it ships with.

    Long texts are cut into windows, every window is scored, and the text
    takes the maximum (the same max pooling the evaluation uses), so an
    injection buried in a long document is neither truncated away nor diluted.

    Parameters
    ----------
    detector : object
        Anything with ``score(texts)``; if it also has ``score_stages(texts)``
        returning ``(scores, stages, stage_ms)``, the stage that decided each
        text and per-stage timings are reported; a cascade that only keeps
        Gate-style ``stats`` counters (``fast_exit``, ``fast_seconds``, ...)
        gets ``fast``/``deferred`` stages read off those counters.
    threshold : float
        Decision threshold (the run's θ_op).
    info : dict
        Model version, trace id, τ, heads: what ``/v1/info`` shows.
    settings : ServeSettings
        Chunking limits.
    """

    def __init__(
        self, detector: _Scorer, threshold: float, info: dict[str, Any], settings: ServeSettings
    ) -> None:
        self.detector = detector
        self.threshold = float(threshold)
        self._info = info
        self.settings = settings
        self._stats_lock = threading.Lock()

    def info(self) -> dict[str, Any]:
        """Description for ``/v1/info``."""
        return {**self._info, "threshold": self.threshold, "detector": self.detector.name}

    def _score_windows(self, texts: list[str]) -> tuple[np.ndarray, list[str], dict[str, float]]:
        staged = getattr(self.detector, "score_stages", None)
        if staged is not None:
            scores, stages, stage_ms = staged(texts)
            return check_scores(self.detector.name, scores, len(texts)), list(stages), stage_ms
        if _has_cascade_stats(self.detector):
            scores, stages, stage_ms = self._stages_from_stats(texts)
            return check_scores(self.detector.name, scores, len(texts)), stages, stage_ms
        t0 = time.perf_counter()
        scores = check_scores(self.detector.name, self.detector.score(texts), len(texts))
        return scores, ["single"] * len(texts), {"single": (time.perf_counter() - t0) * 1e3}

    def _stages_from_stats(
        self, texts: list[str]
    ) -> tuple[np.ndarray, list[str], dict[str, float]]:
        """Stage per text for a cascade that only keeps counters (Gate's ``stats``).

        The counters say how many texts of a call exited fast and how long each
        stage took, not which texts; so a call is attributed under a lock (other
        requests would move the counters too). A batch is scored once; when its
        texts did not all leave by the same stage, each text is scored again on
        its own to learn its stage. A detector with ``score_stages`` skips this.
        """
        det: Any = self.detector
        with self._stats_lock:
            before = dict(det.stats)
            scores = np.asarray(det.score(texts), dtype=np.float64)
            after = dict(det.stats)
            fast = int(after["fast_exit"] - before["fast_exit"])
            if fast in (0, len(texts)):
                stage = "fast" if fast else "deferred"
                return scores, [stage] * len(texts), _stage_ms(before, after)
            stages, parts = [], []
            for i, text in enumerate(texts):
                before = dict(det.stats)
                scores[i] = float(np.asarray(det.score([text]))[0])
                after = dict(det.stats)
                stages.append("fast" if after["fast_exit"] > before["fast_exit"] else "deferred")
                parts.append(_stage_ms(before, after))
        stage_ms: dict[str, float] = {}
        for part in parts:
            for k, v in part.items():
                stage_ms[k] = stage_ms.get(k, 0.0) + v
        return scores, stages, stage_ms

    def score_details(self, texts: Sequence[str]) -> list[dict[str, Any]]:
        """Score texts; one result dict per text (see ``POST /v1/score``)."""
        spans = [windows(t, self.settings.chunk_chars, self.settings.chunk_overlap) for t in texts]
        flat = [t[a:b] for t, sp in zip(texts, spans, strict=True) for a, b in sp]
        t0 = time.perf_counter()
        scores, stages, stage_ms = self._score_windows(flat)
        total = (time.perf_counter() - t0) * 1e3
        out, k = [], 0
        for sp in spans:
            part = scores[k : k + len(sp)]
            best = int(np.argmax(part))
            score = float(part[best])
            out.append(
                {
                    "score": score,
                    "decision": "block" if score >= self.threshold else "allow",
                    "stage": stages[k + best],
                    "chunk": {
                        "index": best,
                        "start": sp[best][0],
                        "end": sp[best][1],
                        "n_chunks": len(sp),
                    },
                    "timings_ms": {**stage_ms, "total": total},
                }
            )
            k += len(sp)
        return out
