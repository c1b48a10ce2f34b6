"""The whole latency benchmark: texts, in-process timing, the HTTP sweep, comparisons, targets.

:func:`run_latency_bench` is what ``gatebench bench latency MODEL_DIR``
runs; its JSON-ready result is written as ``latency.json``. Next to the
measurements it records the machine (cores, load average, math-library
thread settings), the latencies the methodology paper and the published
table report, and whether the service's acceptance targets were met.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from gatebench.errors import ConfigError
from gatebench.serve.latency.inprocess import inprocess_latency
from gatebench.serve.latency.stats import loadavg
from gatebench.serve.latency.sweep import http_level, spawned_server
from gatebench.serve.latency.texts import request_texts, texts_for_model
from gatebench.serve.server import ServerThread
from gatebench.served import ServeSettings, served_model

__all__ = ["PAPER_LATENCY", "SCHEMA", "TARGETS", "run_latency_bench"]

SCHEMA = "gatebench.latency/1"


#: End-to-end latency the methodology paper reports for Gate (§5), and the
#: competitor means it quotes (each the mean of every per-dataset figure it cites).
PAPER_LATENCY: dict[str, Any] = {
    "source": "methodology paper §5 (Gate AI, arXiv 2606.02959)",
    "p50_ms": 53.0,
    "mean_ms": 104.0,
    "p95_ms": 571.0,
    "fast_share": 0.9,
    "deferred_share": 0.1,
    "note": "production hardware, warm pods, saturation-free; cold start and queueing not modelled",
    "competitors": [
        {"system": "lakera-guard", "mean_ms": 140.0, "min_ms": 51.0, "max_ms": 305.0, "n": 6},
        {"system": "rebuff", "mean_ms": 23898.0, "min_ms": 18465.0, "max_ms": 29330.0, "n": 2},
    ],
}


#: Acceptance targets of the service (2-core machine, loopback).
TARGETS: dict[str, float] = {
    "http_c1_p50_ms": 10.0,
    "http_c1_p95_ms": 50.0,
    "inprocess_fast_p50_ms": 5.0,
    "c16_min_rps": 200.0,
}


def _published_latency(path: Path | None) -> dict[str, Any]:
    from gatebench.compare.pareto import latency_rows
    from gatebench.compare.published import load_published, published_path
    from gatebench.errors import GatebenchError

    where = published_path(path)
    try:
        table = load_published(where)
    except GatebenchError as exc:
        return {"path": str(where), "error": str(exc), "systems": []}
    rows = [{k: v for k, v in r.items() if k != "rows"} for r in latency_rows(table)]
    return {
        "path": str(where),
        "note": "means of the latency_ms rows of the published table; they mix hardware, "
        "batch sizes and network round trips (self_eval = the system's own authors)",
        "systems": rows,
    }


def _targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    levels = {lv["concurrency"]: lv for lv in result["http"]["levels"]}
    out = []

    def add(
        name: str, target: float, measured: float | None, higher_better: bool, ok: bool = True
    ) -> None:
        met = None
        if measured is not None:
            met = ok and (measured >= target if higher_better else measured <= target)
        out.append({"name": name, "target": target, "measured": measured, "met": met})

    c1 = levels.get(1)
    if c1 is not None and c1["ok"]:
        lat = c1["latency_ms"]
        add("HTTP p50 at concurrency 1 (ms)", TARGETS["http_c1_p50_ms"], lat["p50"], False)
        add("HTTP p95 at concurrency 1 (ms)", TARGETS["http_c1_p95_ms"], lat["p95"], False)
    inproc = result.get("in_process") or {}
    fast = (inproc.get("single") or {}).get("stages", {}).get("fast")
    if fast:
        add(
            "in-process fast path p50 (ms)",
            TARGETS["inprocess_fast_p50_ms"],
            fast["latency_ms"].get("p50"),
            False,
        )
    c16 = levels.get(16)
    if c16 is not None:
        name = f"throughput at concurrency 16, no errors (req/s; {c16['errors']} errors)"
        rps = c16["throughput_rps"]
        add(name, TARGETS["c16_min_rps"], rps, True, ok=not c16["errors"])
    return out


def run_latency_bench(
    model_dir: Path,
    *,
    url: str | None = None,
    spawn: bool = False,
    token: str | None = None,
    concurrency: Sequence[int] = (1, 4, 16, 64),
    requests: int = 500,
    seed: int = 0,
    texts_file: Path | None = None,
    data_dir: Path | str | None = None,
    in_process: bool = True,
    n_single: int = 300,
    batch_sizes: Sequence[int] = (1, 16, 256),
    published: Path | None = None,
    workers: int = 1,
) -> dict[str, Any]:
    """Run the HTTP sweep and the in-process measurements; return the JSON-ready result.

    Parameters
    ----------
    model_dir : path
        A model directory (loaded for the in-process figures and, without
        ``url``, served).
    url : str, optional
        Measure this running service instead of starting one.
    spawn : bool
        Without ``url``: serve from a child process (``gatebench serve``) rather
        than a thread of this one, so that the load generator does not share
        the server's interpreter lock.
    workers : int
        Server processes (``gatebench serve --workers``); more than one implies
        ``spawn``.
    """
    if not concurrency or any(c < 1 for c in concurrency):
        raise ConfigError(f"--concurrency {list(concurrency)!r}: give levels >= 1, e.g. 1,4,16")
    if requests < 1:
        raise ConfigError(f"--requests {requests}: give at least 1 request per level")
    n_pool = max(requests, n_single, 64)
    texts_file, seen = texts_for_model(model_dir, texts_file)
    texts, text_info = request_texts(n_pool, seed=seed, texts_file=texts_file, data_dir=data_dir)
    text_info["seen_in_training"] = seen
    settings = ServeSettings(token=token)
    served = served_model(model_dir, settings)
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "model_dir": str(model_dir),
        "model": {k: v for k, v in served.info().items() if k != "detector_spec"},
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "packages": {p: _version(p) for p in ("gatebench", "uvicorn", "fastapi", "httpx")},
            "loadavg_start": loadavg(),
            "math_threads": {
                v: os.environ.get(v)
                for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
            },
        },
        "texts": text_info,
        "config": {
            "concurrency": list(concurrency),
            "requests_per_level": requests,
            "seed": seed,
            "n_single": n_single,
            "batch_sizes": list(batch_sizes),
            "workers": workers,
        },
    }
    if in_process:
        result["in_process"] = inprocess_latency(
            served, texts, n_single=n_single, batch_sizes=batch_sizes
        )
    with contextlib.ExitStack() as stack:
        pid, scope = None, None
        if url is not None:
            where, how = url.rstrip("/"), "external (--url)"
        elif spawn or workers > 1:
            args = ["--workers", str(workers), *(["--token", token] if token else [])]
            where, pid = stack.enter_context(spawned_server(model_dir, args=args))
            how = f"child process (`gatebench serve --workers {workers}`), loopback"
            scope = "server process" + (f" and its {workers} workers" if workers > 1 else "")
        else:
            where = stack.enter_context(ServerThread(served, settings)).url
            how = "thread of the benchmarking process (ServerThread), loopback"
            scope = "benchmark process: server thread and load generator together"
        levels = [
            http_level(
                where,
                texts[:requests],
                concurrency=c,
                requests=requests,
                token=token,
                cpu_pid=pid,
                cpu_scope=scope,
            )
            for c in concurrency
        ]
    result["http"] = {
        "url": where,
        "server": how,
        "client": "httpx.AsyncClient, closed loop: each level keeps exactly `concurrency` "
        "requests in flight; one warm-up request per connection is not counted",
        "levels": levels,
    }
    result["machine"]["loadavg_end"] = loadavg()
    result["comparison"] = {"paper": PAPER_LATENCY, "published": _published_latency(published)}
    result["targets"] = _targets(result)
    return result


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
