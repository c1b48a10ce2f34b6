"""From the OOF table to every number ``result.json`` holds.

Headline numbers come from the StratifiedKFold pass, per prompt (after max
pooling). The operating point is chosen once on those pooled OOF scores and
applied unchanged to every source.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import roc_curve

from gatebench.artifacts import jsonable
from gatebench.cv import FoldResult
from gatebench.metrics.bootstrap import bootstrap_headline, by_source_intervals
from gatebench.metrics.calibration import calibration_report
from gatebench.metrics.confusion import confusion_at
from gatebench.metrics.frame import SourceMetricFrame, f1_fpr_sweep
from gatebench.parallel import Executor
from gatebench.per_language import by_language
from gatebench.per_position import by_position
from gatebench.result import Measurements
from gatebench.seeding import child_sequence
from gatebench.split import HEADLINE_PASS
from gatebench.threshold import (
    fold_threshold_table,
    natural_threshold,
    select_operating_point,
    threshold_transferability,
)

__all__ = ["summarise"]

MICRO_KEYS = (
    "f1",
    "precision",
    "recall",
    "fpr",
    "oda",
    "accuracy",
    "auc",
    "tp",
    "fp",
    "tn",
    "fn",
    "n",
    "n_pos",
    "n_neg",
)


def _series(s: pd.Series, keys: tuple[str, ...] | None = None) -> dict[str, Any]:
    return {k: s[k].item() if hasattr(s[k], "item") else s[k] for k in (keys or s.index)}


def _fold_rows(
    results: list[FoldResult], labels: np.ndarray, pass_name: str
) -> list[dict[str, Any]]:
    rows = []
    for r in (r for r in results if r.pass_name == pass_name):
        y = labels[r.test_idx]
        test = confusion_at(y, r.test_scores, r.threshold)
        y_tr = labels[r.train_idx]
        train = confusion_at(y_tr, r.train_scores, r.threshold) if len(y_tr) else None
        rows.append(
            {
                "fold": r.fold,
                "threshold": r.threshold,
                "valid_f1": r.valid_f1,
                "test_f1_at_threshold": test.f1,
                "test_fpr_at_threshold": test.fpr,
                "train_f1_at_threshold": train.f1 if train else None,
                "n_test": len(r.test_idx),
                "n_test_pos": int(y.sum()),
                "n_inner_train": r.n_inner_train,
                "n_inner_valid": r.n_inner_valid,
                "n_train_scored": len(r.train_idx),
                "fit_seconds": r.fit_seconds,
                "score_seconds": r.score_seconds,
            }
        )
    return rows


def _roc_per_fold(prompts: pd.DataFrame, max_points: int = 200) -> list[dict[str, Any]]:
    out = []
    for fold, part in prompts.groupby("fold"):
        if part["label"].nunique() < 2:
            continue
        fpr, tpr, _ = roc_curve(part["label"], part["score"])
        keep = np.unique(np.linspace(0, len(fpr) - 1, min(len(fpr), max_points)).astype(int))
        out.append({"fold": int(str(fold)), "fpr": fpr[keep], "tpr": tpr[keep]})
    return out


def _pass_summary(prompts: pd.DataFrame, fpr: float) -> dict[str, Any]:
    y, s = prompts["label"].to_numpy(), prompts["score"].to_numpy()
    op = select_operating_point(y, s, max_fpr=fpr)
    nat = natural_threshold(y, s)
    return {
        "headline": op.as_dict(),
        "natural": nat.as_dict(),
        "auc": SourceMetricFrame(y, s, prompts["source"], threshold=op.threshold).overall["auc"],
    }


def summarise(
    prompts: pd.DataFrame,
    results: list[FoldResult],
    labels: np.ndarray,
    *,
    primary_metrics: dict[str, str],
    fpr: float,
    seed: int,
    n_resamples: int,
    executor: Executor | None = None,
) -> Measurements:
    """Compute the evaluation's numbers from the per-prompt OOF table.

    Parameters
    ----------
    prompts : DataFrame
        Per-(pass, prompt) OOF rows from :func:`gatebench.cv.pool_to_prompts`.
    results : list of FoldResult
        Fold results, for the per-fold threshold table and train-vs-OOF.
    labels : ndarray
        Per-row (chunk) labels of the trace, indexed like the fold results.
    primary_metrics : dict
        Source name -> its card's primary metric.
    fpr : float
        τ, the false-positive-rate cap of the headline operating point.
    seed : int
        Root seed; the bootstrap uses its own named child.
    n_resamples : int
        Bootstrap B.
    executor : Executor, optional
        Where the headline bootstrap's resample blocks run
        (:func:`gatebench.metrics.bootstrap.bootstrap_headline`); the numbers
        do not depend on it.
    """
    head = prompts[prompts["pass"] == HEADLINE_PASS]
    y, s, src = head["label"].to_numpy(), head["score"].to_numpy(), head["source"].to_numpy()
    op = select_operating_point(y, s, max_fpr=fpr)
    nat = natural_threshold(y, s)
    theta_tilde = float(np.median([r.threshold for r in results if r.pass_name == HEADLINE_PASS]))
    frames = {
        name: SourceMetricFrame(y, s, src, threshold=t, primary_metrics=primary_metrics)
        for name, t in (
            ("headline", op.threshold),
            ("natural", nat.threshold),
            ("fold_median", theta_tilde),
        )
    }
    boot = bootstrap_headline(
        y,
        s,
        src,
        thresholds=[op.threshold, nat.threshold],
        seed=child_sequence(seed, "bootstrap", "headline"),
        n_resamples=n_resamples,
        executor=executor,
    )
    metrics = {}
    for name, t in (("headline", op.threshold), ("natural", nat.threshold)):
        frame = frames[name]
        cis = boot.at[t]
        metrics[name] = {
            "threshold": t,
            "micro": {
                **_series(frame.overall, MICRO_KEYS),
                "ci": {k: cis[k].as_dict() for k in ("f1", "precision", "recall", "fpr")},
            },
            "macro": {
                **_series(frame.macro),
                "ci": {"f1": cis["macro_f1"].as_dict(), "fpr": cis["macro_fpr"].as_dict()},
                "skipped": {k: list(v) for k, v in frame.macro_skipped.items()},
            },
            "auc_ci": boot.auc.as_dict(),
        }
    metrics["fold_median"] = {
        "threshold": theta_tilde,
        "micro": _series(frames["fold_median"].overall, MICRO_KEYS),
        "macro": _series(frames["fold_median"].macro),
    }

    by_source = frames["headline"].by_source.copy()
    intervals = by_source_intervals(
        y,
        s,
        src,
        threshold=op.threshold,
        primary_metrics=primary_metrics,
        seed=child_sequence(seed, "bootstrap", "by_source"),
        n_resamples=n_resamples,
    )
    by_source = by_source.join(
        intervals.drop(columns=[c for c in intervals if c in by_source]), how="left"
    )
    by_source["prevalence_ratio"] = _prevalence_ratio(head, by_source.index)
    transfer = threshold_transferability(y, s, src, theta_op=op.threshold, target_fpr=fpr)
    by_source["theta_s"] = [transfer.thresholds.get(name) for name in by_source.index]

    passes = {name: _pass_summary(part, fpr) for name, part in prompts.groupby("pass")}
    leakage: dict[str, Any] = {}
    if "sgk" in passes:
        leakage = {
            "delta_f1_headline": passes["strat"]["headline"]["f1"]
            - passes["sgk"]["headline"]["f1"],
            "delta_f1_natural": passes["strat"]["natural"]["f1"] - passes["sgk"]["natural"]["f1"],
        }
    folds = {str(name): _fold_rows(results, labels, str(name)) for name in passes}
    curves = f1_fpr_sweep(y, s, src)
    raw = {
        "operating_point": {
            **op.as_dict(),
            "target_fpr": fpr,
            "rule": "max F1 s.t. pooled FPR <= tau",
        },
        "natural_point": nat.as_dict(),
        "fold_median_threshold": theta_tilde,
        "metrics": metrics,
        "by_source": by_source.reset_index().to_dict(orient="records"),
        "passes": passes,
        "leakage": leakage,
        "fold_thresholds": {
            name: {
                "folds": rows,
                "summary": fold_threshold_table(
                    [r["threshold"] for r in rows], [r["test_f1_at_threshold"] for r in rows]
                ).to_dict(orient="index"),
            }
            for name, rows in folds.items()
        },
        "transferability": transfer.as_dict(),
        "sweep": {
            k: getattr(curves, k)
            for k in (
                "thresholds",
                "micro_f1",
                "micro_fpr",
                "micro_recall",
                "macro_f1",
                "macro_fpr",
            )
        },
        "roc_per_fold": _roc_per_fold(head),
        "latency_ms": _latency(results),
        "calibration": calibration_report(y, s, head["fold"].to_numpy()).as_dict(),
    }
    raw["by_language"], raw["by_language_skipped"] = by_language(
        head, threshold=op.threshold, seed=seed, n_resamples=n_resamples
    )
    raw["by_position"], raw["by_position_skipped"] = by_position(
        head, threshold=op.threshold, seed=seed, n_resamples=n_resamples
    )
    return Measurements.model_validate(jsonable(raw))


def _prevalence_ratio(head: pd.DataFrame, sources: pd.Index) -> list[float | None]:
    """ρ_s = p_s(eval) / p_s(train), the train mix averaged over the headline folds.

    Undefined (``None``) for all-benign sources, whose train positive rate is 0.
    """
    out: list[float | None] = []
    for name in sources:
        rows = head[head["source"] == name]
        p_eval = rows["label"].mean()
        train_rates = [
            head.loc[(head["fold"] != k) & (head["source"] == name), "label"].mean()
            for k in sorted(head["fold"].unique())
        ]
        p_train = float(np.mean(train_rates))
        out.append(None if p_train == 0 else float(p_eval / p_train))
    return out


def _latency(results: list[FoldResult]) -> dict[str, Any]:
    """Per-request (single-text, in-process) latency of the headline pass's fold-0 model."""
    ms = np.concatenate([r.latency_ms for r in results if r.pass_name == HEADLINE_PASS])
    if ms.size == 0:
        return {"n": 0}
    return {
        "n": int(ms.size),
        "p50": float(np.percentile(ms, 50)),
        "p95": float(np.percentile(ms, 95)),
        "p99": float(np.percentile(ms, 99)),
        "mean": float(ms.mean()),
        "samples": ms,
        "how": "score([text]) in process on a seeded sample of fold-0 test texts",
    }
