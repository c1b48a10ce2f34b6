"""The HTTP detection service: one FastAPI app around any scoring model.

Requests are checked in two places, each once: the request head (size,
header count, deadline) by the connection, :mod:`gatebench.serve.protocol`,
and everything else (token, content type, body) by
:mod:`gatebench.serve.validation`, before the model sees a text.

There is no ``/docs`` or ``/redoc``: the pages they serve load their scripts
from a CDN. The machine-readable ``/openapi.json`` stays.
"""

from __future__ import annotations

import contextlib
import hmac
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from gatebench.conversation import ConversationError, plan_scan, pool_plans, window_positions
from gatebench.serve.batcher import MicroBatcher
from gatebench.serve.metrics import ServiceMetrics
from gatebench.serve.model import ServedModel, ServeSettings
from gatebench.serve.openapi import score_request_body, score_responses
from gatebench.serve.record import TrafficRecorder
from gatebench.serve.validation import (
    BadRequest,
    ScoreRequest,
    check_content_type,
    parse_request,
    read_body,
)

__all__ = ["create_app"]


def create_app(
    model: ServedModel,
    settings: ServeSettings | None = None,
    recorder: TrafficRecorder | None = None,
) -> FastAPI:
    """Build the service around ``model``.

    Parameters
    ----------
    model : ServedModel
        What scores texts, with its operating threshold and description.
    settings : ServeSettings, optional
        Limits and the optional bearer token. With a token set, every endpoint
        but ``/healthz`` (``/metrics`` and ``/openapi.json`` included) requires it.
    recorder : TrafficRecorder, optional
        Where a share of the answered inputs, and the blocked ones, are written;
        closed when the app shuts down.
    """
    settings = settings or ServeSettings()
    metrics = ServiceMetrics(model.threshold, model.info().get("shipped_fpr"), recorder)
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
        if recorder is not None:
            recorder.close()

    app = FastAPI(
        title="gatebench detection service",
        version=model.info().get("model_version", "unknown"),
        description="Scores texts for prompt injection and jailbreak attempts.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # served below, behind the token
    )
    app.state.metrics = metrics
    app.state.batcher = batcher

    @app.exception_handler(BadRequest)
    async def _bad_request(request: Request, exc: BadRequest) -> JSONResponse:
        metrics.count_error(exc.status)
        return JSONResponse({"detail": exc.detail}, status_code=exc.status, headers=exc.headers)

    expected = f"Bearer {settings.token}".encode() if settings.token else None

    def _authorise(request: Request) -> None:
        # Checked first thing in every endpoint but /healthz, before the body is read. A
        # function rather than an HTTP middleware: Starlette's BaseHTTPMiddleware
        # wraps every request in extra tasks and streams, which cost more CPU per
        # request than scoring a short text with a light model.
        if expected is None:
            return
        given = request.headers.get("authorization", "").encode("utf-8", "surrogateescape")
        if not hmac.compare_digest(given, expected):
            raise BadRequest(401, "missing or wrong bearer token", {"WWW-Authenticate": "Bearer"})

    async def score_conversations(req: ScoreRequest) -> list[dict[str, Any]]:
        # Planned before anything is scored, so a conversation with nothing to
        # scan is refused (422) rather than answered "allow".
        assert req.conversations is not None and req.policy is not None
        where = "conversations[{}]" if req.batch else "messages"
        size, overlap = settings.chunk_chars, settings.chunk_overlap
        try:
            plans = [
                plan_scan(c, req.policy, size=size, overlap=overlap, where=where.format(n))
                for n, c in enumerate(req.conversations)
            ]
        except ConversationError as exc:
            raise BadRequest(422, str(exc)) from None
        windows = sum(len(p.windows) for p in plans)
        if windows > settings.max_windows:
            raise BadRequest(
                413,
                f"the conversations need {windows:,} windows scored; the limit is "
                f"{settings.max_windows:,} (send fewer messages per request, "
                "or start the server with a larger --max-windows)",
            )
        # Windows are at most chunk_chars long, so each is scored whole, and
        # they share the micro-batcher with plain texts.
        scored = await batcher.score(
            [w.text for p in plans for w in p.windows],
            [q for p in plans for q in window_positions(p)],
        )
        segments = [r["segment"]["text"] if "segment" in r else None for r in scored]
        out = pool_plans(
            plans,
            [r["score"] for r in scored],
            [r["stage"] for r in scored],
            model.threshold,
            segments,
        )
        for result in out:
            result["timings_ms"] = scored[0]["timings_ms"]
        return out

    @app.post(
        "/v1/score",
        summary="Score a text, a conversation, or a batch of either",
        openapi_extra={
            "requestBody": score_request_body(settings),
            "responses": score_responses(),
        },
    )
    async def score(request: Request) -> JSONResponse:
        """Body ``{"text": ...}``, ``{"texts": [...]}``, ``{"messages": [...]}`` or
        ``{"conversations": [[...], ...]}``; conversations may add ``"scan"``,
        texts ``"position"`` / ``"positions"`` (``user``, ``tool``, ``document``).

        A text's result has the score, the decision at the model's operating
        threshold, the stage that decided, the chunk that drove a long
        input's score, and per-stage timings in milliseconds. A conversation's
        result has the conversation score (the maximum over its scanned
        messages), the decision, the message and window that drove it, every
        message's own score, and the scanning policy used.
        """
        t0 = time.perf_counter()
        _authorise(request)
        check_content_type(request.headers.get("content-type"))
        req = parse_request(await read_body(request, settings), settings)
        if req.texts is not None:
            results = await batcher.score(req.texts, req.positions)
        else:
            results = await score_conversations(req)
        elapsed = (time.perf_counter() - t0) * 1000.0
        metrics.observe(results, elapsed, req.positions if req.texts is not None else None)
        if recorder is not None:
            inputs = req.texts if req.texts is not None else req.conversations
            assert inputs is not None
            recorder.record(inputs, results, req.positions, model.threshold)
        body: dict[str, Any] = {"threshold": model.threshold, "elapsed_ms": elapsed}
        body.update({"results": results} if req.batch else results[0])
        return JSONResponse(body)

    @app.get("/v1/info", summary="Model version, trace id, operating point, heads")
    async def info(request: Request) -> dict[str, Any]:
        _authorise(request)
        return {**model.info(), "limits": settings.model_dump(exclude={"token"})}

    @app.get("/healthz", summary="Liveness")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics", summary="Prometheus metrics", response_class=PlainTextResponse)
    async def prometheus(request: Request) -> PlainTextResponse:
        _authorise(request)
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi(request: Request) -> JSONResponse:
        _authorise(request)
        return JSONResponse(app.openapi())

    return app
