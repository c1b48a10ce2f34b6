"""Build a :class:`DiagnosticContext` from a trace frame by running the pipeline's pieces.

``api.evaluate`` has every field in hand and builds the context from its own
cross-validation; this builder runs the same :func:`gatebench.cv.cross_validate`
for callers that start from a frame: tests with synthetic
traces, benchmarks, and re-diagnosing a finished run (pass its
``checkpoints`` folder and trace id, and every fold loads instead of refits).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gatebench import cv, summary
from gatebench.detectors import DetectorSpec
from gatebench.diagnostics.context import DiagnosticContext
from gatebench.parallel import Executor

__all__ = ["build_context"]

FRAME_DEFAULTS = {
    "chunk": 0,
    "n_chunks": 1,
    "parent_id": None,
    "language": None,
    "position": "user",
    "role": "evaluation",
}


def _complete(frame: pd.DataFrame) -> pd.DataFrame:
    """Fill the columns a minimal synthetic frame may lack."""
    out = frame.reset_index(drop=True).copy()
    for col, value in FRAME_DEFAULTS.items():
        if col not in out:
            out[col] = value
    if "row_id" not in out:
        out["row_id"] = np.arange(len(out))
    if "family" not in out:
        out["family"] = "balanced"
    if "prompt_chars" not in out:
        out["prompt_chars"] = out.groupby("sample_id")["text"].transform(
            lambda t: t.str.len().max()
        )
    return out


def _infer_primary(frame: pd.DataFrame) -> dict[str, str]:
    """Card-free primary metric per source: recall if all attack, ODA if all benign, else F1."""
    out = {}
    for name, labels in frame.groupby("source")["label"]:
        present = set(labels.tolist())
        out[str(name)] = "f1" if len(present) == 2 else ("recall" if present == {1} else "oda")
    return out


def build_context(
    frame: pd.DataFrame,
    detector: DetectorSpec,
    *,
    seed: int = 0,
    n_splits: int = 5,
    fpr: float = 0.01,
    passes: tuple[str, ...] = ("strat", "sgk"),
    folds: dict[str, np.ndarray] | None = None,
    primary_metrics: dict[str, str] | None = None,
    n_resamples: int = 200,
    executor: Executor | None = None,
    checkpoint_dir: Path | None = None,
    trace_id: str = "",
) -> DiagnosticContext:
    """Run groups, folds, CV, pooling and the summary on ``frame``; return the context.

    Parameters
    ----------
    frame : DataFrame
        At least ``sample_id``, ``text``, ``label``, ``source``; the other
        trace columns get single-chunk defaults.
    detector : DetectorSpec
        Registered detector to cross-validate.
    folds : dict, optional
        Fold id per row per pass, overriding the splitters (tests plant
        splits this way, e.g. a source-keyed split).
    executor : Executor, optional
        Where the folds run (default: in this process).
    checkpoint_dir, trace_id
        Reuse a finished run's fold checkpoints (the key includes the trace id).
    """
    frame = _complete(frame)
    executor = executor or Executor.sequential()
    run = cv.cross_validate(
        frame,
        detector,
        seed=seed,
        n_splits=n_splits,
        passes=passes,
        folds=folds,
        executor=executor,
        checkpoint_dir=checkpoint_dir,
        context=trace_id,
    )
    if primary_metrics is None:
        primary_metrics = _infer_primary(frame)
    numbers = summary.summarise(
        run.prompts,
        run.results,
        run.labels,
        primary_metrics=primary_metrics,
        fpr=fpr,
        seed=seed,
        n_resamples=n_resamples,
    )
    return DiagnosticContext.of(
        frame,
        run,
        numbers,
        detector=detector,
        seed=seed,
        fpr=fpr,
        primary_metrics=primary_metrics,
        executor=executor,
        n_resamples=n_resamples,
        trace_id=trace_id,
    )
