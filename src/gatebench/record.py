"""What a finished evaluation writes: the manifest, the folds, the OOF tables and the result.

:func:`gatebench.api.evaluate` computes; this module decides what of it is
kept and in which file, so the run directory's layout (described in
:mod:`gatebench.artifacts`) is assembled in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gatebench import artifacts
from gatebench.config import RunConfig
from gatebench.cv import CrossValidation
from gatebench.detectors import DetectorSpec
from gatebench.result import (
    DetectorInfo,
    DiagnosticRecord,
    EvaluationResult,
    Measurements,
    RunSettings,
    TraceSummary,
)
from gatebench.split import fold_label_marginals
from gatebench.trace import Trace

__all__ = ["Evaluation", "evaluation_result", "write_run_files"]

#: Trace facts the manifest repeats, so a run can be traced to its data without the trace.
MANIFEST_TRACE_KEYS = (
    "trace_id",
    "spec",
    "sources",
    "per_source",
    "skipped_sources",
    "licence_flags",
    "chunking",
    "n_rows",
    "n_prompts",
    "labels",
    "roles",
)


@dataclass(frozen=True)
class Evaluation:
    """What one evaluation computed, before it is written."""

    config: RunConfig
    detector: DetectorSpec
    trace: Trace
    run: CrossValidation
    numbers: Measurements


def write_run_files(run_dir: Path, evaluation: Evaluation, timings: dict[str, float]) -> None:
    """Write the OOF tables, ``trace_info.json``, ``folds.json`` and ``manifest.json``."""
    config, detector, trace = evaluation.config, evaluation.detector, evaluation.trace
    run, numbers = evaluation.run, evaluation.numbers
    artifacts.write_oof(run_dir, run.prompts, run.chunks)
    artifacts.write_json(run_dir / "trace_info.json", trace.info)
    artifacts.write_json(
        run_dir / "folds.json",
        {
            name: {
                "n_splits": config.folds,
                "marginals": fold_label_marginals(run.labels, f),
                "folds": numbers.fold_thresholds[name].folds,
            }
            for name, f in run.folds.items()
        },
    )
    manifest: dict[str, Any] = {
        "schema_version": artifacts.SCHEMA_VERSION,
        "environment": artifacts.environment(),
        "config": config.model_dump(mode="json"),
        "detector": detector.as_dict(),
        "trace": {k: trace.info[k] for k in MANIFEST_TRACE_KEYS if k in trace.info},
        "malformed_rows": len(trace.info["malformed_rows"]),
        "seeds": {
            "root": config.seed,
            "derivation": "numpy SeedSequence(root, spawn_key=crc32(name path))",
        },
        "lsh": run.groups.params.as_dict(),
        "timings_seconds": timings,
    }
    artifacts.write_json(run_dir / "manifest.json", manifest)


def evaluation_result(
    run_dir: Path, evaluation: Evaluation, diagnostics: list[dict[str, Any]]
) -> EvaluationResult:
    """The run's :class:`~gatebench.result.EvaluationResult`, comparisons still empty."""
    config, trace, info = evaluation.config, evaluation.trace, evaluation.trace.info
    detector, run, numbers = evaluation.detector, evaluation.run, evaluation.numbers
    return EvaluationResult(
        **dict(numbers),
        run_dir=run_dir.name,
        trace=TraceSummary(
            trace_id=trace.trace_id,
            n_prompts=info["n_prompts"],
            n_rows=info["n_rows"],
            labels=info["labels"],
            roles=artifacts.jsonable(info.get("roles", {})),
            composition=artifacts.jsonable(trace.composition().to_dict(orient="records")),
            duplicates=artifacts.jsonable(info["duplicates"]),
            skipped_sources=artifacts.jsonable(info["skipped_sources"]),
            licence_flags=artifacts.jsonable(info["licence_flags"]),
            languages=artifacts.jsonable(info.get("languages", {})),
        ),
        detector=DetectorInfo.model_validate(artifacts.jsonable(detector.as_dict())),
        config=RunSettings(
            fpr=config.fpr,
            seed=config.seed,
            folds=config.folds,
            bootstrap=config.bootstrap,
            passes=list(config.passes),
        ),
        groups=artifacts.jsonable(run.groups.stats.as_dict()),
        diagnostics=[DiagnosticRecord.model_validate(d) for d in diagnostics],
    )
