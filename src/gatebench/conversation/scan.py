"""Scanning a conversation: which windows are scored, and how their scores are pooled.

Each scanned message is cut into windows exactly as a lone text is
(:mod:`gatebench.chunking`) and takes the maximum of its windows, so a
message's score is the score it would get sent on its own. The conversation
takes the maximum over its messages (an attack anywhere is an attack) and
says which message and window drove it. Neighbouring scanned messages of the
same role also get one window across their border, the end of the first and
the start of the second, so an instruction split across two tool results,
or across two user turns, is scored whole at least once; it costs one extra
short window (:data:`BORDER_SIDE` characters from each side) per such pair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from gatebench.chunking import chunk_spans
from gatebench.conversation.messages import Conversation, ConversationError
from gatebench.conversation.policy import THREATS, ScanPolicy
from gatebench.types import DATA_POSITIONS, StagedScores

__all__ = [
    "BORDER_JOIN",
    "ScanPlan",
    "Window",
    "driving_text",
    "plan_scan",
    "pool_plans",
    "pool_scan",
    "score_conversations",
    "window_positions",
]

#: What joins the two halves of a border window: a message break reads as a line break.
BORDER_JOIN = "\n"
#: Characters a border window takes from each side. An injected instruction is
#: a sentence or a short paragraph, so this much of each side holds a split one
#: whole, while a window the length of two documents would cost as much as
#: scoring another document.
BORDER_SIDE = 256

#: ``score_windows(texts, positions) -> StagedScores``, as ``Gate.score_report``.
WindowScorer = Callable[[list[str], list[str]], StagedScores]


@dataclass(frozen=True, slots=True)
class Window:
    """One scored window.

    ``message`` is the message it lies in (for a border window, the first of
    the two) and ``start``/``end`` its characters there; a border window has
    ``spans_to`` set to the second message and runs from ``start`` in the
    first message to ``end`` in the second.
    """

    message: int
    index: int
    start: int
    end: int
    text: str
    spans_to: int | None = None


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """The windows to score for one conversation under one policy."""

    conversation: Conversation
    policy: ScanPolicy
    windows: tuple[Window, ...]
    #: Windows of each scanned message (border windows not counted).
    n_windows: dict[int, int]
    #: Why each message that is not scanned is skipped: ``role`` or ``empty``.
    skipped: dict[int, str]


def plan_scan(
    conversation: Conversation,
    policy: ScanPolicy,
    *,
    size: int,
    overlap: int,
    where: str = "messages",
) -> ScanPlan:
    """The windows :func:`pool_scan` needs scores for.

    Raises
    ------
    ConversationError
        No message of a scanned role has text: there is nothing to score, and
        answering "allow" would hide that.
    """
    windows: list[Window] = []
    n_windows: dict[int, int] = {}
    skipped: dict[int, str] = {}
    scanned: list[int] = []
    messages = conversation.messages
    for i, message in enumerate(messages):
        if not policy.scans(message.role):
            skipped[i] = "role"
        elif not message.content.strip():
            skipped[i] = "empty"
        else:
            spans = chunk_spans(message.content, size, overlap)
            windows += [Window(i, k, a, b, message.content[a:b]) for k, (a, b) in enumerate(spans)]
            n_windows[i] = len(spans)
            scanned.append(i)
    if not scanned:
        raise ConversationError(
            f"{where}: no message of a scanned role has text (roles scanned: "
            f"{', '.join(policy.roles)}; roles sent: {', '.join(conversation.roles)}); "
            "send a message of a scanned role, or scan more roles"
        )
    if policy.span_adjacent:
        half = min(BORDER_SIDE, (size - len(BORDER_JOIN)) // 2)  # fits in one window
        for i, j in pairwise(scanned):
            if messages[i].role == messages[j].role:
                first, second = messages[i].content, messages[j].content
                start, end = max(0, len(first) - half), min(half, len(second))
                text = _border_text(first, second, start, end)
                windows.append(Window(i, -1, start, end, text, spans_to=j))
    return ScanPlan(conversation, policy, tuple(windows), n_windows, skipped)


def _border_text(first: str, second: str, start: int, end: int) -> str:
    """A border window's text: the end of ``first`` from ``start``, the start of ``second``."""
    return first[start:] + BORDER_JOIN + second[:end]


def driving_text(conversation: Conversation, driver: dict[str, Any]) -> str:
    """The text of the window that drove a conversation's score.

    Parameters
    ----------
    conversation : Conversation
        The conversation scored.
    driver : dict
        Its result's ``driver`` (:func:`pool_scan`): message, window and ``spans_to``.

    Returns
    -------
    str
        The window's text as the detector read it; a border window's joins the
        two messages' edges as :func:`plan_scan` does.
    """
    window, messages = driver["window"], conversation.messages
    content = messages[driver["message"]].content
    if driver["spans_to"] is None:
        return content[window["start"] : window["end"]]
    return _border_text(
        content, messages[driver["spans_to"]].content, window["start"], window["end"]
    )


def _segment_info(w: Window, segment: str) -> dict[str, Any]:
    """Where a window's driving segment sits: its message, and its characters there."""
    message, at = w.message, w.start + w.text.find(segment)  # a stripped substring
    if w.spans_to is not None:
        # A border window is the first message from w.start, the join, then the
        # second message up to w.end; a segment never crosses the join (a line break).
        second = len(w.text) - w.end
        if at - w.start >= second:
            message, at = w.spans_to, at - w.start - second
    return {"message": message, "start": at, "end": at + len(segment), "text": segment}


def _window_info(w: Window, n: int) -> dict[str, Any]:
    return {"index": w.index, "start": w.start, "end": w.end, "n_windows": n}


def _decision(score: float, threshold: float | None) -> dict[str, str]:
    if threshold is None:
        return {}
    return {"decision": "block" if score >= threshold else "allow"}


def pool_scan(
    plan: ScanPlan,
    scores: Sequence[float] | np.ndarray,
    stages: Sequence[str],
    threshold: float | None,
    segments: Sequence[str | None] | None = None,
) -> dict[str, Any]:
    """One conversation's result from its windows' scores (in ``plan.windows`` order).

    The result holds the conversation score (the maximum), the verdict at
    ``threshold`` (left out when there is none), the message, role and window
    that drove it, every message's score (``None`` for a skipped one, with
    the reason), and every border window's score. Where a window's score was
    set by one of its segments read alone (``segments``, per window), the
    driver, and the message whose score that window is, name it: its
    message, characters and text.
    """
    values = np.asarray(scores, dtype=np.float64)
    best_of: dict[int, int] = {}
    for k, w in enumerate(plan.windows):
        if w.spans_to is None and (
            w.message not in best_of or values[k] > values[best_of[w.message]]
        ):
            best_of[w.message] = k
    messages: list[dict[str, Any]] = []
    for i, message in enumerate(plan.conversation.messages):
        row: dict[str, Any] = {"index": i, "role": message.role}
        if i in best_of:
            k = best_of[i]
            s = float(values[k])
            row |= {"scanned": True, "score": s, **_decision(s, threshold)}
            row["window"] = _window_info(plan.windows[k], plan.n_windows[i])
            if segments is not None and segments[k] is not None:
                row["segment"] = _segment_info(plan.windows[k], str(segments[k]))
        else:
            row |= {"scanned": False, "score": None, "skipped": plan.skipped[i]}
        messages.append(row)
    top = int(np.argmax(values))
    w = plan.windows[top]
    role = plan.conversation.messages[w.message].role
    score = float(values[top])
    driver: dict[str, Any] = {
        "message": w.message,
        "role": role,
        "threat": THREATS[role],
        "window": _window_info(w, plan.n_windows[w.message]),
        "spans_to": w.spans_to,
    }
    if segments is not None and segments[top] is not None:
        driver["segment"] = _segment_info(w, str(segments[top]))
    return {
        "score": score,
        **_decision(score, threshold),
        "stage": stages[top],
        "driver": driver,
        "messages": messages,
        "borders": [
            {"messages": [x.message, x.spans_to], "score": float(values[k])}
            for k, x in enumerate(plan.windows)
            if x.spans_to is not None
        ],
        "scanned": len(best_of),
        "skipped": len(plan.skipped),
        "ignored_parts": plan.conversation.ignored_parts,
        "policy": {"roles": list(plan.policy.roles), "span_adjacent": plan.policy.span_adjacent},
    }


def window_positions(plan: ScanPlan) -> list[str]:
    """Each window's position for the detector: its message's role if data, else ``user``.

    A border window joins two messages of one role, so it has that role's position.
    """
    messages = plan.conversation.messages
    return [
        messages[w.message].role if messages[w.message].role in DATA_POSITIONS else "user"
        for w in plan.windows
    ]


def pool_plans(
    plans: Sequence[ScanPlan],
    scores: Sequence[float] | np.ndarray,
    stages: Sequence[str],
    threshold: float | None,
    segments: Sequence[str | None] | None = None,
) -> list[dict[str, Any]]:
    """:func:`pool_scan` for each plan, given every plan's window scores end to end."""
    out, k = [], 0
    for p in plans:
        m = len(p.windows)
        part = None if segments is None else segments[k : k + m]
        out.append(pool_scan(p, scores[k : k + m], stages[k : k + m], threshold, part))
        k += m
    return out


def score_conversations(
    conversations: Sequence[Conversation],
    policy: ScanPolicy,
    score_windows: WindowScorer,
    *,
    size: int,
    overlap: int,
    threshold: float | None,
) -> list[dict[str, Any]]:
    """Plan every conversation, score all their windows in one call, and pool each.

    Parameters
    ----------
    conversations : sequence of Conversation
        Checked conversations (:func:`~gatebench.conversation.messages.parse_conversation`).
    policy : ScanPolicy
        Which roles are scanned.
    score_windows : callable
        ``(texts, positions) -> StagedScores``; one call for the whole
        batch, each window with its position (:func:`window_positions`).
    size, overlap : int
        Window geometry (the service's ``chunk_chars`` and ``chunk_overlap``).
    threshold : float or None
        The operating threshold for verdicts.
    """
    plans = [
        plan_scan(c, policy, size=size, overlap=overlap, where=f"conversations[{n}]")
        for n, c in enumerate(conversations)
    ]
    texts = [w.text for p in plans for w in p.windows]
    positions = [q for p in plans for q in window_positions(p)]
    staged = score_windows(texts, positions)
    out = pool_plans(plans, staged.scores, staged.stages, threshold, staged.segments)
    for result in out:
        result["timings_ms"] = staged.stage_ms
    return out
