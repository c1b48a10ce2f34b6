"""Recall, FPR, F1 and AUC at the shipped threshold, with stratified bootstrap intervals.

The threshold is the model's, never re-picked on the evaluated rows: that is
the point of a never-seen evaluation. The point values come from the run's
own :class:`~gatebench.metrics.frame.SourceMetricFrame` (so a set's primary
metric follows the same family rule), and the intervals resample within
source x label cells (the run's rule), so a small set cannot swing the pooled one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from gatebench.artifacts import jsonable
from gatebench.metrics.bootstrap import bootstrap_headline
from gatebench.metrics.frame import SourceMetricFrame
from gatebench.seeding import child_sequence
from gatebench.unseen.result import Rates, UnseenSource

__all__ = ["rates_at"]

_RATES = ("recall", "fpr", "f1", "precision", "auc")


def _with_intervals(
    values: pd.Series, y: np.ndarray, s: np.ndarray, src: np.ndarray, threshold: float, **boot: Any
) -> dict[str, Any]:
    """``values``' counts and rates (None where undefined) and each defined rate's interval."""
    out: dict[str, Any] = jsonable(
        {"n": values["n"], "n_attack": values["n_pos"], "n_benign": values["n_neg"]}
        | {k: values[k] for k in _RATES}
    )
    b = bootstrap_headline(y, s, src, thresholds=[threshold], **boot)
    cis = {k: b.at[threshold][k].as_dict() for k in _RATES[:4] if out[k] is not None}
    if out["auc"] is not None:
        cis["auc"] = b.auc.as_dict()
    return out | {"ci": jsonable(cis)}


def rates_at(
    y: np.ndarray,
    s: np.ndarray,
    src: np.ndarray,
    threshold: float,
    *,
    seed: int,
    n_resamples: int,
    excluded: dict[str, int],
) -> tuple[Rates, list[UnseenSource]]:
    """Every evaluated prompt pooled, and one row per set with its primary metric.

    A set's primary metric is F1 when both labels are present, recall for an
    all-attack set, and ODA (1 - FPR) for an all-benign one, as for
    registered sources.
    """
    frame = SourceMetricFrame(y, s, src, threshold=threshold)

    def boot(key: str) -> dict[str, Any]:
        return {"seed": child_sequence(seed, "unseen", key), "n_resamples": n_resamples}

    pooled = Rates.model_validate(
        _with_intervals(frame.overall, y, s, src, threshold, **boot("pooled"))
    )
    rows = []
    for name, values in frame.by_source.iterrows():
        keep = src == name
        r = _with_intervals(
            values, y[keep], s[keep], src[keep], threshold, **boot(f"source:{name}")
        )
        extra = {"source": name, "excluded_overlap": excluded.get(str(name), 0)}
        extra |= jsonable({k: values[k] for k in ("primary_metric", "primary")})
        rows.append(UnseenSource.model_validate(r | extra))
    return pooled, rows
