"""Cost and results of the diagnostics battery on a finished run of the default trace.

Rebuilds the :class:`~gatebench.diagnostics.DiagnosticContext` of a run
directory from its manifest, the cached trace and the run's fold checkpoints
(so no fold is refitted to build it), then times ``run_diagnostics`` for the
cheap tier (median of ``--repeats``) and for ``all`` (``--repeats-all``),
and prints one line per check. ``--only`` runs the named checks alone, as
the ``all`` tier would. ``--out`` writes the results as JSON.

Run (after ``gatebench run --out /tmp/run-full`` on the default trace)::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/bench_diagnostics.py \\
        /tmp/run-full --repeats 3 --repeats-all 1 --out /tmp/diag.json

Recorded results are in ``benchmarks/RESULTS.md`` under "Diagnostics".
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from gatebench.artifacts import read_json
from gatebench.detectors import DetectorSpec
from gatebench.diagnostics import DiagnosticContext, build_context, run_diagnostics
from gatebench.parallel import Executor
from gatebench.trace import load_trace
from gatebench.types import Family


def context_from_run(run_dir: Path, *, cache_root: Path, n_jobs: int | None) -> DiagnosticContext:
    """The context of a finished run, with every fold loaded from its checkpoint."""
    manifest = read_json(run_dir / "manifest.json")
    cfg = manifest["config"]
    trace_id = manifest["trace"]["trace_id"]
    trace = load_trace(cache_root / f"trace-{trace_id[:16]}")
    # From the trace's family column, as the run took them: constructed rows (twins) and a
    # user's file have no loader to ask.
    family = trace.frame.drop_duplicates("source").set_index("source")["family"]
    primary = {n: str(Family(f).primary_metric) for n, f in family.items()}
    return build_context(
        trace.frame,
        DetectorSpec(cfg["detector"], cfg["detector_params"]),
        seed=cfg["seed"],
        n_splits=cfg["folds"],
        fpr=cfg["fpr"],
        passes=tuple(cfg["passes"]),
        primary_metrics=primary,
        n_resamples=1000,
        executor=Executor(cfg["backend"], n_jobs),
        checkpoint_dir=run_dir / "checkpoints",
        trace_id=trace.trace_id,
    )


def _time(
    ctx: DiagnosticContext, tier: str, names: list[str] | None = None
) -> tuple[float, list[Any]]:
    ctx.cache.clear()  # every repeat pays for its own refits
    t0 = time.perf_counter()
    results = run_diagnostics(ctx, tier, names=names)
    return time.perf_counter() - t0, results


def main() -> None:
    """Parse arguments, build the context, time both tiers, print and save."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--cache", type=Path, default=Path(".cache/gatebench"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--repeats-all", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--only", nargs="+", default=None, help="these checks alone")
    args = parser.parse_args()

    t0 = time.perf_counter()
    ctx = context_from_run(args.run_dir, cache_root=args.cache, n_jobs=args.jobs)
    print(f"context rebuilt from checkpoints in {time.perf_counter() - t0:.1f} s")
    report: dict[str, Any] = {"run_dir": str(args.run_dir), "tiers": {}}
    tiers = (("cheap", args.repeats), ("all", args.repeats_all))
    if args.only:
        tiers = (("all", max(args.repeats_all, 1)),)
    for tier, repeats in tiers:
        if repeats < 1:
            continue
        walls, results = [], []
        for _ in range(repeats):
            wall, results = _time(ctx, tier, args.only)
            walls.append(wall)
        print(f"\n== {tier}: median {statistics.median(walls):.1f} s over {repeats} ({walls})")
        for r in results:
            print(f"{r.name:27s} {r.status!s:15s} {r.seconds:7.1f}s  {r.statistic}")
        report["tiers"][tier] = {
            "walls": walls,
            "median": statistics.median(walls),
            "results": [r.as_dict() for r in results],
        }
    if args.out:
        args.out.write_text(json.dumps(report, indent=2, allow_nan=False))


if __name__ == "__main__":
    main()
