"""Several runs on one trace in one leaderboard (``gatebench compare RUN_DIR...``).

Per run: the headline micro metrics with their CIs (from result.json), macro
F1, AUC (not for boolean-only detectors), per-request latency (p50/p95), the
adapter error rate with metrics both ways and the truncated share. Between
runs: paired bootstrap CIs of each difference against a reference run
(:mod:`gatebench.compare.paired`). Per dataset: each run's primary metric with
its CI and paired difference, and, with the published table, each run's
"vs best competitor" and matched-FPR line. Matched-FPR lines between the runs
themselves (:mod:`gatebench.compare.matched_runs`): pooled, every run with a
score curve re-thresholded to each other run's FPR (``matched``), and per
balanced dataset (``matched_runs`` in each run's cell). Published latency
rows close it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gatebench.compare.failures import failure_report
from gatebench.compare.leaderboard import leaderboard
from gatebench.compare.matched_runs import RunScores, dataset_matched_runs, pooled_matched
from gatebench.compare.matching import CAVEAT
from gatebench.compare.paired import paired_bootstrap
from gatebench.compare.pareto import latency_rows
from gatebench.compare.published import load_published
from gatebench.errors import ConfigError
from gatebench.result import Interval
from gatebench.rundata import RunData, load_run

__all__ = ["compare_runs"]

BOOLEAN_NOTE = "boolean-only detector: one operating point, no curve (no AUC, ROC, DET or sweep)"


def _labels(runs: list[RunData]) -> list[str]:
    base = [r.label() for r in runs]
    return [
        lab if base.count(lab) == 1 else f"{lab} [{r.run_dir.name}]"
        for lab, r in zip(base, runs, strict=True)
    ]


def _run_row(run: RunData, label: str) -> dict[str, Any]:
    head = run.result.headline
    micro, macro = head.micro, head.macro
    ci = micro.ci
    lat = run.result.latency_ms.model_dump(exclude={"samples"}) if run.result.latency_ms.n else {}
    boolean = run.boolean_only
    return {
        "label": label,
        "detector": run.detector,
        "params": run.params,
        "run_dir": str(run.run_dir),
        "threshold": run.threshold,
        "target_fpr": run.target_fpr,
        **{
            m: {"value": micro.get(m), **_ci(ci.get(m))}
            for m in ("f1", "precision", "recall", "fpr")
        },
        "macro_f1": {"value": macro.f1, **_ci(macro.ci.get("f1"))},
        "auc": None if boolean else {"value": micro.auc, **_ci(head.auc_ci)},
        "boolean_only": boolean,
        "note": BOOLEAN_NOTE if boolean else None,
        "latency_ms": {k: lat.get(k) for k in ("p50", "p95", "mean", "n")} if lat else None,
        "failures": failure_report(run),
    }


def _ci(interval: Interval | None) -> dict[str, Any]:
    if interval is None:
        return {"low": None, "high": None}
    return {"low": interval.low, "high": interval.high}


def _check_same_trace(runs: list[RunData]) -> None:
    ids = {r.trace_id for r in runs}
    if len(ids) != 1:
        listing = ", ".join(f"{r.run_dir}={r.trace_id[:12]}" for r in runs)
        raise ConfigError(
            f"runs are on different traces ({listing}); compare runs of the same trace "
            "(same sources, caps, chunking and seed)"
        )
    ref = set(runs[0].prompts["sample_id"])
    for r in runs[1:]:
        if set(r.prompts["sample_id"]) != ref:
            raise ConfigError(f"{r.run_dir} scored other prompts than {runs[0].run_dir}")


def _matched_note(runs: list[RunScores]) -> str | None:
    if len(runs) < 2:
        return "one run: no other run to match FPR to"
    fixed = [r.label for r in runs if r.boolean_only]
    if not fixed:
        return None
    return (
        f"boolean-only runs ({', '.join(fixed)}) have one operating point: never "
        "re-thresholded, they appear only as the run matched against"
    )


def _dataset_matched(
    y: NDArray[Any],
    src: NDArray[Any],
    runs: list[RunScores],
    primary: dict[str, str],
    *,
    seed: int,
    n_resamples: int,
    level: float,
) -> dict[str, dict[str, dict[str, Any]]]:
    """Source -> run label -> ``matched_runs`` or ``matched_runs_note`` (needs >= 2 runs)."""
    if len(runs) < 2:
        return {}
    out = {}
    for s, metric in primary.items():
        rows = src == s
        out[s] = dataset_matched_runs(
            y[rows],
            [RunScores(r.label, r.scores[rows], r.threshold, r.boolean_only) for r in runs],
            source=s,
            metric=metric,
            seed=seed,
            n_resamples=n_resamples,
            level=level,
        )
    return out


def compare_runs(
    run_dirs: Sequence[str | os.PathLike[str]],
    *,
    reference: int = 0,
    published: str | os.PathLike[str] | None = None,
    n_resamples: int = 2000,
    seed: int | None = None,
    level: float = 0.95,
) -> dict[str, Any]:
    """One leaderboard over runs of the same trace.

    Parameters
    ----------
    run_dirs : sequence of path
        Finished run directories.
    reference : int
        Index of the run differences are taken against.
    published : path, optional
        Competitor table; when it cannot be found the per-dataset rows carry
        no competitor lines (and ``published_error`` says why).
    n_resamples : int
        B for the paired and matched-FPR intervals.
    seed : int, optional
        Resampling seed; default the reference run's root seed.

    Returns
    -------
    dict
        ``runs`` (one row per run), ``differences`` (paired CIs against the
        reference), ``matched`` (pooled matched-FPR lines between runs, see
        :func:`gatebench.compare.matched_runs.pooled_matched_line`) with
        ``matched_note``, ``per_dataset`` (each run's cell carries
        ``matched_runs`` or ``matched_runs_note``), ``published_latency``,
        provenance.
    """
    if len(run_dirs) < 1:
        raise ConfigError("give at least one run directory")
    runs = [load_run(d, with_oof=True) for d in run_dirs]
    if not 0 <= reference < len(runs):
        raise ConfigError(f"reference={reference} is not an index of the {len(runs)} runs")
    _check_same_trace(runs)
    labels = _labels(runs)
    ref = runs[reference]
    root = ref.result.config.seed if seed is None else seed
    order = ref.prompts["sample_id"]
    aligned = [r.prompts.set_index("sample_id").loc[order] for r in runs]
    y = aligned[0]["label"].to_numpy()
    src = aligned[0]["source"].to_numpy()
    primary = {s: ref.primary_metric(s) for s in ref.sources()}
    paired = paired_bootstrap(
        y,
        src,
        {
            lab: a["score"].to_numpy() >= r.threshold
            for lab, a, r in zip(labels, aligned, runs, strict=True)
        },
        reference=labels[reference],
        primary_metrics=primary,
        seed=root,
        n_resamples=n_resamples,
        level=level,
    )
    contenders = [
        RunScores(lab, a["score"].to_numpy(np.float64), r.threshold, r.boolean_only)
        for lab, a, r in zip(labels, aligned, runs, strict=True)
    ]
    matched = pooled_matched(y, src, contenders, seed=root, n_resamples=n_resamples, level=level)
    by_dataset = _dataset_matched(
        y, src, contenders, primary, seed=root, n_resamples=n_resamples, level=level
    )
    table, table_error = None, None
    try:
        table = load_published(published)
    except Exception as exc:  # the run comparison stands without published numbers
        table_error = str(exc)
    boards = (
        {
            lab: {
                row["dataset"]: row
                for row in leaderboard(r, table, seed=root, n_resamples=n_resamples)
            }
            for lab, r in zip(labels, runs, strict=True)
        }
        if table is not None
        else {}
    )
    per_dataset = []
    for s in ref.sources():
        entry: dict[str, Any] = {"dataset": s, "primary_metric": primary[s], "runs": {}}
        lines = by_dataset.get(s, {})
        if any("matched_runs" in v for v in lines.values()):
            entry["matched_runs_caveat"] = CAVEAT
        for lab, r in zip(labels, runs, strict=True):
            b = r.by_source.get(s)
            cell: dict[str, Any] = {
                "value": paired.values[lab][f"source:{s}"],
                "low": b.get("low_95") if b is not None else None,
                "high": b.get("high_95") if b is not None else None,
                "difference": paired.differences.get(lab, {}).get(f"source:{s}"),
            }
            row = boards.get(lab, {}).get(s)
            if row is not None:
                cell["vs_best"] = row["vs_best"]
                cell["matched"] = row["matched"]
                cell["lakera"] = row["lakera"]
                cell["rank"] = row["rank"]
                cell["rank_total"] = row["rank_total"]
            cell.update(lines.get(lab, {}))
            entry["runs"][lab] = cell
        per_dataset.append(entry)
    return {
        "trace_id": ref.trace_id,
        "reference": labels[reference],
        "n_resamples": n_resamples,
        "level": level,
        "seed": root,
        "strata": "source x label (paired: the same resample indices for every run)",
        "runs": [_run_row(r, lab) for r, lab in zip(runs, labels, strict=True)],
        "differences": paired.differences,
        "matched": matched,
        "matched_note": _matched_note(contenders),
        "per_dataset": per_dataset,
        "published": table.provenance() if table is not None else None,
        "published_error": table_error,
        "published_latency": latency_rows(table) if table is not None else [],
        "run_dirs": [str(Path(d)) for d in run_dirs],
    }
