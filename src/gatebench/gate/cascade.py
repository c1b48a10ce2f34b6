"""One scoring pass through Gate's cascade: route, rescore the deferred rows, count and time it.

:class:`~gatebench.gate.model.Gate` owns the fast path and the stages'
models; this module owns the pass over them, so that the scores, the stage
that decided each text, the per-stage milliseconds and the running exit and
latency counters all come from the same single pass.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from gatebench.gate.features import escalation_cues
from gatebench.gate.textpool import beside

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


def run_cascade(gate: Gate, texts: list[str]) -> tuple[np.ndarray, np.ndarray, tuple[float, ...]]:
    """Scores, the indices routed to the deferred stage, and seconds per stage.

    The seconds are those of the fast path, the deferred stage and the
    judge; ``gate.stats`` is updated with the same counts and times.
    """
    if not texts:
        gate._check_fitted()
        return np.zeros(0), np.zeros(0, dtype=np.intp), (0.0, 0.0, 0.0)
    t0 = time.perf_counter()
    views = gate._get_featurizer()(texts, full=False)
    p, per_head = gate._fast_meta(views)
    in_band, escalated = gate.route(p, views.features)
    t1 = time.perf_counter()
    routed = np.flatnonzero(in_band | escalated)
    out = p.copy()
    if routed.size:
        base = p[routed]
        sub = views.take(routed)
        sentence = gate.sentence_combiner is not None
        # The sentence encoder runs outside the GIL: the windows are scored beside it.
        with beside(
            lambda: gate._sentence_views(sub) if sentence else sub,
            threaded=sentence and routed.size > 1,
        ) as encoded:
            pieces = gate.deferred.piece_evidence([texts[i] for i in routed], gate._fast_pieces)
            encoded()
        if sentence:
            base = gate._sentence_proba(sub, [m[routed] for m in per_head])
        out[routed] = gate.deferred.proba(gate.deferred.with_base(pieces, base))
    t2 = time.perf_counter()
    if routed.size and gate.judge is not None:
        out[routed] = _apply_judge(gate.judge, [texts[i] for i in routed], out[routed], gate.stats)
    t3 = time.perf_counter()
    s = gate.stats
    s["requests"] += len(texts)
    s["fast_exit"] += len(texts) - routed.size
    s["deferred_band"] += int(in_band.sum())
    s["deferred_cue"] += int(escalated.sum())
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
