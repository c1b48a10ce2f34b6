"""The HTTP detection service: one FastAPI app around any scoring model.

The body is read and parsed by hand rather than by FastAPI's JSON binding so
that every kind of bad input (oversized, slow, invalid UTF-8, invalid or
deeply nested JSON, lone surrogates) gets a 4xx with a message that says what
was wrong, and never a 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from gatebench.serve.batcher import MicroBatcher
from gatebench.serve.metrics import ServiceMetrics
from gatebench.serve.model import ServedModel, ServeSettings

__all__ = ["create_app"]


class BadRequest(Exception):  # noqa: N818 - an HTTP outcome, not a programming error
    """A client error that becomes a JSON response with ``status`` and ``detail``."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


async def _read_body(request: Request, settings: ServeSettings) -> bytes:
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


def _parse_texts(body: bytes, settings: ServeSettings) -> tuple[list[str], bool]:
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
            + (f"; unknown fields: {sorted(unknown)}" if unknown else ""),
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


def create_app(model: ServedModel, settings: ServeSettings | None = None) -> FastAPI:
    """Build the service around ``model``.

    Parameters
    ----------
    model : ServedModel
        What scores texts, with its operating threshold and description.
    settings : ServeSettings, optional
        Limits and the optional bearer token.
    """
    settings = settings or ServeSettings()
    metrics = ServiceMetrics()
    # Scoring is CPU-bound and mostly holds the GIL, so a few threads do as much
    # as the default 40; every extra thread that ever scores keeps its own
    # malloc arena and stack, which showed up as resident memory creeping up.
    batcher = MicroBatcher(
        model.score_details, max_texts=settings.batch_texts, runners=settings.score_threads
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        await batcher.aclose()  # uvicorn has finished the in-flight requests by now

    app = FastAPI(
        title="gatebench detection service",
        version=model.info().get("model_version", "unknown"),
        description="Scores texts for prompt injection and jailbreak attempts.",
        lifespan=lifespan,
    )
    app.state.metrics = metrics
    app.state.batcher = batcher

    @app.exception_handler(BadRequest)
    async def _bad_request(request: Request, exc: BadRequest) -> JSONResponse:
        metrics.count_error(exc.status)
        return JSONResponse({"detail": exc.detail}, status_code=exc.status, headers=exc.headers)

    expected = f"Bearer {settings.token}".encode() if settings.token else None

    def _authorise(request: Request) -> None:
        # Checked first thing in every /v1/ endpoint, before the body is read. A
        # function rather than an HTTP middleware: Starlette's BaseHTTPMiddleware
        # wraps every request in extra tasks and streams, which cost more CPU per
        # request than scoring a short text with a light model.
        if expected is None:
            return
        given = request.headers.get("authorization", "").encode("utf-8", "surrogateescape")
        if not hmac.compare_digest(given, expected):
            raise BadRequest(401, "missing or wrong bearer token", {"WWW-Authenticate": "Bearer"})

    @app.post("/v1/score", summary="Score one text or a batch")
    async def score(request: Request) -> JSONResponse:
        """Body ``{"text": "..."}`` or ``{"texts": ["...", ...]}``.

        Each result has the score, the decision at the model's operating
        threshold, the stage that decided, the chunk that drove a long
        input's score, and per-stage timings in milliseconds.
        """
        t0 = time.perf_counter()
        _authorise(request)
        texts, batch = _parse_texts(await _read_body(request, settings), settings)
        results = await batcher.score(texts)
        elapsed = (time.perf_counter() - t0) * 1000.0
        metrics.observe(results, elapsed)
        body: dict[str, Any] = {"threshold": model.threshold, "elapsed_ms": elapsed}
        body.update({"results": results} if batch else results[0])
        return JSONResponse(body)

    @app.get("/v1/info", summary="Model version, trace id, operating point, heads")
    async def info(request: Request) -> dict[str, Any]:
        _authorise(request)
        return {**model.info(), "limits": settings.model_dump(exclude={"token"})}

    @app.get("/healthz", summary="Liveness")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics", summary="Prometheus metrics", response_class=PlainTextResponse)
    async def prometheus() -> PlainTextResponse:
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    return app
