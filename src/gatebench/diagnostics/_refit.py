"""Refitting fold models for the expensive checks, with the run's own child seeds.

The evaluation keeps scores, not models. Checks that need a model (paraphrase,
permutation importance, head agreement) rebuild one fold's model by calling
:func:`gatebench.cv.fit_fold`, the function :func:`gatebench.cv.run_fold` builds it
with: same inner split seed, same detector seed, same rows. The determinism replay
verifies that the rebuilt model scores the held-out rows byte-for-byte as the run did.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gatebench import cv
from gatebench.cv import FittedFold, fit_fold
from gatebench.detectors import (
    Detector,
    DetectorSpec,
    check_scores,
    make_detector,
    score_detector,
)
from gatebench.diagnostics.context import DiagnosticContext
from gatebench.seeding import child_seed
from gatebench.threshold import select_operating_point
from gatebench.trace import positions_at

__all__ = ["FittedFold", "FoldScores", "fit_fold", "fitted_fold", "fold_task", "score_fold"]


def fold_task(ctx: DiagnosticContext, pass_name: str, fold: int) -> cv.FoldTask:
    """The run's :class:`~gatebench.cv.FoldTask` for (pass, fold), with its recorded seeds."""
    tasks = cv.make_tasks(pass_name, ctx.folds[pass_name], ctx.labels, ctx.detector, seed=ctx.seed)
    return tasks[fold]


@dataclass
class FoldScores:
    """What a refit worker sends back: enough to match it to its task and score it."""

    pass_name: str
    fold: int
    threshold: float
    op_threshold: float | None
    test_scores: np.ndarray


def score_fold(
    task: cv.FoldTask,
    texts: np.ndarray,
    labels: np.ndarray,
    max_fpr: float | None = None,
    sources: np.ndarray | None = None,
    positions: np.ndarray | None = None,
) -> FoldScores:
    """Worker for :meth:`gatebench.parallel.Executor.map`: fit, then score the task's test rows.

    Module-level so it pickles. ``threshold`` is the fold threshold of
    ``cv.run_fold`` (argmax F1 on the inner-valid rows); with ``max_fpr`` the
    inner-valid rows also give ``op_threshold``, chosen by the headline rule
    (max F1 s.t. FPR ≤ ``max_fpr``), so nothing outside the training rows is used.
    """
    fitted = fit_fold(task, texts, labels, sources, positions)
    test = task.test_idx
    where = positions_at(positions, test)
    scores = check_scores(
        task.spec.name, score_detector(fitted.detector, list(texts[test]), where), len(test)
    )
    op = (
        None
        if max_fpr is None
        else select_operating_point(fitted.valid_labels, fitted.valid_scores, max_fpr=max_fpr)
    )
    return FoldScores(
        pass_name=task.pass_name,
        fold=task.fold,
        threshold=fitted.threshold,
        op_threshold=None if op is None else op.threshold,
        test_scores=scores,
    )


def fitted_fold(ctx: DiagnosticContext, pass_name: str = "strat", fold: int = 0) -> FittedFold:
    """The rebuilt model of one fold, fitted once per context and shared between checks."""
    key = ("fitted", pass_name, fold)
    if key not in ctx.cache:
        task = fold_task(ctx, pass_name, fold)
        ctx.cache[key] = fit_fold(task, ctx.texts, ctx.labels, ctx.sources, ctx.positions)
    out: FittedFold = ctx.cache[key]
    return out


def probe_detector(spec: DetectorSpec, seed: int) -> Detector:
    """An unfitted instance, to ask which optional protocols the detector implements."""
    return make_detector(spec, seed=child_seed(seed, "diagnostics", "probe"))
