"""One scoring pass through Gate's cascade: route, rescore the deferred rows, count and time it.

:class:`~gatebench.gate.model.Gate` owns the fast path and the stages'
models; this module owns the pass over them, so that the scores, the stage
that decided each text, the per-stage milliseconds and the running exit and
latency counters all come from the same single pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from gatebench.gate.features import escalation_cues
from gatebench.gate.textpool import Lane

if TYPE_CHECKING:
    from gatebench.gate.judge import LLMJudge
    from gatebench.gate.model import Gate

__all__ = ["exit_fractions", "new_stats", "route", "run_cascade", "stage_report"]


def new_stats() -> dict[str, float]:
    """Zeroed exit and latency counters (what :attr:`Gate.stats` holds)."""
    return {
        "requests": 0,
        "fast_exit": 0,
        "deferred_band": 0,
        "deferred_cue": 0,
        "judge_calls": 0,
        "judge_failures": 0,
        "fast_seconds": 0.0,
        "deferred_seconds": 0.0,
        "judge_seconds": 0.0,
        "segments": 0,
        "segment_seconds": 0.0,
    }


def exit_fractions(stats: dict[str, float]) -> dict[str, float]:
    """Share of scored requests that exited fast, or were deferred by band or by cue."""
    n = max(stats["requests"], 1)
    return {
        "fast": stats["fast_exit"] / n,
        "deferred_band": stats["deferred_band"] / n,
        "deferred_cue": stats["deferred_cue"] / n,
    }


def route(
    p_fast: np.ndarray, features: np.ndarray, band: tuple[float, float], *, escalate: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Which rows the deferred stage takes: ``(in_band, escalated)`` (see :meth:`Gate.route`)."""
    lo, hi = band
    in_band = (p_fast >= lo) & (p_fast <= hi)
    escalated = np.zeros_like(in_band)
    if escalate:
        escalated = ~in_band & (p_fast < hi) & escalation_cues(features)
    return in_band, escalated


#: Texts per slice of a batch's fast path. The sentence encoder reads one
#: slice's deferred rows while the next slice goes through the fast path.
SLICE = 64


def run_cascade(
    gate: Gate, texts: list[str], stats: dict[str, float] | None = None
) -> tuple[np.ndarray, np.ndarray, tuple[float, ...]]:
    """Scores, the indices routed to the deferred stage, and seconds per stage.

    The seconds are those of the fast path, the deferred stage and the
    judge; ``stats`` (default ``gate.stats``) is updated with the same
    counts and times: derived texts (a document's segments) are counted
    apart from the requests. A
    batch goes through the fast path in slices of :data:`SLICE`, and each
    slice's deferred rows are encoded on a :class:`~gatebench.gate.textpool.Lane`
    beside the next slices and the deferred windows. Every stage scores a
    row alone (no score depends on its batch-mates), so the slices change
    when the work is done, not what it gives; the deferred stage's seconds
    are counted from the end of the fast path.
    """
    gate._check_fitted()  # before the featurizer, which may build the static table
    if not texts:
        return np.zeros(0), np.zeros(0, dtype=np.intp), (0.0, 0.0, 0.0)
    s = gate.stats if stats is None else stats
    t0 = time.perf_counter()
    featurize = gate._get_featurizer()
    sentence = gate.sentence_combiner is not None
    step = SLICE if sentence and len(texts) > SLICE else len(texts)
    p = np.empty(len(texts))
    routed_parts: list[np.ndarray] = []
    sentence_parts: list[Callable[[], np.ndarray]] = []
    n_band = n_cue = 0
    # MiniLM runs outside the GIL: a slice's deferred rows are read beside the
    # next slices, and the last slice's (a lone request's too) beside the
    # windows and readings. A Lane given no work starts no thread.
    with Lane() as lane:
        for lo in range(0, len(texts), step):
            views = featurize(texts[lo : lo + step], full=False)
            p_slice, per_head = gate._fast_meta(views)
            in_band, escalated = gate.route(p_slice, views.features)
            p[lo : lo + len(views)] = p_slice
            n_band += int(in_band.sum())
            n_cue += int(escalated.sum())
            local = np.flatnonzero(in_band | escalated)
            if local.size:
                routed_parts.append(lo + local)
            if local.size and sentence:
                meta = [m[local] for m in per_head]
                sentence_parts.append(
                    lane.submit(partial(gate._sentence_proba, views.take(local), meta))
                )
        t1 = time.perf_counter()
        routed = np.concatenate(routed_parts) if routed_parts else np.zeros(0, dtype=np.intp)
        out = p.copy()
        if routed.size:
            stage = gate.deferred
            pieces = stage.piece_evidence(
                [texts[i] for i in routed], gate._fast_pieces, windows=stage.reads_windows
            )
            base = np.concatenate([get() for get in sentence_parts]) if sentence else p[routed]
            out[routed] = stage.proba(stage.with_base(pieces, base))
    t2 = time.perf_counter()
    if routed.size and gate.judge is not None:
        out[routed] = _apply_judge(gate.judge, [texts[i] for i in routed], out[routed], s)
    t3 = time.perf_counter()
    s["requests"] += len(texts)
    s["fast_exit"] += len(texts) - routed.size
    s["deferred_band"] += n_band
    s["deferred_cue"] += n_cue
    s["fast_seconds"] += t1 - t0
    s["deferred_seconds"] += t2 - t1
    s["judge_seconds"] += t3 - t2
    return np.clip(out, 0.0, 1.0), routed, (t1 - t0, t2 - t1, t3 - t2)


def stage_report(
    n: int, routed: np.ndarray, seconds: tuple[float, ...], *, judged: bool
) -> tuple[list[str], dict[str, float]]:
    """The stage that decided each of ``n`` texts, and the pass's milliseconds per stage.

    ``deferred`` (and ``judge``, when ``judged``) appear only when some text went there.
    """
    stages = ["fast"] * n
    for i in routed:
        stages[i] = "deferred"
    ms = {"fast": seconds[0] * 1e3}
    if routed.size:
        ms["deferred"] = seconds[1] * 1e3
        if judged:
            ms["judge"] = seconds[2] * 1e3
    return stages, ms


def _apply_judge(
    judge: LLMJudge, texts: list[str], p: np.ndarray, stats: dict[str, float]
) -> np.ndarray:
    """``p`` blended with the judge's verdicts; a failed call keeps the score it had."""
    out = p.copy()
    for i, t in enumerate(texts):
        stats["judge_calls"] += 1
        v = judge.verdict(t)
        if v is None:
            stats["judge_failures"] += 1
            continue
        out[i] = (1 - judge.weight) * p[i] + judge.weight * v
    return out
