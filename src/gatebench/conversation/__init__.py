"""Conversations: messages with roles, which of them are scanned, and how they are scored.

Everything that accepts a text accepts a conversation too: file rows with a
``messages`` field, ``POST /v1/score`` with ``{"messages": [...]}``, the
Python client and :meth:`gatebench.gate.Gate.score_messages`. The input
model is in :mod:`~gatebench.conversation.messages`, the scanning policy in
:mod:`~gatebench.conversation.policy`, and windowing and pooling in
:mod:`~gatebench.conversation.scan`.
"""

from gatebench.conversation.messages import (
    ROLES,
    Conversation,
    ConversationError,
    Message,
    parse_conversation,
)
from gatebench.conversation.policy import DEFAULT_SCAN_ROLES, ScanPolicy
from gatebench.conversation.scan import (
    ScanPlan,
    driving_text,
    plan_scan,
    pool_plans,
    pool_scan,
    score_conversations,
    window_positions,
)

__all__ = [
    "DEFAULT_SCAN_ROLES",
    "ROLES",
    "Conversation",
    "ConversationError",
    "Message",
    "ScanPlan",
    "ScanPolicy",
    "driving_text",
    "parse_conversation",
    "plan_scan",
    "pool_plans",
    "pool_scan",
    "score_conversations",
    "window_positions",
]
