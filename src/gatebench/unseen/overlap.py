"""Which evaluated prompts the model has already seen: its training trace, rebuilt and matched.

A never-seen figure is only worth its name if no evaluated text (or a
near-duplicate, or a translation grouped with it) sat in the model's fit.
The model directory records the trace it was trained on; that trace is
rebuilt from the same files (its id must match, or the mirror changed), and
the evaluated rows are grouped with it by the run's composite key: exact
normalised text, MinHash near-duplicate cluster, shared parent or prompt id,
with the LSH seed the training trace used.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gatebench.artifacts import read_json
from gatebench.errors import DataError
from gatebench.trace import Trace, TraceSpec, build_trace, composite_groups, shares_group_with

__all__ = ["overlapping_prompts", "training_spec", "training_trace"]

_FIX = "pass --keep-overlap to use every row without the check"


def training_spec(meta: Mapping[str, Any], model_dir: Path, fix: str = _FIX) -> dict[str, Any]:
    """The trace spec a model was trained on: its manifest ``meta``, else its evaluation run's.

    ``fix`` ends the refusal of a model that records neither.
    """
    spec = meta.get("trace_spec")
    if isinstance(spec, dict):
        return spec
    run = meta.get("evaluation_run")
    manifest = Path(str(run)) / "manifest.json" if run else None
    if manifest is not None and manifest.is_file():
        recorded = read_json(manifest).get("trace", {}).get("spec")
        if isinstance(recorded, dict):
            return recorded
    raise DataError(
        f"{model_dir} does not record the trace it was trained on (no trace_spec, and its "
        f"evaluation run {run!r} is not readable), so its training rows cannot be read; "
        f"retrain it with this gatebench, or {fix}"
    )


def training_trace(
    meta: Mapping[str, Any],
    model_dir: Path,
    *,
    data_dir: Path | None,
    cache_dir: Path | None,
    fix: str = _FIX,
) -> Trace:
    """Rebuild the training trace of the model whose manifest is ``meta``; refuse changed files.

    ``fix`` ends each refusal: the caller's way round a trace it cannot rebuild.
    """
    spec = training_spec(meta, model_dir, fix)
    try:
        trace = build_trace(
            TraceSpec(**{**spec, "sources": tuple(spec["sources"])}),
            data_dir=data_dir,
            cache_dir=cache_dir,
        )
    except DataError as exc:
        raise DataError(
            f"{model_dir}: the prompts it was trained on cannot be read, because its "
            "training trace cannot be rebuilt here; point --data-dir at the files it was "
            f"trained on, or {fix}. ({exc})"
        ) from None
    want = meta.get("trace_id")
    if want and trace.trace_id != want:
        raise DataError(
            f"{model_dir} was trained on trace {str(want)[:12]}…, but its sources now give "
            f"{trace.trace_id[:12]}… (the data files, a loader's version or the trace format "
            "changed since); retrain it with this gatebench, point --data-dir at the files "
            f"it was trained on, or {fix}"
        )
    return trace


def overlapping_prompts(train: pd.DataFrame, evaluated: pd.DataFrame, seed: int) -> set[str]:
    """Sample ids of ``evaluated`` that share a composite group with any ``train`` row.

    ``seed`` is the training trace's root seed, so the MinHash clusters are
    those its own grouping used.
    """
    columns = ["text", "sample_id", "parent_id"]
    both = pd.concat([train[columns], evaluated[columns]], ignore_index=True)
    from_train = np.arange(len(both)) < len(train)
    hit = shares_group_with(composite_groups(both, seed).groups, from_train)[len(train) :]
    return set(evaluated.loc[hit, "sample_id"].astype(str))
