"""Conversation rows in bulk scoring: planned as the service plans them, counted, rendered.

A row whose ``messages`` value cannot be read as a conversation, or leaves
nothing to scan under the policy, is a rejected row with its reason and the
parser's message; the rest are planned with the service's window geometry so
that a row scores as ``POST /v1/score`` would score it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from gatebench.conversation import (
    ConversationError,
    ScanPlan,
    ScanPolicy,
    parse_conversation,
    plan_scan,
)
from gatebench.served import ServeSettings

__all__ = ["conversation_summary", "count_plan", "plan_conversation", "render_scanned"]

_SERVE = ServeSettings()


def render_scanned(plan: ScanPlan) -> str:
    """The scanned messages of a conversation as ``role: content`` lines.

    ``text_hash`` of this rendering identifies a conversation in the output
    (conversations that differ only in messages the policy does not scan hash
    alike), and the audit's near-duplicate signatures are taken from it.

    Examples
    --------
    >>> from gatebench.conversation import Conversation
    >>> conv = Conversation.of(("system", "be brief"), ("user", "hi"), ("tool", "page"))
    >>> render_scanned(plan_scan(conv, ScanPolicy(), size=4000, overlap=400))
    'user: hi\\ntool: page'
    """
    messages = plan.conversation.messages
    return "\n".join(f"{messages[i].role}: {messages[i].content}" for i in sorted(plan.n_windows))


def plan_conversation(
    value: object, policy: ScanPolicy, where: str
) -> tuple[ScanPlan | None, str | None, str | None]:
    """The scan plan of one conversation row, or its reject reason and the error."""
    try:
        conversation = parse_conversation(value, where=where)
    except ConversationError as exc:
        return None, "bad_conversation", str(exc)
    try:
        plan = plan_scan(
            conversation, policy, size=_SERVE.chunk_chars, overlap=_SERVE.chunk_overlap, where=where
        )
    except ConversationError as exc:
        return None, "nothing_to_scan", str(exc)
    return plan, None, None


def count_plan(plan: ScanPlan, counts: Counter[str]) -> None:
    skipped = Counter(plan.skipped.values())
    counts.update(
        accepted=1,
        messages_scanned=len(plan.n_windows),
        messages_skipped_role=skipped["role"],
        messages_skipped_empty=skipped["empty"],
        ignored_parts=plan.conversation.ignored_parts,
        windows=len(plan.windows),
        border_windows=len(plan.windows) - sum(plan.n_windows.values()),
    )


def conversation_summary(counts: Counter[str], *, scored: bool) -> dict[str, Any]:
    """The summary's account of conversation rows (all zeros when there were none)."""
    return {
        "rows": counts["rows"],
        "scored": counts["accepted"] if scored else 0,
        "rejected": counts["rows"] - counts["accepted"],
        "messages_scanned": counts["messages_scanned"],
        "messages_skipped": {
            "role": counts["messages_skipped_role"],
            "empty": counts["messages_skipped_empty"],
        },
        "ignored_parts": counts["ignored_parts"],
        "windows": counts["windows"],
        "border_windows": counts["border_windows"],
    }
