"""What a scoring request must be, checked once at the boundary.

The body is read and parsed by hand rather than by FastAPI's JSON binding so
that every kind of bad input (wrong content type, oversized, slow, invalid
UTF-8, invalid or deeply nested JSON, lone surrogates) gets a 4xx with a
message that says what was wrong, and never a 500. Anything a message quotes
back from the request is shortened, so a huge request gets a short answer.
:func:`score_request_body` describes the same rules for the OpenAPI document.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import Any

from fastapi import Request

from gatebench.serve.model import ServeSettings

__all__ = [
    "BadRequest",
    "check_content_type",
    "parse_texts",
    "read_body",
    "score_request_body",
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


def parse_texts(body: bytes, settings: ServeSettings) -> tuple[list[str], bool]:
    """Return the texts and whether the request was a batch."""
    try:
        decoded = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(400, f"body is not valid UTF-8 (byte {exc.start})") from None
    try:
        payload = json.loads(decoded)
    except json.JSONDecodeError as exc:
        raise BadRequest(400, f"body is not valid JSON: {exc.msg} at position {exc.pos}") from None
    except RecursionError:
        raise BadRequest(400, "body JSON is nested too deeply") from None
    if not isinstance(payload, dict):
        raise BadRequest(422, 'body must be a JSON object: {"text": "..."} or {"texts": [...]}')
    unknown = set(payload) - {"text", "texts"}
    if unknown or len(payload) != 1:
        raise BadRequest(
            422,
            'give exactly one of "text" (a string) or "texts" (a list of strings)'
            + (f"; unknown fields: {_quote_names(sorted(unknown))}" if unknown else ""),
        )
    batch = "texts" in payload
    texts = payload["texts"] if batch else [payload["text"]]
    if not isinstance(texts, list):
        raise BadRequest(422, f'"texts" must be a list of strings, got {type(texts).__name__}')
    if len(texts) > settings.max_batch:
        raise BadRequest(413, f"batch of {len(texts):,} texts; the limit is {settings.max_batch:,}")
    if batch and not texts:
        raise BadRequest(422, '"texts" is empty; send at least one text')
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
    return texts, batch


def score_request_body(settings: ServeSettings) -> dict[str, Any]:
    """The OpenAPI ``requestBody`` of ``POST /v1/score``: the rules of :func:`parse_texts`.

    Written out rather than bound to a pydantic model so that FastAPI never
    parses the body itself, and the limits come from ``settings``.
    """
    text = {
        "type": "string",
        "minLength": 1,
        "maxLength": settings.max_text_chars,
        "pattern": r"\S",
        "description": "Any length up to the limit: long texts are windowed and max-pooled.",
    }
    one = {
        "title": "One text",
        "type": "object",
        "properties": {"text": text},
        "required": ["text"],
        "additionalProperties": False,
    }
    batch = {
        "title": "A batch",
        "type": "object",
        "properties": {
            "texts": {
                "type": "array",
                "items": text,
                "minItems": 1,
                "maxItems": settings.max_batch,
            }
        },
        "required": ["texts"],
        "additionalProperties": False,
    }
    return {
        "required": True,
        "description": f"UTF-8 JSON, at most {settings.max_body_bytes:,} bytes.",
        "content": {"application/json": {"schema": {"oneOf": [one, batch]}}},
    }
