"""Latency of the detection service: HTTP concurrency sweeps and in-process scoring.

``gatebench bench latency MODEL_DIR`` runs both and writes ``latency.json``:

* **HTTP**: a closed-loop sweep, for each concurrency level a fixed number of
  ``POST /v1/score`` requests with exactly that many in flight (asyncio +
  httpx, one keep-alive connection per in-flight slot). Latency is measured at
  the client, end to end; the response's ``stage`` splits it into the fast and
  deferred paths and its ``timings_ms`` give the model's share, so the HTTP
  overhead (client latency minus model time) shows separately.
* **In process**: the same texts through :class:`ServedModel` one at a time
  (windowing and stage attribution included, no HTTP), and the detector's own
  ``score`` on batches of 1, 16 and 256.

Request texts are a seeded sample of the model's held-out prompts when it has
them (``gatebench train --holdout``), else of the default trace's prompts
(rebuilt from their chunks), so short prompts and long documents come in the
evaluation's natural mix; ``texts_file`` replaces them with a JSONL file. The
result says whether the model was fitted on the texts it was timed on.

Every measurement records the 1-minute load average: on a shared machine
numbers taken under load are upper bounds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from gatebench.api import build_trace_from_options, served_model
from gatebench.errors import ConfigError, DataError
from gatebench.modeldir import HOLDOUT_FILE
from gatebench.serve.server import ServerThread
from gatebench.served import ServeSettings
from gatebench.trace import prompts_from_chunks

__all__ = [
    "PAPER_LATENCY",
    "SCHEMA",
    "TARGETS",
    "cpu_seconds",
    "http_level",
    "inprocess_latency",
    "latency_tables",
    "process_tree",
    "prompts_from_chunks",
    "request_texts",
    "run_latency_bench",
    "spawned_server",
    "summarize",
    "texts_for_model",
]

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

_PERCENTILES = (50, 95, 99)


def summarize(ms: Sequence[float]) -> dict[str, Any]:
    """``n``, p50/p95/p99, mean, min and max of latencies in milliseconds."""
    a = np.asarray(list(ms), dtype=np.float64)
    if a.size == 0:
        return {"n": 0}
    p = np.percentile(a, _PERCENTILES)
    return {
        "n": int(a.size),
        **{f"p{q}": float(v) for q, v in zip(_PERCENTILES, p, strict=True)},
        "mean": float(a.mean()),
        "min": float(a.min()),
        "max": float(a.max()),
    }


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - platforms without getloadavg
        return None


# -- request texts -------------------------------------------------------------------
def _texts_from_jsonl(path: Path) -> list[str]:
    texts = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DataError(f"cannot read --texts {path}: {exc}") from exc
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{n}: invalid JSON ({exc.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise DataError(f'{path}:{n}: expected an object with a "text" string')
        if row["text"].strip():
            texts.append(row["text"])
    if not texts:
        raise DataError(f'{path} holds no non-empty {{"text": ...}} rows')
    return texts


def texts_for_model(model_dir: Path, texts_file: Path | None) -> tuple[Path | None, str]:
    """The request texts to use and whether the model was fitted on them.

    A model's held-out prompts (``gatebench train --holdout``) come first: timed
    on its own training texts, a cascade routes a different share to the
    deferred stage than it routes unseen traffic, so the latency mix is off.
    """
    if texts_file is not None:
        return texts_file, "unknown (--texts)"
    held = Path(model_dir) / HOLDOUT_FILE
    if held.is_file():
        return held, "no (the model's held-out prompts)"
    return None, (
        "yes: trace prompts the model was fitted on; train with --holdout 0.2 to time unseen texts"
    )


def _trace_prompts(data_dir: Path | str | None) -> tuple[list[str], dict[str, Any]]:
    """Every prompt of the default trace, rebuilt whole from its chunks."""
    trace = build_trace_from_options(data_dir=data_dir)
    prompts = prompts_from_chunks(trace.frame, int(trace.info["chunking"]["chunk_overlap"]))
    return prompts, {"source": "trace", "trace_id": trace.trace_id, "prompts": len(prompts)}


def request_texts(
    n: int,
    *,
    seed: int = 0,
    texts_file: Path | None = None,
    data_dir: Path | str | None = None,
) -> tuple[list[str], dict[str, Any]]:
    """A seeded sample of ``n`` request texts and where they came from.

    Parameters
    ----------
    n : int
        How many texts (drawn without replacement while the pool lasts).
    seed : int
        Sampling seed.
    texts_file : path, optional
        JSONL of ``{"text": ...}`` rows; default: the default trace's prompts.
    data_dir : path, optional
        Benchmark mirror for the trace (default ``$GATEBENCH_DATA``).
    """
    info: dict[str, Any]
    if texts_file is not None:
        pool, info = _texts_from_jsonl(texts_file), {"source": str(texts_file)}
    else:
        pool, info = _trace_prompts(data_dir)
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(pool), size=n, replace=n > len(pool))
    texts = [pool[i] for i in idx]
    lengths = np.array([len(t) for t in texts], dtype=np.float64)
    info |= {
        "n": n,
        "seed": seed,
        "chars": {
            "p50": float(np.median(lengths)),
            "mean": float(lengths.mean()),
            "p95": float(np.percentile(lengths, 95)),
            "max": int(lengths.max()),
        },
    }
    return texts, info


# -- servers -------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def spawned_server(
    model_dir: Path, *, args: Sequence[str] = (), startup_s: float = 180.0
) -> Iterator[tuple[str, int]]:
    """``gatebench serve MODEL_DIR`` in a child process on a free loopback port.

    Yields ``(url, pid)``; the child is terminated (SIGTERM, then SIGKILL) on exit.
    Its output goes to a temporary log, quoted when it fails to start.
    """
    port = _free_port()
    cmd = [sys.executable, "-m", "gatebench.cli", "serve", str(model_dir), "--port", str(port)]
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([*cmd, *args], stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + startup_s
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read()[-2000:].decode("utf-8", "replace")
                    raise ConfigError(f"`{' '.join(cmd)}` did not start:\n{tail}")
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                        break
                time.sleep(0.2)
            yield url, proc.pid
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# -- HTTP ----------------------------------------------------------------------------
async def _one(client: httpx.AsyncClient, text: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        r = await client.post("/v1/score", json={"text": text})
    except httpx.HTTPError as exc:
        ms = (time.perf_counter() - t0) * 1e3
        return {"ms": ms, "status": None, "error": type(exc).__name__, "message": str(exc)[:200]}
    ms = (time.perf_counter() - t0) * 1e3
    if r.status_code != 200:
        return {"ms": ms, "status": r.status_code}
    body = r.json()
    return {
        "ms": ms,
        "status": 200,
        "stage": str(body.get("stage", "unknown")),
        "server_ms": body.get("elapsed_ms"),
        "timings": body.get("timings_ms") or {},
    }


async def _closed_loop(
    url: str, texts: Sequence[str], concurrency: int, n: int, token: str | None, timeout: float
) -> tuple[list[dict[str, Any]], float]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    # Idle connections are dropped before the server's 5 s keep-alive closes them, so a
    # request never races the server's FIN on a reused connection.
    limits = httpx.Limits(
        max_connections=concurrency, max_keepalive_connections=concurrency, keepalive_expiry=2.0
    )
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=timeout, limits=limits
    ) as client:
        # Open every connection and warm the model before the clock starts.
        await asyncio.gather(*(_one(client, texts[i % len(texts)]) for i in range(concurrency)))
        records: list[dict[str, Any]] = []
        order = iter(range(n))

        async def worker() -> None:
            for i in order:  # one shared iterator: each request index is taken once
                records.append(await _one(client, texts[i % len(texts)]))

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return records, time.perf_counter() - t0


def _stage_block(records: list[dict[str, Any]]) -> dict[str, Any]:
    by: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by.setdefault(r["stage"], []).append(r)
    out = {}
    for stage, rs in sorted(by.items()):
        own = [r["timings"][stage] for r in rs if isinstance(r["timings"].get(stage), int | float)]
        out[stage] = {
            "n": len(rs),
            "share": len(rs) / len(records),
            "latency_ms": summarize([r["ms"] for r in rs]),
            "stage_model_ms": summarize(own),
        }
        if all("cpu_ms" in r for r in rs):
            out[stage]["cpu_ms"] = summarize([r["cpu_ms"] for r in rs])
    return out


def summarize_records(
    records: list[dict[str, Any]], wall_s: float, concurrency: int
) -> dict[str, Any]:
    """One concurrency level's figures from its per-request records."""
    ok = [r for r in records if r["status"] == 200]
    errors = Counter(
        str(r["status"]) if r["status"] is not None else r.get("error", "error")
        for r in records
        if r["status"] != 200
    )
    model = [r["timings"]["total"] for r in ok if "total" in r["timings"]]
    overhead = [r["ms"] - r["timings"]["total"] for r in ok if "total" in r["timings"]]
    server = [r["server_ms"] for r in ok if isinstance(r.get("server_ms"), int | float)]
    return {
        "concurrency": concurrency,
        "requests": len(records),
        "ok": len(ok),
        "errors": sum(errors.values()),
        "errors_by_status": dict(sorted(errors.items())),
        "error_examples": sorted({r["message"] for r in records if r.get("message")})[:5],
        "wall_s": wall_s,
        "throughput_rps": len(ok) / wall_s if wall_s > 0 else None,
        "latency_ms": summarize([r["ms"] for r in ok]),
        "server_ms": summarize(server),
        "model_ms": summarize(model),
        "http_overhead_ms": summarize(overhead),
        "stages": _stage_block(ok) if ok else {},
        "samples_ms": [round(r["ms"], 3) for r in ok],
    }


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux ``/proc``), e.g. a server and its workers."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    return out


def cpu_seconds(pid: int | None = None) -> float:
    """CPU time (user + system) of process ``pid`` and its children, or of this process."""
    if pid is None:
        return time.process_time()
    total = 0
    for p in process_tree(pid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def http_level(
    url: str,
    texts: Sequence[str],
    *,
    concurrency: int,
    requests: int,
    token: str | None = None,
    timeout: float = 60.0,
    cpu_pid: int | None = None,
    cpu_scope: str | None = None,
) -> dict[str, Any]:
    """Send ``requests`` single-text requests with ``concurrency`` in flight; summarise.

    With ``cpu_scope``, the CPU time of process ``cpu_pid`` (None: this
    process) over the level is divided by the requests: unlike wall-clock
    latency it barely moves when other jobs share the machine.
    """
    load_before = _loadavg()
    cpu0 = cpu_seconds(cpu_pid) if cpu_scope else 0.0
    records, wall = asyncio.run(_closed_loop(url, texts, concurrency, requests, token, timeout))
    cpu = cpu_seconds(cpu_pid) - cpu0 if cpu_scope else None
    out = summarize_records(records, wall, concurrency)
    out["loadavg"] = {"before": load_before, "after": _loadavg()}
    # The warm-up requests (one per connection) are inside the CPU window too.
    out["cpu_ms_per_request"] = None if cpu is None else 1e3 * cpu / (requests + concurrency)
    out["cpu_scope"] = cpu_scope
    return out


# -- in process ----------------------------------------------------------------------
def inprocess_latency(
    served: Any,
    texts: Sequence[str],
    *,
    n_single: int = 300,
    batch_sizes: Sequence[int] = (1, 16, 256),
    batch_texts: int = 512,
) -> dict[str, Any]:
    """Scoring without HTTP.

    ``single``: ``served.score_details([text])`` per text (windowing and stage
    attribution as the service does them), split by stage. ``batches``: the
    detector's own ``score(batch)`` at each batch size, over about
    ``batch_texts`` texts (at least three batches).
    """
    served.score_details(list(texts[:3]))  # warm caches and lazy state
    load_before = _loadavg()
    records = []
    for text in texts[:n_single]:
        t0, c0 = time.perf_counter(), time.thread_time()
        r = served.score_details([text])[0]
        ms, cpu = (time.perf_counter() - t0) * 1e3, (time.thread_time() - c0) * 1e3
        records.append({"ms": ms, "cpu_ms": cpu, "stage": r["stage"], "timings": r["timings_ms"]})
    single = {
        "how": "ServedModel.score_details([text]) per text: windowing and stage "
        "attribution included, no HTTP; cpu_ms is the scoring thread's CPU time",
        "latency_ms": summarize([r["ms"] for r in records]),
        "cpu_ms": summarize([r["cpu_ms"] for r in records]),
        "stages": _stage_block(records) if records else {},
    }
    batches = []
    for b in batch_sizes:
        k = max(3, -(-batch_texts // b))
        times = []
        for j in range(k):
            batch = [texts[(j * b + i) % len(texts)] for i in range(b)]
            t0 = time.perf_counter()
            served.detector.score(batch)
            times.append((time.perf_counter() - t0) * 1e3)
        per_batch = summarize(times)
        batches.append(
            {
                "batch": b,
                "batches": k,
                "ms_per_batch": per_batch,
                "ms_per_text": per_batch["mean"] / b,
                "texts_per_s": 1e3 * b / per_batch["mean"],
            }
        )
    return {
        "single": single,
        "batches": batches,
        "batch_how": "detector.score(batch), texts not windowed",
        "loadavg": {"before": load_before, "after": _loadavg()},
    }


# -- the whole benchmark ------------------------------------------------------------
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


def _level_stage(level: dict[str, Any], stage: str, key: str) -> float | None:
    block = level.get("stages", {}).get(stage, {}).get("latency_ms", {})
    value = block.get(key)
    return float(value) if value is not None else None


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
            "loadavg_start": _loadavg(),
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
    result["machine"]["loadavg_end"] = _loadavg()
    result["comparison"] = {"paper": PAPER_LATENCY, "published": _published_latency(published)}
    result["targets"] = _targets(result)
    return result


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


# -- tables --------------------------------------------------------------------------
def _f(x: Any, digits: int = 1) -> str:
    return "" if x is None else f"{x:,.{digits}f}"


def _pair(level: dict[str, Any], stage: str) -> str:
    p50, p95 = _level_stage(level, stage, "p50"), _level_stage(level, stage, "p95")
    return "" if p50 is None else f"{_f(p50)} / {_f(p95)}"


Table = tuple[str, list[str], list[list[str]]]


def _http_table(result: dict[str, Any]) -> Table:
    headers = ["concurrency", "requests", "errors", "req/s", "p50", "p95", "p99", "mean"]
    headers += ["fast %", "fast p50 / p95", "deferred p50 / p95", "HTTP overhead p50"]
    headers += ["CPU ms/req", "load"]
    rows = []
    for lv in result["http"]["levels"]:
        lat, fast = lv["latency_ms"], lv["stages"].get("fast", {}).get("share")
        load = (lv["loadavg"]["before"] or [None])[0]
        rows.append(
            [str(lv["concurrency"]), str(lv["requests"]), str(lv["errors"])]
            + [_f(lv["throughput_rps"])]
            + [_f(lat.get(k), 2) for k in ("p50", "p95", "p99", "mean")]
            + [_f(None if fast is None else 100 * fast), _pair(lv, "fast")]
            + [_pair(lv, "deferred"), _f(lv["http_overhead_ms"].get("p50"), 2)]
            + [_f(lv.get("cpu_ms_per_request"), 2), _f(load, 2)]
        )
    return f"HTTP latency, ms ({result['http']['server']})", headers, rows


def _inprocess_table(inproc: dict[str, Any]) -> Table:
    single = inproc["single"]
    blocks = [("all", {**single, "share": 1.0})]
    blocks += list(single["stages"].items())
    rows = []
    for stage, block in blocks:
        lat = block["latency_ms"]
        rows.append(
            [f"one text, {stage}", str(lat.get("n", 0)), _f(100 * block["share"])]
            + [_f(lat.get(k), 2) for k in ("p50", "p95", "mean")]
            + [_f((block.get("cpu_ms") or {}).get("p50"), 2), ""]
        )
    for b in inproc["batches"]:
        lat = b["ms_per_batch"]
        rows.append(
            [f"batch of {b['batch']}", str(b["batches"]), ""]
            + [_f(lat[k], 2) for k in ("p50", "p95", "mean")]
            + ["", _f(b["texts_per_s"], 0)]
        )
    headers = ["what", "n", "share %", "p50", "p95", "mean", "CPU p50", "texts/s"]
    return "in-process latency, ms (no HTTP)", headers, rows


def _comparison_table(result: dict[str, Any]) -> Table:
    comp = result["comparison"]
    paper = comp["paper"]
    rows = [
        ["Gate, paper §5 (end to end)"]
        + [_f(paper[k]) for k in ("p50_ms", "mean_ms", "p95_ms")]
        + ["paper"]
    ]
    c1 = next((lv for lv in result["http"]["levels"] if lv["concurrency"] == 1), None)
    if c1 and c1["ok"]:
        lat = c1["latency_ms"]
        rows.append(
            ["this service, HTTP, concurrency 1"]
            + [_f(lat[k], 2) for k in ("p50", "mean", "p95")]
            + ["measured here"]
        )
    for c in paper["competitors"]:
        name = f"{c['system']} (n={c['n']}, {c['min_ms']:g}-{c['max_ms']:g})"
        rows.append([name, "", _f(c["mean_ms"]), "", "paper §5"])
    for s in comp["published"].get("systems", []):
        name = f"{s['system']}{'*' if s['self_eval'] else ''} (n={s['n']})"
        rows.append([name, "", _f(s["mean_ms"]), "", "published table"])
    headers = ["system", "p50", "mean", "p95", "source"]
    return "vs the paper and published latencies, ms", headers, rows


def latency_tables(result: dict[str, Any]) -> list[Table]:
    """``(title, headers, rows)`` for the HTTP sweep, in-process figures, comparison, targets."""
    tables = [_http_table(result)]
    if result.get("in_process"):
        tables.append(_inprocess_table(result["in_process"]))
    tables.append(_comparison_table(result))
    if result.get("targets"):
        status = {True: "met", False: "MISSED", None: "n/a"}
        rows = [
            [t["name"], _f(t["target"]), _f(t["measured"], 2), status[t["met"]]]
            for t in result["targets"]
        ]
        tables.append(("targets", ["target", "bound", "measured", "status"], rows))
    return tables
