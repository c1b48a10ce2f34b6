"""Everything a diagnostic may read: what ``api.evaluate`` has in hand after the metrics step."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gatebench.cv import CrossValidation, FoldResult
from gatebench.detectors import DetectorSpec
from gatebench.parallel import Executor
from gatebench.result import Measurements
from gatebench.split import HEADLINE_PASS, GroupResult
from gatebench.trace import row_positions, scored_rows

__all__ = ["DiagnosticContext"]


@dataclass
class DiagnosticContext:
    """The evaluation's inputs and outputs, as the checks see them.

    Parameters
    ----------
    frame : DataFrame
        The trace frame, one row per chunk (``text``, ``label``, ``source``,
        ``sample_id``, ``parent_id``, ``prompt_chars``, ...). Fold indices
        are positions into it.
    prompts : DataFrame
        Per-(pass, prompt) OOF rows after max pooling (``cv.pool_to_prompts``).
    chunks : DataFrame
        Per-(pass, chunk) OOF rows (``cv.chunk_table``).
    results : list of FoldResult
        Every fold of every pass.
    groups : GroupResult or None
        Composite group keys; None when the grouped pass was not run.
    labels : ndarray
        Per-row (chunk) labels.
    detector : DetectorSpec
        The detector under evaluation; refits build it fresh from this spec.
    folds : dict of str -> ndarray
        Fold id per row, per pass (``strat``, optionally ``sgk``).
    seed : int
        Root seed; every random step of a check uses a named child of it.
    fpr : float
        τ, the FPR cap of the headline operating point.
    theta_op : float
        The headline operating threshold θ_op.
    numbers : Measurements
        The output of :func:`gatebench.summary.summarise`.
    primary_metrics : dict of str -> str
        Source -> primary metric (``f1``, ``recall``, ``oda``) from its card.
    executor : Executor
        Where refits run.
    n_resamples : int
        Bootstrap resamples for the checks that report intervals.
    trace_id : str
        For provenance only.
    """

    frame: pd.DataFrame
    prompts: pd.DataFrame
    chunks: pd.DataFrame
    results: list[FoldResult]
    groups: GroupResult | None
    labels: np.ndarray
    detector: DetectorSpec
    folds: dict[str, np.ndarray]
    seed: int
    fpr: float
    theta_op: float
    numbers: Measurements
    primary_metrics: dict[str, str] = field(default_factory=dict)
    executor: Executor = field(default_factory=Executor)
    n_resamples: int = 1000
    trace_id: str = ""
    # Refitted fold models, shared by the expensive checks that need one.
    cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(
        cls,
        frame: pd.DataFrame,
        run: CrossValidation,
        numbers: Measurements,
        *,
        detector: DetectorSpec,
        seed: int,
        fpr: float,
        primary_metrics: dict[str, str],
        executor: Executor,
        n_resamples: int,
        trace_id: str = "",
    ) -> DiagnosticContext:
        """The context of a finished cross-validation and its summary."""
        ctx = cls(
            frame=frame,
            prompts=run.prompts,
            chunks=run.chunks,
            results=run.results,
            groups=run.groups,
            labels=run.labels,
            detector=detector,
            folds=run.folds,
            seed=seed,
            fpr=fpr,
            theta_op=numbers.operating_point.threshold,
            numbers=numbers,
            primary_metrics=primary_metrics,
            executor=executor,
            n_resamples=n_resamples,
            trace_id=trace_id,
        )
        ctx.cache["texts"] = run.texts
        return ctx

    def _column(self, key: str, column: str) -> np.ndarray:
        """One frame column as an object array, built once per context."""
        if key not in self.cache:
            self.cache[key] = self.frame[column].to_numpy(dtype=object)
        out: np.ndarray = self.cache[key]
        return out

    @property
    def texts(self) -> np.ndarray:
        """Row texts as an object array (what the CV workers receive)."""
        return self._column("texts", "text")

    @property
    def sources(self) -> np.ndarray:
        """Row sources as an object array (what the CV workers receive with the texts)."""
        return self._column("sources", "source")

    @property
    def positions(self) -> np.ndarray | None:
        """Row positions (what the CV workers receive with the texts); None if unknown."""
        if "positions" not in self.cache:
            self.cache["positions"] = row_positions(self.frame)
        out: np.ndarray | None = self.cache["positions"]
        return out

    @property
    def scored(self) -> np.ndarray:
        """True for evaluation rows; training-corpus rows are fitted on, never scored."""
        return scored_rows(self.frame)

    @property
    def headline(self) -> pd.DataFrame:
        """Per-prompt OOF rows of the headline (StratifiedKFold) pass."""
        return self.prompts[self.prompts["pass"] == HEADLINE_PASS]

    def pass_results(self, pass_name: str) -> list[FoldResult]:
        """Fold results of one pass, in fold order."""
        return sorted((r for r in self.results if r.pass_name == pass_name), key=lambda r: r.fold)

    def primary_metric(self, source: str, labels: np.ndarray) -> str:
        """The source's card metric, else inferred from its labels (f1/recall/oda)."""
        if source in self.primary_metrics:
            return str(self.primary_metrics[source])
        if labels.min() == labels.max():
            return "recall" if labels[0] == 1 else "oda"
        return "f1"
