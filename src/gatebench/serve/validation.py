"""What a scoring request must be, checked once at the boundary.

The body is read and parsed by hand rather than by FastAPI's JSON binding so
that every kind of bad input (wrong content type, oversized, slow, invalid
UTF-8, invalid or deeply nested JSON, lone surrogates) gets a 4xx with a
message that says what was wrong, and never a 500. Anything a message quotes
back from the request is shortened, so a huge request gets a short answer.
:mod:`gatebench.serve.openapi` describes the same rules for the OpenAPI document.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from fastapi import Request

from gatebench.conversation import Conversation, ConversationError, ScanPolicy, parse_conversation
from gatebench.serve.model import ServeSettings
from gatebench.types import POSITIONS, Position

__all__ = [
    "BadRequest",
    "ScoreRequest",
    "check_content_type",
    "parse_request",
    "read_body",
]

#: Most unknown field names a 422 lists, and the characters shown of each.
ECHO_NAMES = 10
ECHO_CHARS = 64

_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_UTF8 = {"utf-8", "utf8"}


class BadRequest(Exception):  # noqa: N818 - an HTTP outcome, not a programming error
    """A client error that becomes a JSON response with ``status`` and ``detail``."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers


def _quote(value: str) -> str:
    """``repr`` of at most :data:`ECHO_CHARS` characters (lone surrogates come out escaped)."""
    return repr(value if len(value) <= ECHO_CHARS else value[:ECHO_CHARS] + "...")


def _quote_names(names: Sequence[str]) -> str:
    shown = "[" + ", ".join(_quote(n) for n in names[:ECHO_NAMES]) + "]"
    more = len(names) - ECHO_NAMES
    return shown + (f" and {more:,} more" if more > 0 else "")


def check_content_type(value: str | None) -> None:
    """Refuse (415) a body not declared as UTF-8 JSON: it would otherwise be scored as JSON."""
    fix = "send the body as JSON with the header Content-Type: application/json"
    if value is None:
        raise BadRequest(415, f"no Content-Type header; {fix}")
    media, *params = (part.strip() for part in value.split(";"))
    if media.lower() != "application/json":
        raise BadRequest(415, f"Content-Type is {_quote(value)}; {fix}")
    for param in params:
        key, _, charset = param.partition("=")
        charset = charset.strip().strip('"')
        if key.strip().lower() == "charset" and charset.lower() not in _UTF8:
            raise BadRequest(
                415, f"charset {_quote(charset)} in Content-Type; JSON bodies must be UTF-8"
            )


async def read_body(request: Request, settings: ServeSettings) -> bytes:
    """The body; 413 over ``max_body_bytes``, 408 slower than ``body_timeout_s``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > settings.max_body_bytes:
        raise BadRequest(
            413,
            f"body is {int(declared):,} bytes; the limit is "
            f"{settings.max_body_bytes:,} (send smaller batches)",
        )
    chunks, size = [], 0
    try:
        # One deadline for the whole body (a slow-drip client is cut off), set
        # once: wait_for per chunk would start a task per chunk.
        async with asyncio.timeout(settings.body_timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > settings.max_body_bytes:
                    raise BadRequest(
                        413,
                        f"body exceeds the limit of {settings.max_body_bytes:,} bytes "
                        "(send smaller batches)",
                    )
                chunks.append(chunk)
    except TimeoutError:
        raise BadRequest(408, f"body not received within {settings.body_timeout_s:g} s") from None
    return b"".join(chunks)


@dataclass(frozen=True)
class ScoreRequest:
    """A checked ``POST /v1/score`` body: texts, or conversations with their policy.

    ``positions`` holds each text's position; None when the body gave none,
    and every text is then a user turn.
    """

    texts: list[str] | None = None
    positions: list[str] | None = None
    conversations: list[Conversation] | None = None
    policy: ScanPolicy | None = None
    batch: bool = False


#: The body's one required field, and whether it is a batch.
_SHAPES = {"text": False, "texts": True, "messages": False, "conversations": True}
#: The optional field each shape takes besides its own.
_OPTIONAL = {"text": "position", "texts": "positions", "messages": "scan", "conversations": "scan"}
_SHAPE_HINT = (
    'give exactly one of "text" (a string), "texts" (a list of strings), "messages" '
    '(a list of {"role", "content"} objects) or "conversations" (a list of message lists)'
)


def _decode(body: bytes) -> object:
    try:
        decoded = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(400, f"body is not valid UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(decoded)
    except json.JSONDecodeError as exc:
        raise BadRequest(400, f"body is not valid JSON: {exc.msg} at position {exc.pos}") from None
    except RecursionError:
        raise BadRequest(400, "body JSON is nested too deeply") from None


def parse_request(body: bytes, settings: ServeSettings) -> ScoreRequest:
    """Check a score request body; every refusal is a :class:`BadRequest` saying why."""
    payload = _decode(body)
    if not isinstance(payload, dict):
        raise BadRequest(422, f"body must be a JSON object; {_SHAPE_HINT}")
    given = [k for k in payload if k in _SHAPES]
    unknown = sorted(set(payload) - set(_SHAPES) - set(_OPTIONAL.values()))
    if unknown or len(given) != 1:
        raise BadRequest(
            422,
            _SHAPE_HINT + (f"; unknown fields: {_quote_names(unknown)}" if unknown else ""),
        )
    field = given[0]
    batch = _SHAPES[field]
    for extra in set(_OPTIONAL.values()) - {_OPTIONAL[field]}:
        if extra in payload:
            owners = " and ".join(f'"{f}"' for f, o in _OPTIONAL.items() if o == extra)
            raise BadRequest(422, f'"{extra}" applies to {owners} only')
    if field in ("text", "texts"):
        texts = _texts(payload[field], batch, settings)
        where = _OPTIONAL[field]
        positions = _positions(payload[where], len(texts), where) if where in payload else None
        return ScoreRequest(texts=texts, positions=positions, batch=batch)
    items = payload[field] if batch else [payload[field]]
    if batch:
        _check_batch(items, "conversations", "conversation", settings)
    try:
        policy = ScanPolicy.parse(payload.get("scan"), default=settings.policy)
        conversations = [
            parse_conversation(
                c,
                where=f"conversations[{i}]" if batch else "messages",
                max_messages=settings.max_messages,
                max_chars=settings.max_text_chars,
            )
            for i, c in enumerate(items)
        ]
    except ConversationError as exc:
        raise BadRequest(413 if exc.too_large else 422, str(exc)) from None
    return ScoreRequest(conversations=conversations, policy=policy, batch=batch)


def _check_batch(items: object, field: str, what: str, settings: ServeSettings) -> None:
    if not isinstance(items, list):
        of = "strings" if what == "text" else "message lists"
        raise BadRequest(422, f'"{field}" must be a list of {of}, got {type(items).__name__}')
    if len(items) > settings.max_batch:
        raise BadRequest(
            413, f"batch of {len(items):,} {what}s; the limit is {settings.max_batch:,}"
        )
    if not items:
        raise BadRequest(422, f'"{field}" is empty; send at least one {what}')


def _texts(value: object, batch: bool, settings: ServeSettings) -> list[str]:
    if batch:
        _check_batch(value, "texts", "text", settings)
    texts = value if batch else [value]
    assert isinstance(texts, list)
    for i, text in enumerate(texts):
        where = f"texts[{i}]" if batch else "text"
        if not isinstance(text, str):
            raise BadRequest(422, f"{where} must be a string, got {type(text).__name__}")
        if not text.strip():
            raise BadRequest(422, f"{where} is empty or whitespace only")
        if len(text) > settings.max_text_chars:
            raise BadRequest(
                413,
                f"{where} has {len(text):,} characters; the limit is {settings.max_text_chars:,}",
            )
        bad = _SURROGATE_RE.search(text)
        if bad is not None:
            raise BadRequest(
                422, f"{where} has a lone surrogate at character {bad.start()}; send valid Unicode"
            )
    return texts


def _positions(value: object, n: int, field: str) -> list[str]:
    """Each text's position: ``"position"`` for one text, ``"positions"`` for a batch."""
    batch = field == "positions"
    if batch and not isinstance(value, list):
        raise BadRequest(
            422,
            f'"positions" must be a list with one position (or null) per text, '
            f"got {type(value).__name__}",
        )
    items = value if isinstance(value, list) and batch else [value]
    if len(items) != n:
        raise BadRequest(
            422, f'"positions" has {len(items):,} entries for {n:,} texts; give one per text'
        )
    allowed = list(POSITIONS)
    out = []
    for i, item in enumerate(items):
        if item is None:
            out.append(str(Position.USER))
        elif isinstance(item, str) and item in allowed:
            out.append(item)
        else:
            where = f"positions[{i}]" if batch else "position"
            got = _quote(item) if isinstance(item, str) else type(item).__name__
            raise BadRequest(
                422,
                f"{where} is {got}, not a position; use one of {allowed}, or null for a user turn",
            )
    return out
