"""One conversation input model: messages with a role and text content.

Agents read more than a user's string: tool results, retrieved documents and
later turns all reach the model, and an injection can arrive in any of them.
Callers send OpenAI-style ``messages``; this module checks them once, at the
boundary, and turns them into :class:`Conversation` values the scanner
trusts. Content is a string or a list of parts; text parts are joined, and
parts that carry no text (images, audio, files) are ignored and counted,
never silently dropped. Every refusal names the message, the bad value and
the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from gatebench.errors import DataError

__all__ = [
    "ROLES",
    "ROLE_ALIASES",
    "Conversation",
    "ConversationError",
    "Message",
    "parse_conversation",
]

#: The roles a message may have. ``document`` is retrieved or pasted content
#: (a web page, an email, a file) that the model reads but nobody typed as a turn.
ROLES = ("system", "user", "assistant", "tool", "document")
#: Other spellings of those roles in common chat formats (OpenAI's newer
#: ``developer`` and older ``function`` messages).
ROLE_ALIASES = {"developer": "system", "function": "tool"}
#: Part types that carry text, in the Chat Completions and Responses formats.
TEXT_PARTS = ("text", "input_text", "output_text")

_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_SHAPE = '{"role": "user", "content": "..."}'


class ConversationError(DataError):
    """A conversation that cannot be scanned; ``too_large`` marks a size limit (HTTP 413)."""

    def __init__(self, message: str, *, too_large: bool = False) -> None:
        super().__init__(message)
        self.too_large = too_large


@dataclass(frozen=True, slots=True)
class Message:
    """One message: its role (one of :data:`ROLES`) and its text."""

    role: str
    content: str


@dataclass(frozen=True, slots=True)
class Conversation:
    """Messages in order, and how many content parts without text were ignored."""

    messages: tuple[Message, ...]
    ignored_parts: int = 0

    @classmethod
    def of(cls, *pairs: tuple[str, str]) -> Conversation:
        """A conversation from ``(role, content)`` pairs, checked like any input.

        Examples
        --------
        >>> Conversation.of(("user", "Summarise this page"), ("document", "...")).roles
        ('user', 'document')
        """
        return parse_conversation([{"role": r, "content": c} for r, c in pairs])

    @property
    def roles(self) -> tuple[str, ...]:
        """Each message's role, in order."""
        return tuple(m.role for m in self.messages)


def _role(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ConversationError(
            f"{where}.role must be a string, got {type(value).__name__}; "
            f"use one of {', '.join(ROLES)}"
        )
    role = value.strip().lower()
    role = ROLE_ALIASES.get(role, role)
    if role not in ROLES:
        raise ConversationError(
            f"{where}.role {value[:40]!r} is not a known role; use one of {', '.join(ROLES)}"
        )
    return role


def _text(value: str, where: str, max_chars: int | None) -> str:
    bad = _SURROGATE_RE.search(value)
    if bad is not None:
        raise ConversationError(
            f"{where} has a lone surrogate at character {bad.start()}; send valid Unicode"
        )
    if max_chars is not None and len(value) > max_chars:
        raise ConversationError(
            f"{where} has {len(value):,} characters; the limit is {max_chars:,}", too_large=True
        )
    return value


def _content(value: object, where: str, max_chars: int | None) -> tuple[str, int]:
    """The message's text and the number of parts without text."""
    if value is None:
        return "", 0  # an assistant turn that only calls tools has no content
    if isinstance(value, str):
        return _text(value, where, max_chars), 0
    if not isinstance(value, list):
        raise ConversationError(
            f"{where} must be a string or a list of parts, got {type(value).__name__}"
        )
    texts, ignored = [], 0
    for j, part in enumerate(value):
        at = f"{where}[{j}]"
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping):
            if part.get("type") in TEXT_PARTS:
                text = part.get("text")
                if not isinstance(text, str):
                    raise ConversationError(
                        f"{at} is a text part whose text is {type(text).__name__}, not a string"
                    )
                texts.append(text)
            else:
                ignored += 1  # an image, audio or file part: nothing for a text detector
        else:
            raise ConversationError(
                f"{at} is a {type(part).__name__}; a part is a string or an object like "
                '{"type": "text", "text": "..."}'
            )
    return _text("\n".join(texts), where, max_chars), ignored


def parse_conversation(
    value: object,
    *,
    where: str = "messages",
    max_messages: int | None = None,
    max_chars: int | None = None,
) -> Conversation:
    """Check ``value`` (decoded JSON) and return the :class:`Conversation` it describes.

    Parameters
    ----------
    value : object
        A list of message objects with ``role`` and ``content``; other keys
        (``name``, ``tool_call_id``, ``tool_calls``) are allowed and not read.
    where : str
        How to name the value in errors, e.g. ``"conversations[2]"`` or ``"chats.jsonl:7"``.
    max_messages, max_chars : int, optional
        Most messages, and most characters of one message's text.

    Raises
    ------
    ConversationError
        Not a non-empty list of message objects, an unknown role, content that
        is neither text nor parts, a part nested in a part, a lone surrogate,
        or a limit exceeded.
    """
    if not isinstance(value, list):
        raise ConversationError(
            f"{where} must be a list of messages like {_SHAPE}, got {type(value).__name__}"
        )
    if not value:
        raise ConversationError(f"{where} is empty; send at least one message like {_SHAPE}")
    if max_messages is not None and len(value) > max_messages:
        raise ConversationError(
            f"{where} has {len(value):,} messages; the limit is {max_messages:,} "
            "(send the most recent messages, or raise the limit)",
            too_large=True,
        )
    messages, ignored = [], 0
    for i, item in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            raise ConversationError(
                f"{at} must be an object like {_SHAPE}, got {type(item).__name__}"
            )
        for key in ("role", "content"):
            if key not in item:
                raise ConversationError(f"{at} has no {key!r}; write each message as {_SHAPE}")
        text, skipped = _content(item["content"], f"{at}.content", max_chars)
        messages.append(Message(_role(item["role"], at), text))
        ignored += skipped
    return Conversation(tuple(messages), ignored)
