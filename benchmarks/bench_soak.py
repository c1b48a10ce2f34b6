"""Soak test: a fixed request rate, open loop, against `gatebench serve` in a child process.

Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/bench_soak.py \
        MODEL_DIR [--rate 50] [--duration 300] [--warmup 20] [--texts FILE.jsonl] \
        [--seed 0] [--workers 1] [--out soak.json]

The server runs as its own process (``python -m gatebench.cli serve``) so
that its resident memory can be read from ``/proc/PID/status`` and the load
generator does not share its interpreter. Requests are sent on a fixed
timetable (request ``i`` at ``start + i / rate``), whether or not earlier ones
have answered: latency is measured from the *scheduled* send time, so a
stalled server shows up as latency instead of silently lowering the rate
(no coordinated omission). Request texts are a seeded sample of the model's
held-out prompts (``gatebench train --holdout``) or else of the default trace's
prompts, in their natural length mix.

Reported: errors (non-200 answers, transport errors, requests dropped because
``--max-in-flight`` were already pending), p50/p95/p99 per minute, RSS after
warm-up and at the end and its growth, and whether p95 is stable (every
minute's p95 within 2x the median minute's p95). Each minute records the
1-minute load average: on a shared machine latencies are upper bounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from gatebench.serve.latency import (
    process_tree,
    request_texts,
    spawned_server,
    summarize,
    texts_for_model,
)


def rss_mb(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (peak) in MiB from /proc/PID/status, summed over the server's
    process tree (with ``--workers`` the supervisor and each worker)."""
    out = {"VmRSS": 0.0, "VmHWM": 0.0}
    for p in process_tree(pid):
        try:
            lines = Path(f"/proc/{p}/status").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            key, _, value = line.partition(":")
            if key in out:
                out[key] += int(value.split()[0]) / 1024  # kB -> MiB
    return out


async def _send(client: httpx.AsyncClient, text: str, scheduled: float) -> dict[str, Any]:
    sent = time.perf_counter()
    try:
        r = await client.post("/v1/score", json={"text": text})
        status: int | str = r.status_code
        stage = r.json().get("stage") if r.status_code == 200 else None
    except httpx.HTTPError as exc:
        status, stage = type(exc).__name__, None
    done = time.perf_counter()
    return {
        "scheduled": scheduled,
        "ms": (done - scheduled) * 1e3,
        "service_ms": (done - sent) * 1e3,
        "lag_ms": (sent - scheduled) * 1e3,
        "status": status,
        "stage": stage,
    }


async def open_loop(
    url: str,
    texts: list[str],
    *,
    rate: float,
    duration: float,
    pid: int | None = None,
    max_in_flight: int = 1000,
    timeout: float = 30.0,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], float]:
    """Send ``rate * duration`` requests on a fixed timetable.

    Returns per-request records (times relative to the start), RSS samples
    every 10 s when ``pid`` is given, and the start's ``perf_counter``.
    """
    n = round(rate * duration)
    # Drop idle connections before the server's 5 s keep-alive does (no reuse race).
    limits = httpx.Limits(
        max_connections=max_in_flight, max_keepalive_connections=64, keepalive_expiry=2.0
    )
    records: list[dict[str, Any]] = []
    rss: list[dict[str, Any]] = []
    async with httpx.AsyncClient(base_url=url, timeout=timeout, limits=limits) as client:
        start = time.perf_counter()
        pending: set[asyncio.Task[dict[str, Any]]] = set()

        async def sample_rss() -> None:
            while True:
                if pid is not None:
                    rss.append({"t": time.perf_counter() - start, **rss_mb(pid)})
                await asyncio.sleep(10)

        sampler = asyncio.create_task(sample_rss())
        for i in range(n):
            scheduled = start + i / rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if len(pending) >= max_in_flight:
                records.append(
                    {"scheduled": scheduled, "ms": None, "status": "dropped", "stage": None}
                )
                continue
            task = asyncio.create_task(_send(client, texts[i % len(texts)], scheduled))
            pending.add(task)
            task.add_done_callback(lambda t: (pending.discard(t), records.append(t.result())))
        while pending:
            await asyncio.sleep(0.05)
        sampler.cancel()
        if pid is not None:
            rss.append({"t": time.perf_counter() - start, **rss_mb(pid)})
    for r in records:
        r["scheduled"] -= start
    records.sort(key=lambda r: r["scheduled"])
    return records, rss, start


def per_minute(records: list[dict[str, Any]], loads: dict[int, Any]) -> list[dict[str, Any]]:
    """p50/p95/p99, errors and stage split per minute of the timetable."""
    out = []
    minutes = sorted({int(r["scheduled"] // 60) for r in records})
    for m in minutes:
        rs = [r for r in records if int(r["scheduled"] // 60) == m]
        ok = [r for r in rs if r["status"] == 200]
        stages = Counter(r["stage"] for r in ok)
        out.append(
            {
                "minute": m + 1,
                "requests": len(rs),
                "errors": len(rs) - len(ok),
                "latency_ms": summarize([r["ms"] for r in ok]),
                "service_ms": summarize([r["service_ms"] for r in ok]),
                "send_lag_ms": summarize([r["lag_ms"] for r in rs if "lag_ms" in r]),
                "stages": dict(stages),
                "loadavg": loads.get(m),
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("model_dir", type=Path)
    ap.add_argument("--rate", type=float, default=50.0, help="requests per second")
    ap.add_argument("--duration", type=float, default=300.0, help="seconds of measured load")
    ap.add_argument("--warmup", type=float, default=20.0, help="seconds of unmeasured load first")
    ap.add_argument("--texts", type=Path, default=None, help='JSONL of {"text": ...} rows')
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-in-flight", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=1, help="gatebench serve --workers")
    ap.add_argument("--out", type=Path, default=None, help="write the JSON result here")
    args = ap.parse_args(argv)

    texts_file, seen = texts_for_model(args.model_dir, args.texts)
    texts, text_info = request_texts(
        max(2000, int(args.rate * 60)), seed=args.seed, texts_file=texts_file
    )
    text_info["seen_in_training"] = seen
    loads: dict[int, Any] = {}

    async def run(url: str, pid: int) -> tuple[Any, ...]:
        if args.warmup > 0:
            await open_loop(url, texts[::-1], rate=args.rate, duration=args.warmup)
        rss_start = rss_mb(pid)

        async def record_load() -> None:
            m = 0
            while True:
                loads[m] = [round(x, 2) for x in os.getloadavg()]
                m += 1
                await asyncio.sleep(60)

        loader = asyncio.create_task(record_load())
        result = await open_loop(
            url,
            texts,
            rate=args.rate,
            duration=args.duration,
            pid=pid,
            max_in_flight=args.max_in_flight,
        )
        loader.cancel()
        return (rss_start, *result)

    load_start = [round(x, 2) for x in os.getloadavg()]
    with spawned_server(args.model_dir, args=["--workers", str(args.workers)]) as (url, pid):
        rss_start, records, rss, _ = asyncio.run(run(url, pid))
        rss_end = rss_mb(pid)
    ok = [r for r in records if r["status"] == 200]
    errors = Counter(str(r["status"]) for r in records if r["status"] != 200)
    minutes = per_minute(records, loads)
    p95s = [m["latency_ms"]["p95"] for m in minutes if m["latency_ms"]["n"]]
    median_p95 = float(np.median(p95s)) if p95s else None
    stable = bool(p95s) and max(p95s) <= 2 * float(np.median(p95s))
    growth = 100.0 * (rss_end["VmRSS"] - rss_start["VmRSS"]) / rss_start["VmRSS"]
    result = {
        "schema": "gatebench.soak/1",
        "model_dir": str(args.model_dir),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "loadavg_start": load_start,
            "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        },
        "config": {
            "rate": args.rate,
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "seed": args.seed,
            "max_in_flight": args.max_in_flight,
            "workers": args.workers,
            "scheduling": "open loop: request i sent at start + i/rate; latency from the "
            "scheduled time",
        },
        "texts": text_info,
        "requests": len(records),
        "ok": len(ok),
        "errors": sum(errors.values()),
        "errors_by_status": dict(errors),
        "achieved_rps": len(records) / args.duration,
        "latency_ms": summarize([r["ms"] for r in ok]),
        "service_ms": summarize([r["service_ms"] for r in ok]),
        "send_lag_ms": summarize([r["lag_ms"] for r in records if "lag_ms" in r]),
        "stages": dict(Counter(r["stage"] for r in ok)),
        "per_minute": minutes,
        "p95": {
            "per_minute": p95s,
            "median": median_p95,
            "max_over_median": max(p95s) / median_p95 if p95s and median_p95 else None,
            "stable": stable,
            "criterion": "every minute's p95 <= 2 x the median minute's p95",
        },
        "rss_mb": {
            "start_after_warmup": rss_start["VmRSS"],
            "end": rss_end["VmRSS"],
            "peak": rss_end.get("VmHWM"),
            "growth_pct": growth,
            "samples": rss,
        },
    }
    print(
        f"soak: {result['requests']:,} requests at {args.rate:g}/s for {args.duration:g} s, "
        f"{result['errors']} errors {dict(errors) or ''}"
    )
    print(f"{'minute':>6} {'n':>6} {'err':>4} {'p50':>8} {'p95':>8} {'p99':>8} {'load':>6}")
    for m in minutes:
        lat = m["latency_ms"]
        load = (m["loadavg"] or [float("nan")])[0]
        print(
            f"{m['minute']:>6} {m['requests']:>6} {m['errors']:>4} {lat.get('p50', 0):>8.2f} "
            f"{lat.get('p95', 0):>8.2f} {lat.get('p99', 0):>8.2f} {load:>6.2f}"
        )
    print(
        f"RSS {rss_start['VmRSS']:.1f} MiB after warm-up -> {rss_end['VmRSS']:.1f} MiB "
        f"({growth:+.2f}%), peak {rss_end.get('VmHWM', float('nan')):.1f} MiB; "
        f"p95 stable: {stable} (max/median {result['p95']['max_over_median'] or 0:.2f})"
    )
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2))
        print(f"written: {args.out}")
    return 0 if result["errors"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
