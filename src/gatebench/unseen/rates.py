"""Recall, FPR, F1 and AUC at the shipped threshold, with stratified bootstrap intervals.

The threshold is the model's, never re-picked on the evaluated rows: that is
the point of a never-seen evaluation. Intervals resample within source x
label cells (the run's rule), so a small source cannot swing the pooled one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.metrics import roc_auc_score

from gatebench.artifacts import jsonable
from gatebench.metrics.bootstrap import bootstrap_headline
from gatebench.metrics.confusion import confusion_at
from gatebench.seeding import child_sequence
from gatebench.unseen.result import Rates, UnseenSource

__all__ = ["pooled_rates", "source_rates"]

_COUNT_METRICS = ("recall", "fpr", "f1", "precision")


def _rates(
    y: np.ndarray, s: np.ndarray, src: np.ndarray, threshold: float, seed: int, b: int, key: str
) -> dict[str, Any]:
    c = confusion_at(y, s, threshold)
    both = 0 < int(y.sum()) < len(y)
    out: dict[str, Any] = {
        "n": len(y),
        "n_attack": int(y.sum()),
        "n_benign": int(len(y) - y.sum()),
        "recall": c.recall if y.any() else None,
        "fpr": c.fpr if not y.all() else None,
        "f1": c.f1 if y.any() else None,
        "precision": c.precision if (s >= threshold).any() else None,
        "auc": float(roc_auc_score(y, s)) if both else None,
    }
    boot = bootstrap_headline(
        y, s, src, thresholds=[threshold], seed=child_sequence(seed, "unseen", key), n_resamples=b
    )
    cis = {k: boot.at[threshold][k].as_dict() for k in _COUNT_METRICS if out[k] is not None}
    if both:
        cis["auc"] = boot.auc.as_dict()
    out["ci"] = cis
    return dict(jsonable(out))


def pooled_rates(
    y: np.ndarray, s: np.ndarray, src: np.ndarray, threshold: float, *, seed: int, n_resamples: int
) -> Rates:
    """Every evaluated prompt pooled."""
    return Rates.model_validate(_rates(y, s, src, threshold, seed, n_resamples, "pooled"))


def source_rates(
    y: np.ndarray,
    s: np.ndarray,
    src: np.ndarray,
    threshold: float,
    *,
    seed: int,
    n_resamples: int,
    excluded: dict[str, int],
) -> list[UnseenSource]:
    """One row per source: rates, and the primary metric its labels give.

    F1 when both labels are present, recall for an all-attack set, and
    1 - FPR (ODA) for an all-benign one, as for registered sources.
    """
    rows = []
    for name in sorted(set(src.tolist())):
        keep = src == name
        r = _rates(y[keep], s[keep], src[keep], threshold, seed, n_resamples, f"source:{name}")
        if r["n_attack"] and r["n_benign"]:
            metric, primary = "f1", r["f1"]
        elif r["n_attack"]:
            metric, primary = "recall", r["recall"]
        else:
            metric, primary = "oda", None if r["fpr"] is None else 1.0 - r["fpr"]
        rows.append(
            UnseenSource.model_validate(
                {
                    **r,
                    "source": name,
                    "primary_metric": metric,
                    "primary": primary,
                    "excluded_overlap": excluded.get(name, 0),
                }
            )
        )
    return rows
