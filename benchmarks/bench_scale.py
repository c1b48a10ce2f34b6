"""Rows vs wall time and peak memory: bulk scoring, near-duplicate clustering, bootstrap.

Every measurement runs in a fresh subprocess; the parent polls the RSS of the
whole process tree (the command plus dask workers and nannies) every 0.1 s
with psutil and keeps the peak of the sum. Measured, at each size:

(a) ``gatebench score MODEL traffic.parquet --out ...`` (the real CLI),
(b) near-duplicate clustering alone: :func:`gatebench.bulk.audit_file` with no
    model (per-partition signatures + one banding pass),
(c) :func:`gatebench.metrics.bootstrap.bootstrap_headline` (B resamples) on
    synthetic scores of n rows; on dask, B is split into two tasks with child
    seeds (same distribution, not the same replicates as local).

each with ``--backend local`` (one process; bootstrap: two threads) and
``--backend dask`` (LocalCluster, 2 single-threaded worker processes).
Results append to ``--results`` (JSON lines), so an interrupted session keeps
what it measured; ``--report`` prints the markdown tables: medians, the
log-log exponent (``numpy.polyfit`` of log time on log rows, for the wall
time of the command and for its processing time = in-tool time minus pool
start-up, which for dask includes starting the cluster and importing
gatebench on the workers) and an
extrapolation to an N-node cluster from the measured per-partition cost.

Inputs come from ``benchmarks/gen_traffic.py`` (``traffic-10k.parquet`` etc.
in ``--data``). Run::

    .venv/bin/python benchmarks/bench_scale.py --model /tmp/scale/tfidf-model \\
        --sizes 10k,100k --repeats 3
    .venv/bin/python benchmarks/bench_scale.py --model /tmp/scale/tfidf-model \\
        --sizes 1m --repeats 1 --what score,cluster
    .venv/bin/python benchmarks/bench_scale.py --report
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

HERE = Path(__file__).resolve().parent
GATEBENCH = Path(sys.executable).with_name("gatebench")
SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
BATCH_ROWS = 5_000


# --------------------------------------------------------------------------- child modes


def _child_cluster(input_path: str, out_dir: str, backend: str) -> None:
    from gatebench.bulk import audit_file
    from gatebench.parallel import Executor

    summary = audit_file(
        None,
        Path(input_path),
        Path(out_dir),
        batch_rows=BATCH_ROWS,
        executor=Executor(backend, 2 if backend == "dask" else None),
    )
    c = summary["clustering"]
    print(
        json.dumps(
            {
                "internal_s": summary["timing"]["total_s"],
                "stream_s": summary["timing"]["wall_s"],
                "startup_s": summary["timing"]["startup_s"],
                "cluster_s": c["cluster_s"],
                "partition_s_median": summary["timing"]["partition_s_median"],
                "partitions": summary["partitions"],
                "read_s": summary["timing"]["read_s"],
                "write_s": summary["timing"]["write_s"],
                "driver_busy_s": summary["timing"]["driver_busy_s"],
                "distinct_texts": c["distinct_texts"],
                "candidate_pairs": c["candidate_pairs"],
                "rows_in_clusters_size_ge2": c["rows_in_clusters_size_ge2"],
                "clusters_size_ge2": c["clusters_size_ge2"],
            }
        )
    )


def _child_bootstrap(rows: int, backend: str, resamples: int) -> None:
    sys.path.insert(0, str(HERE))
    from bench_bootstrap import synthetic

    from gatebench.metrics.bootstrap import bootstrap_headline, percentile_interval
    from gatebench.seeding import child_seed

    y, s, src = synthetic(rows, 25, seed=20260603)
    t0 = time.perf_counter()
    startup = 0.0
    if backend == "local":
        res = bootstrap_headline(
            y, s, src, thresholds=[0.62, 0.45], seed=0, n_resamples=resamples, n_jobs=2
        )
        f1 = (res.at[0.62]["f1"].low, res.at[0.62]["f1"].high)
    else:
        from distributed import LocalCluster

        from gatebench.parallel import Executor

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
        startup = time.perf_counter() - t0
        try:
            parts = list(
                Executor("dask", scheduler=cluster.scheduler_address).map(
                    _bootstrap_part,
                    [child_seed(0, "bootstrap", i) for i in range(2)],
                    shared={"y": y, "s": s, "src": src, "resamples": resamples // 2},
                )
            )
        finally:
            cluster.close()
        f1 = percentile_interval(np.concatenate(parts))[:2]
    internal = time.perf_counter() - t0
    print(json.dumps({"internal_s": internal, "startup_s": startup, "f1_ci": list(f1)}))


def _bootstrap_part(
    seed: int, *, y: np.ndarray, s: np.ndarray, src: np.ndarray, resamples: int
) -> np.ndarray:
    from gatebench.metrics.bootstrap import bootstrap_headline

    res = bootstrap_headline(
        y,
        s,
        src,
        thresholds=[0.62, 0.45],
        seed=seed,
        n_resamples=resamples,
        n_jobs=1,
        return_replicates=True,
    )
    assert res.replicates is not None
    return res.replicates["f1@0"]


# --------------------------------------------------------------------------- measuring


def _measure(cmd: list[str], poll_s: float = 0.1) -> dict[str, Any]:
    """Run ``cmd``; wall time, peak RSS of its process tree, its last stdout line."""
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    root = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        total = 0
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            procs = []
        for p in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                total += p.memory_info().rss
        peak = max(peak, total)
        time.sleep(poll_s)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    lines = [ln for ln in out.splitlines() if ln.strip()]
    return {
        "wall_s": wall,
        "peak_rss_mb": peak / 2**20,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "stdout_last": lines[-1] if lines else "",
    }


def _run_one(what: str, size: str, backend: str, args: argparse.Namespace) -> dict[str, Any]:
    rows = SIZES[size]
    work = Path(args.work) / f"{what}-{backend}-{size}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    extra: dict[str, Any] = {}
    if what == "score":
        out = work / "scores.parquet"
        cmd = [
            str(GATEBENCH),
            "score",
            args.model,
            str(Path(args.data) / f"traffic-{size}.parquet"),
            "--out",
            str(out),
            "--batch-rows",
            str(BATCH_ROWS),
            "--backend",
            backend,
        ]
        if backend == "dask":
            cmd += ["--jobs", "2"]
        res = _measure(cmd)
        summary = json.loads((work / "scores.summary.json").read_text())
        t = summary["timing"]
        extra = {
            "internal_s": t["wall_s"],
            "startup_s": t["startup_s"],
            "partition_s_median": t["partition_s_median"],
            "partitions": summary["partitions"],
            "read_s": t["read_s"],
            "write_s": t["write_s"],
            "driver_busy_s": t["driver_busy_s"],
            "model": summary["model"]["detector"]["name"],
            "model_dir": summary["model"]["dir"],
            "flagged_share": summary["flagged_share"],
        }
    elif what == "cluster":
        cmd = [
            sys.executable,
            __file__,
            "_cluster",
            str(Path(args.data) / f"traffic-{size}.parquet"),
            str(work),
            backend,
        ]
        res = _measure(cmd)
        extra = json.loads(res["stdout_last"])
    else:
        cmd = [sys.executable, __file__, "_bootstrap", str(rows), backend, str(args.resamples)]
        res = _measure(cmd)
        extra = json.loads(res["stdout_last"])
    shutil.rmtree(work, ignore_errors=True)
    res.pop("stdout_last")
    return {"what": what, "size": size, "rows": rows, "backend": backend, **res, **extra}


# --------------------------------------------------------------------------- report


def _fit(points: list[tuple[int, float]]) -> float | None:
    if len({r for r, _ in points}) < 2:
        return None
    x = np.log([r for r, _ in points])
    y = np.log([t for _, t in points])
    return float(np.polyfit(x, y, 1)[0])


def report(results: list[dict[str, Any]]) -> str:
    """Markdown tables: medians per (what, backend, size), exponents, extrapolation."""
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault((r["what"], r["backend"], r["rows"]), []).append(r)
    lines = [
        "| measurement | backend | rows | runs | wall (s), median | startup (s) "
        "| processing (s) | rows/s (wall) | peak RSS tree (MB), max | load avg (1 min) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    med: dict[tuple[str, str], list[tuple[int, float, float]]] = {}
    for (what, backend, rows), rs in sorted(groups.items()):
        wall = statistics.median(r["wall_s"] for r in rs)
        startup = statistics.median(r.get("startup_s", 0.0) for r in rs)
        proc = statistics.median(r["internal_s"] - r.get("startup_s", 0.0) for r in rs)
        rss = max(r["peak_rss_mb"] for r in rs)
        loads = [r["load_before"][0] for r in rs]
        med.setdefault((what, backend), []).append((rows, wall, proc))
        lines.append(
            f"| {what} | {backend} | {rows:,} | {len(rs)} | {wall:.1f} | {startup:.1f} | "
            f"{proc:.1f} | {rows / wall:,.0f} | {rss:,.0f} | {min(loads):.1f}-{max(loads):.1f} |"
        )
    lines += [
        "",
        "| measurement | backend | sizes | exponent (wall) | exponent (processing) |",
        "|---|---|---|---|---|",
    ]
    for (what, backend), pts in sorted(med.items()):
        e_wall = _fit([(r, w) for r, w, _ in pts])
        e_in = _fit([(r, i) for r, _, i in pts])
        if e_wall is None or e_in is None:
            continue
        sizes = ", ".join(f"{r:,}" for r, _, _ in sorted(pts))
        lines.append(f"| {what} | {backend} | {sizes} | {e_wall:.2f} | {e_in:.2f} |")
    lines += ["", *_extrapolation(results)]
    return "\n".join(lines)


def _extrapolation(results: list[dict[str, Any]]) -> list[str]:
    """N-node estimate from the largest dask run's per-partition cost and driver cost."""
    out: list[str] = []
    for what in ("score", "cluster"):
        runs = [r for r in results if r["what"] == what and r["backend"] == "dask"]
        if not runs:
            continue
        big = max(r["rows"] for r in runs)
        rs = [r for r in runs if r["rows"] == big]
        part_s = statistics.median(r["partition_s_median"] for r in rs)
        parts = statistics.median(r["partitions"] for r in rs)
        # Driver time not spent waiting on workers: read, validate, write, tally.
        driver_s = statistics.median(r["driver_busy_s"] for r in rs) / parts
        serial_s = statistics.median(r.get("cluster_s", 0.0) for r in rs)
        per_worker = BATCH_ROWS / part_s
        out += [
            f"Extrapolation, {what}: measured on the {big:,}-row dask run: "
            f"{part_s:.2f} s per {BATCH_ROWS:,}-row partition on one worker "
            f"({per_worker:,.0f} rows/s/worker), driver (read, write, bookkeeping) "
            f"{driver_s * 1e3:.0f} ms per partition"
            + (f", serial banding pass {serial_s:.1f} s" if serial_s else "")
            + ". Assumes 2 workers per node at this VM's per-core speed and no network limit.",
            "",
            "| nodes (2 workers each) | 10M rows | 100M rows | bound by |",
            "|---|---|---|---|",
        ]
        for nodes in (1, 4, 16, 64):
            cells, bound = [], "workers"
            for total in (10_000_000, 100_000_000):
                work = total / (per_worker * 2 * nodes)
                driver = total / BATCH_ROWS * driver_s
                t = max(work, driver) + serial_s * total / big
                bound = "driver I/O" if driver > work else "workers"
                cells.append(_hms(t))
            out.append(f"| {nodes} | {cells[0]} | {cells[1]} | {bound} |")
        out.append("")
    return out


def _hms(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# --------------------------------------------------------------------------- main


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_cluster":
        _child_cluster(*sys.argv[2:5])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "_bootstrap":
        _child_bootstrap(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="/tmp/scale/tfidf-model")
    ap.add_argument("--data", default="/tmp/scale", help="folder of traffic-*.parquet")
    ap.add_argument("--work", default="/tmp/scale/bench-work")
    ap.add_argument("--results", default="/tmp/scale/bench_scale.jsonl")
    ap.add_argument("--sizes", default="10k,100k")
    ap.add_argument("--what", default="score,cluster,bootstrap")
    ap.add_argument("--backends", default="local,dask")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--report", action="store_true", help="only print the tables")
    args = ap.parse_args()
    results_path = Path(args.results)
    if not args.report:
        # Repeats outermost and backends innermost, so that local and dask runs of
        # one size see the same background load on a shared machine.
        for i in range(args.repeats):
            for size in args.sizes.split(","):
                for what in args.what.split(","):
                    for backend in args.backends.split(","):
                        r = _run_one(what, size, backend, args)
                        r["repeat"] = i
                        with results_path.open("a") as fh:
                            fh.write(json.dumps(r) + "\n")
                        print(
                            f"{what:9s} {backend:5s} {size:5s} #{i}: wall {r['wall_s']:.1f} s, "
                            f"in-tool {r.get('internal_s', 0):.1f} s, "
                            f"peak RSS {r['peak_rss_mb']:.0f} MB, load {r['load_before'][0]:.1f}",
                            flush=True,
                        )
    results = [json.loads(ln) for ln in results_path.read_text().splitlines() if ln.strip()]
    print(report(results))


if __name__ == "__main__":
    main()
