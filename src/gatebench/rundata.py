"""One finished run as the report and the comparisons read it.

The report never recomputes a metric and the comparisons only re-read the
headline OOF scores, so both take the same object: the validated
:class:`~gatebench.result.EvaluationResult`, the manifest and trace info
(optional, so that a partial run still renders with its gaps stated), and the
headline pass of ``oof.parquet``, read on first use. A run being written can
build one in memory, so its comparisons are computed before ``result.json``
is written once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from gatebench.artifacts import read_json, read_result
from gatebench.errors import DataError
from gatebench.result import DiagnosticRecord, EvaluationResult, SourceRow
from gatebench.split import HEADLINE_PASS

__all__ = ["HEADLINE_PASS", "UNNAMED_DETECTOR", "RunData", "load_run"]

#: What captions call a detector the run did not name: neutral words, never a system's name.
UNNAMED_DETECTOR = "this detector"


@dataclass(frozen=True, eq=False)
class RunData:
    """One run, read once.

    Attributes
    ----------
    run_dir : Path
        The run directory.
    result : EvaluationResult
        ``result.json``, validated.
    manifest : dict
        ``manifest.json``; empty when absent.
    trace_info : dict
        ``trace_info.json``; empty when absent.
    headline_oof : DataFrame, optional
        Headline-pass OOF rows when already in memory; else read from
        ``oof.parquet`` on first use of :attr:`prompts`.
    """

    run_dir: Path
    result: EvaluationResult
    manifest: dict[str, Any] = field(default_factory=dict)
    trace_info: dict[str, Any] = field(default_factory=dict)
    headline_oof: pd.DataFrame | None = None

    @cached_property
    def prompts(self) -> pd.DataFrame:
        """Headline-pass OOF rows: ``sample_id, source, label, score, fold`` (+ the rest)."""
        if self.headline_oof is not None:
            return self.headline_oof
        return _headline_oof(self.run_dir)

    @property
    def detector(self) -> str:
        """The detector's registry name; :data:`UNNAMED_DETECTOR` when it is blank.

        Captions and titles name the system from the run itself, so a report
        of one detector can never be labelled with another's name.
        """
        name = self.result.detector.name.strip()
        return name or UNNAMED_DETECTOR

    @property
    def params(self) -> dict[str, Any]:
        """Detector parameters as run."""
        return dict(self.result.detector.params)

    @property
    def threshold(self) -> float:
        """The global headline threshold."""
        return self.result.operating_point.threshold

    @property
    def target_fpr(self) -> float:
        """τ of the headline rule."""
        op = self.result.operating_point.target_fpr
        return float(self.result.config.fpr if op is None else op)

    @property
    def trace_id(self) -> str:
        """Content hash of the trace the run scored."""
        return self.result.trace.trace_id

    @cached_property
    def by_source(self) -> dict[str, SourceRow]:
        """The per-source rows keyed by source."""
        return {row.source: row for row in self.result.by_source}

    def diagnostic(self, *names: str) -> DiagnosticRecord | None:
        """The first diagnostic whose name is one of ``names`` (aliases allowed)."""
        return self.result.diagnostic(*names)

    def comparison(self, key: str) -> Any:
        """``result.comparisons[key]``, or ``None`` when absent or empty."""
        value = self.result.comparisons.get(key)
        return value if value not in (None, {}, []) else None

    def sources(self) -> list[str]:
        """Sources in the run, sorted."""
        return sorted(self.prompts["source"].unique().tolist())

    def primary_metric(self, source: str) -> str:
        """The source's primary metric as recorded by the run."""
        row = self.by_source.get(source)
        if row is not None and row.primary_metric:
            return row.primary_metric
        y = self.dataset(source)[0]
        return "recall" if y.min() == 1 else ("oda" if y.max() == 0 else "f1")

    def family(self, source: str) -> str:
        """balanced / all_attack / all_benign, from the primary metric."""
        return {"f1": "balanced", "recall": "all_attack", "oda": "all_benign"}[
            self.primary_metric(source)
        ]

    def dataset(self, source: str) -> tuple[NDArray[np.int8], NDArray[np.float64]]:
        """Labels and scores of one source's prompts."""
        part = self.prompts[self.prompts["source"] == source]
        if part.empty:
            raise DataError(f"run {self.run_dir} has no rows of source {source!r}")
        return part["label"].to_numpy(np.int8), part["score"].to_numpy(np.float64)

    @cached_property
    def arrays(self) -> tuple[NDArray[np.int8], NDArray[np.float64], NDArray[Any]]:
        """Labels, scores and sources of every headline prompt."""
        p = self.prompts
        return (
            p["label"].to_numpy(np.int8),
            p["score"].to_numpy(np.float64),
            p["source"].to_numpy(object),
        )

    @property
    def boolean_only(self) -> bool:
        """True when the OOF scores take at most two values, both in {0, 1}."""
        values = np.unique(self.prompts["score"].to_numpy())
        return values.size <= 2 and bool(np.isin(values, [0.0, 1.0]).all())

    def label(self) -> str:
        """Short display name: the detector, with the run folder when params are set."""
        return self.detector if not self.params else f"{self.detector} ({self.run_dir.name})"


def _optional_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    value = read_json(path)
    return dict(value) if isinstance(value, Mapping) else {}


def _headline_oof(run_dir: Path) -> pd.DataFrame:
    try:
        oof = pd.read_parquet(run_dir / "oof.parquet")
    except (OSError, ValueError) as exc:
        raise DataError(
            f"{run_dir} is not a finished run directory (needs result.json and oof.parquet): "
            f"{exc}. Run `gatebench run --out DIR` first."
        ) from exc
    head = oof[oof["pass"] == HEADLINE_PASS].reset_index(drop=True)
    if head.empty or head["score"].isna().any():
        raise DataError(
            f"{run_dir / 'oof.parquet'} has no complete '{HEADLINE_PASS}' pass (missing scores); "
            "the run did not finish"
        )
    return head


def load_run(run_dir: str | os.PathLike[str], *, with_oof: bool = False) -> RunData:
    """Read ``result.json`` (required) and the manifest and trace info (optional).

    Parameters
    ----------
    run_dir : path
        A run directory written by ``gatebench run``.
    with_oof : bool
        Also read the headline OOF scores now, so that a run without them
        fails here rather than halfway through a comparison.

    Raises
    ------
    gatebench.errors.SchemaError
        ``result.json`` is missing, corrupt, or of an unreadable schema.
    gatebench.errors.DataError
        ``with_oof`` and ``oof.parquet`` is missing or incomplete.
    """
    root = Path(run_dir)
    run = RunData(
        run_dir=root,
        result=read_result(root),
        manifest=_optional_json(root / "manifest.json"),
        trace_info=_optional_json(root / "trace_info.json"),
    )
    if with_oof:
        _ = run.prompts
    return run
