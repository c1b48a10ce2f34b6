"""The HTTP sweep: closed-loop concurrency levels against a running service.

For each concurrency level a fixed number of ``POST /v1/score`` requests is
sent with exactly that many in flight (asyncio + httpx, one keep-alive
connection per in-flight slot). Latency is measured at the client, end to
end; the response's ``stage`` splits it into the fast and deferred paths and
its ``timings_ms`` give the model's share, so the HTTP overhead (client
latency minus model time) shows separately. The service is an external URL,
a thread of this process, or ``gatebench serve`` in a child process
(:func:`spawned_server`), whose CPU time is read from ``/proc``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from gatebench.errors import ConfigError
from gatebench.serve.latency.stats import loadavg, summarize_records

__all__ = ["cpu_seconds", "http_level", "process_tree", "spawned_server"]


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
    load_before = loadavg()
    cpu0 = cpu_seconds(cpu_pid) if cpu_scope else 0.0
    records, wall = asyncio.run(_closed_loop(url, texts, concurrency, requests, token, timeout))
    cpu = cpu_seconds(cpu_pid) - cpu0 if cpu_scope else None
    out = summarize_records(records, wall, concurrency)
    out["loadavg"] = {"before": load_before, "after": loadavg()}
    # The warm-up requests (one per connection) are inside the CPU window too.
    out["cpu_ms_per_request"] = None if cpu is None else 1e3 * cpu / (requests + concurrency)
    out["cpu_scope"] = cpu_scope
    return out
