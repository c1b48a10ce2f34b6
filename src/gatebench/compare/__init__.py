"""Comparisons: published competitor numbers at matched FPR, and runs side by side.

Entry points for the pipeline and the CLI:

* :func:`build_comparisons` (run directory + published table ->
  ``result.json["comparisons"]``);
* :func:`compare_runs` and :func:`format_compare` (``gatebench compare RUN_DIR...``).
"""

from __future__ import annotations

import os
from typing import Any

from gatebench.compare.failures import failure_report
from gatebench.compare.leaderboard import leaderboard
from gatebench.compare.pareto import global_pareto, latency_rows, per_dataset_pareto
from gatebench.compare.published import (
    PublishedTable,
    load_published,
    published_path,
)
from gatebench.compare.render import (
    dataset_rows,
    format_compare,
    format_table,
    latency_table_rows,
    leaderboard_rows,
    run_rows,
)
from gatebench.compare.runs import compare_runs
from gatebench.rundata import RunData, load_run

__all__ = [
    "PublishedTable",
    "RunData",
    "build_comparisons",
    "compare_runs",
    "dataset_rows",
    "format_compare",
    "format_table",
    "latency_table_rows",
    "leaderboard_rows",
    "load_published",
    "load_run",
    "published_path",
    "run_rows",
]


def build_comparisons(
    run_dir: str | os.PathLike[str] | RunData,
    published_path: str | os.PathLike[str] | None = None,
    *,
    n_resamples: int = 2000,
    seed: int | None = None,
    include_self_eval: bool = False,
) -> dict[str, Any]:
    """Everything ``result.json["comparisons"]`` holds, from a finished run directory.

    Parameters
    ----------
    run_dir : path or RunData
        A finished run directory (``result.json``, ``oof.parquet``), or a run
        being written, already in memory; the adapter error join reads
        ``oof_chunks.parquet`` and ``manifest.json`` from its directory.
    published_path : path, optional
        Competitor table (else ``$GATEBENCH_PUBLISHED``, else the shared default).
    n_resamples : int
        B of the matched-FPR and sample-size-matched intervals.
    seed : int, optional
        Default: the run's root seed.
    include_self_eval : bool
        Rank and pick the best competitor among self-evaluations too
        (default: third-party numbers only; self-evaluations are listed with
        an asterisk as upper bounds either way).

    Returns
    -------
    dict
        JSON-ready: ``published`` (provenance, unmapped and composite rows),
        ``threshold``, ``leaderboard`` (per dataset), ``pareto`` (global and
        per dataset), ``latency`` (ours and published), ``failures``.
    """
    run = run_dir if isinstance(run_dir, RunData) else load_run(run_dir, with_oof=True)
    table = load_published(published_path)
    lat = run.result.latency_ms.model_dump(exclude={"samples"})
    return {
        "published": table.provenance(),
        "threshold": run.threshold,
        "target_fpr": run.target_fpr,
        "detector": run.label(),
        "boolean_only": run.boolean_only,
        "leaderboard": leaderboard(
            run, table, seed=seed, n_resamples=n_resamples, include_self_eval=include_self_eval
        ),
        "pareto": {
            "global": global_pareto(run, table),
            "per_dataset": per_dataset_pareto(run, table),
        },
        "latency": {
            "ours": lat,
            "published": latency_rows(table),
            "note": "published latencies mix hardware, batch sizes and network round trips",
        },
        "failures": failure_report(run),
        "run_dir": str(run.run_dir),
    }
