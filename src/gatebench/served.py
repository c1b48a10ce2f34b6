"""What a model directory serves: a detector, its operating threshold, and limits.

``gatebench detect`` (:func:`gatebench.api.detect`), bulk scoring and the HTTP
service all score whole texts through :class:`ServedModel`, so it sits below
all three; :mod:`gatebench.serve` re-exports it.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from gatebench.chunking import chunk_spans
from gatebench.conversation import (
    DEFAULT_SCAN_ROLES,
    Conversation,
    ConversationError,
    ScanPolicy,
    score_conversations,
)
from gatebench.detectors import check_scores, score_detector
from gatebench.errors import ConfigError
from gatebench.modeldir import load_model, shipped_fpr, shipped_rule
from gatebench.types import Position, StagedScores

__all__ = ["ServeSettings", "ServedModel", "served_model"]


class ServeSettings(BaseModel):
    """Service limits; every one is configurable from ``gatebench serve``."""

    model_config = ConfigDict(frozen=True)

    max_body_bytes: int = Field(2_000_000, ge=1)
    max_batch: int = Field(256, ge=1)
    max_text_chars: int = Field(200_000, ge=1)
    chunk_chars: int = Field(4000, ge=64)
    chunk_overlap: int = Field(400, ge=0)
    body_timeout_s: float = Field(10.0, gt=0)
    #: Request line and headers together; a larger head gets 431.
    max_header_bytes: int = Field(65_536, ge=1024)
    #: Header fields per request; more get 431.
    max_headers: int = Field(100, ge=1)
    #: From a connection's opening, or a request's first byte, until its head is complete.
    header_timeout_s: float = Field(10.0, gt=0)
    score_threads: int = Field(2, ge=1)
    #: Most texts one scoring call takes when concurrent requests are coalesced.
    batch_texts: int = Field(64, ge=1)
    token: str | None = None
    #: Roles scanned when a conversation's request names none.
    scan_roles: tuple[str, ...] = DEFAULT_SCAN_ROLES
    #: Also score a window across each border of neighbouring same-role scanned messages.
    span_adjacent: bool = True
    #: Messages in one conversation; more get 413.
    max_messages: int = Field(1000, ge=1)
    #: Windows one request's conversations may need scored; more get 413. Many short
    #: messages fit in a small body but each costs a window, so the body limit alone
    #: would let one request hold the scorer for minutes.
    max_windows: int = Field(4096, ge=1)

    @field_validator("scan_roles")
    @classmethod
    def _known_roles(cls, roles: tuple[str, ...]) -> tuple[str, ...]:
        try:
            return ScanPolicy.parse(list(roles), where="scan_roles").roles
        except ConversationError as exc:
            raise ValueError(str(exc)) from None

    @property
    def policy(self) -> ScanPolicy:
        """The scanning policy a conversation gets unless its request sets one."""
        return ScanPolicy(tuple(self.scan_roles), self.span_adjacent)


class _Scorer(Protocol):
    name: str

    def score(self, texts: Sequence[str]) -> np.ndarray: ...


class ServedModel:
    """A detector plus the operating threshold it ships with.

    Long texts are cut into windows (:mod:`gatebench.chunking`, as the trace
    cuts them), every window is scored, and the text
    takes the maximum (the same max pooling the evaluation uses), so an
    injection buried in a long document is neither truncated away nor diluted.

    Parameters
    ----------
    detector : object
        Anything with ``score(texts)``; if it also has ``score_stages(texts)``
        returning ``(scores, stages, stage_ms)``, the stage that decided each
        text and per-stage timings are reported, and with ``score_report``
        (Gate's) the line of a tool result or document that set its score too.
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

    def info(self) -> dict[str, Any]:
        """Description for ``/v1/info``."""
        return {**self._info, "threshold": self.threshold, "detector": self.detector.name}

    def _score_report(self, texts: list[str], positions: list[str] | None = None) -> StagedScores:
        """Scores, stages, per-stage milliseconds, and each window's driving segment."""
        name = self.detector.name
        none: list[str | None] = [None] * len(texts)
        report = getattr(self.detector, "score_report", None)
        if report is not None:
            staged = report(texts, positions=positions)
            scores = check_scores(name, staged.scores, len(texts))
            return StagedScores(scores, list(staged.stages), staged.stage_ms, list(staged.segments))
        stages_of = getattr(self.detector, "score_stages", None)
        if stages_of is not None:
            placed = (
                positions is not None and "positions" in inspect.signature(stages_of).parameters
            )
            scores, stages, stage_ms = (
                stages_of(texts, positions=positions) if placed else stages_of(texts)
            )
            return StagedScores(
                check_scores(name, scores, len(texts)), list(stages), stage_ms, none
            )
        t0 = time.perf_counter()
        raw = score_detector(self.detector, texts, positions)  # type: ignore[arg-type]
        ms = {"single": (time.perf_counter() - t0) * 1e3}
        return StagedScores(check_scores(name, raw, len(texts)), ["single"] * len(texts), ms, none)

    def score_details(
        self, texts: Sequence[str], positions: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """Score texts; one result dict per text (see ``POST /v1/score``).

        ``positions`` (one per text; None: all user turns) reach a detector
        that reads them, every window of a text at the text's position.
        """
        spans = [
            chunk_spans(t, self.settings.chunk_chars, self.settings.chunk_overlap) for t in texts
        ]
        flat = [t[a:b] for t, sp in zip(texts, spans, strict=True) for a, b in sp]
        where = (
            None
            if positions is None
            else [p for p, sp in zip(positions, spans, strict=True) for _ in sp]
        )
        t0 = time.perf_counter()
        staged = self._score_report(flat, where)
        scores, stages, segments = staged.scores, staged.stages, staged.segments
        total = (time.perf_counter() - t0) * 1e3
        out, k = [], 0
        for text, sp in zip(texts, spans, strict=True):
            part = scores[k : k + len(sp)]
            best = int(np.argmax(part))
            score = float(part[best])
            result = {
                "score": score,
                "decision": "block" if score >= self.threshold else "allow",
                "stage": stages[k + best],
                "chunk": {
                    "index": best,
                    "start": sp[best][0],
                    "end": sp[best][1],
                    "n_chunks": len(sp),
                },
                "timings_ms": {**staged.stage_ms, "total": total},
            }
            segment = segments[k + best]
            if segment is not None:
                result["segment"] = _segment_span(text, sp[best], segment)
            out.append(result)
            k += len(sp)
        return out

    def score_inputs(
        self,
        inputs: Sequence[str | Conversation],
        *,
        policy: ScanPolicy | None = None,
        positions: Sequence[str | None] | None = None,
    ) -> list[dict[str, Any]]:
        """Score a mix of texts and conversations; one result per input, in order.

        A text gets :meth:`score_details`' result, a conversation
        :meth:`score_conversations`' (under ``policy``). ``positions``, one per
        input, says where each text sits: ``user`` (or None), ``tool`` or
        ``document``; a conversation's entry is None, its messages' roles say it.

        Raises
        ------
        ConfigError
            ``positions`` of the wrong length, a position for a conversation,
            or an unknown position.
        """
        where = _input_positions(inputs, positions)
        out: list[dict[str, Any]] = [{} for _ in inputs]
        texts = [(k, x) for k, x in enumerate(inputs) if isinstance(x, str)]
        conversations = [(k, x) for k, x in enumerate(inputs) if not isinstance(x, str)]
        if texts:
            placed = None if where is None else [where[k] for k, _ in texts]
            scored = self.score_details([t for _, t in texts], placed)
            for (k, _), result in zip(texts, scored, strict=True):
                out[k] = result
        if conversations:
            scored = self.score_conversations([c for _, c in conversations], policy)
            for (k, _), result in zip(conversations, scored, strict=True):
                out[k] = result
        return out

    def score_conversations(
        self, conversations: Sequence[Conversation], policy: ScanPolicy | None = None
    ) -> list[dict[str, Any]]:
        """Score conversations under ``policy`` (the settings' policy by default).

        Every window of every conversation is scored in one call; each result
        has the conversation score and verdict, the message and window that
        drove it, and every message's own score (see
        :func:`gatebench.conversation.pool_scan`).
        """
        t0 = time.perf_counter()
        out = score_conversations(
            conversations,
            policy or self.settings.policy,
            self._score_report,
            size=self.settings.chunk_chars,
            overlap=self.settings.chunk_overlap,
            threshold=self.threshold,
        )
        total = (time.perf_counter() - t0) * 1e3
        for r in out:
            r["timings_ms"] = {**r["timings_ms"], "total": total}
        return out


def _segment_span(text: str, window: tuple[int, int], segment: str) -> dict[str, Any]:
    """Where the segment that drove a window's score sits in the whole text."""
    # Segments are stripped substrings of their window, so the first match is it.
    start = window[0] + text[window[0] : window[1]].find(segment)
    return {"start": start, "end": start + len(segment), "text": segment}


def served_model(model_dir: Path, settings: ServeSettings | None = None) -> ServedModel:
    """Load a ``gatebench train`` directory as a :class:`ServedModel` (chunking included).

    A detector that loads parts lazily (Gate's multilingual encoder) is warmed
    here, so that the service's first request of that kind does not wait.
    """
    loaded = load_model(model_dir)
    warm = getattr(loaded.detector, "warm", None)
    if callable(warm):
        warm()
    info = {
        "model_version": str(
            loaded.meta.get("environment", {}).get("packages", {}).get("gatebench")
        ),
        "trace_id": loaded.meta.get("trace_id"),
        "target_fpr": loaded.meta.get("target_fpr"),
        "threshold_rule": shipped_rule(loaded.meta),
        "shipped_fpr": shipped_fpr(loaded.meta),
        "detector_spec": loaded.meta.get("detector"),
        "heads": list(getattr(loaded.detector, "head_names", []) or []),
    }
    return ServedModel(loaded.detector, loaded.threshold, info, settings or ServeSettings())


def _input_positions(
    inputs: Sequence[str | Conversation], positions: Sequence[str | None] | None
) -> list[str] | None:
    """``positions`` checked against ``inputs``, None read as a user turn."""
    if positions is None:
        return None
    if len(positions) != len(inputs):
        raise ConfigError(
            f"positions: got {len(positions)} for {len(inputs)} inputs; give one per input"
        )
    out = []
    for i, (x, p) in enumerate(zip(inputs, positions, strict=True)):
        if not isinstance(x, str) and p is not None:
            raise ConfigError(
                f"positions[{i}] is {p!r} for a conversation; give None, its messages' roles "
                "say where each sits"
            )
        try:
            out.append(str(Position.parse(p, f"positions[{i}]")))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    return out
