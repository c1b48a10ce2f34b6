"""Running the service: in the foreground for ``gatebench serve``, or in a thread."""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn

from gatebench.serve.app import create_app
from gatebench.serve.model import ServedModel, ServeSettings
from gatebench.serve.protocol import http_protocol
from gatebench.serve.record import TrafficRecorder
from gatebench.served import served_model

__all__ = ["ServerThread", "app_from_env", "serve_forever", "serve_workers"]


def _config(
    model: ServedModel,
    settings: ServeSettings,
    host: str,
    port: int,
    recorder: TrafficRecorder | None = None,
) -> uvicorn.Config:
    return uvicorn.Config(
        create_app(model, settings, recorder),
        host=host,
        port=port,
        # Limits and a deadline on the request head (uvicorn's parser has neither).
        http=http_protocol(settings),
        log_level="warning",
        # In-flight requests get this long to finish after SIGTERM/SIGINT.
        timeout_graceful_shutdown=10,
        timeout_keep_alive=5,
        limit_concurrency=512,
    )


def serve_forever(
    model: ServedModel,
    settings: ServeSettings,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    recorder: TrafficRecorder | None = None,
) -> None:
    """Serve until interrupted; SIGTERM and SIGINT drain in-flight requests first."""
    uvicorn.Server(_config(model, settings, host, port, recorder)).run()


_MODEL_ENV = "GATEBENCH_SERVE_MODEL_DIR"
_SETTINGS_ENV = "GATEBENCH_SERVE_SETTINGS"


def app_from_env() -> Any:
    """The app for one worker process of :func:`serve_workers` (model and limits from env)."""
    import os
    from pathlib import Path

    settings = ServeSettings.model_validate_json(os.environ[_SETTINGS_ENV])
    return create_app(served_model(Path(os.environ[_MODEL_ENV]), settings), settings)


def serve_workers(
    model_dir: str, settings: ServeSettings, *, host: str, port: int, workers: int
) -> None:
    """Serve with ``workers`` processes on one socket, each holding its own model.

    Scoring is CPU-bound Python, so one process uses about one core whatever
    the concurrency; more processes use more cores (and memory: one model
    each). ``/metrics`` then reports the worker that answers the scrape.
    """
    import os

    os.environ[_MODEL_ENV] = str(model_dir)
    os.environ[_SETTINGS_ENV] = settings.model_dump_json()
    uvicorn.run(
        "gatebench.serve.server:app_from_env",
        factory=True,
        workers=workers,
        host=host,
        port=port,
        http=http_protocol(settings),
        log_level="warning",
        timeout_graceful_shutdown=10,
        timeout_keep_alive=5,
        limit_concurrency=512,
    )


class ServerThread:
    """A real server on loopback in a background thread (tests, latency benchmarks).

    Examples
    --------
    >>> with ServerThread(model, settings) as server:  # doctest: +SKIP
    ...     httpx.get(server.url + "/healthz")
    """

    def __init__(
        self,
        model: ServedModel,
        settings: ServeSettings | None = None,
        recorder: TrafficRecorder | None = None,
    ) -> None:
        config = _config(model, settings or ServeSettings(), "127.0.0.1", 0, recorder)
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, daemon=True)
        self.url = ""

    def __enter__(self) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the test server did not start within 20 s")
            time.sleep(0.02)
        sock: Any = self.server.servers[0].sockets[0]
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=20)
