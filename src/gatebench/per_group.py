"""Results per value of one prompt column (language, position), each rate with its interval.

A pooled rate hides how a detector does on a slice of the prompts: one
language, or injections that arrive in a tool result rather than a user turn.
Every slice is measured here by one rule, so the per-language and the
per-position tables cannot drift apart: counts, the primary metric its label
mix allows, recall and FPR, each with a label-stratified 95% bootstrap interval.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from gatebench.metrics.bootstrap import dataset_intervals
from gatebench.metrics.frame import SourceMetricFrame
from gatebench.seeding import child_sequence

__all__ = ["MIN_GROUP_PROMPTS", "by_column"]

#: Values with fewer headline prompts get no row of their own (they are counted
#: apart): below this a 95% interval spans most of [0, 1] and the row would
#: read as a finding.
MIN_GROUP_PROMPTS = 20


def by_column(
    head: pd.DataFrame,
    *,
    column: str,
    threshold: float,
    seed: int,
    n_resamples: int,
    min_prompts: int = MIN_GROUP_PROMPTS,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Rows per value of ``head[column]`` at ``threshold``, and the values too small for a row.

    Parameters
    ----------
    head : DataFrame
        One row per prompt: ``label``, ``score`` and ``column``.
    column : str
        The prompt column to slice by; each row names its value under this key.
    threshold : float
        The one threshold every slice is read at (the run's θ_op, or a
        shipped model's threshold).
    seed : int
        Root seed. Every interval draws from a child named by ``by_<column>``,
        the value and the metric, so one value's interval does not move when
        another value enters or leaves the trace.
    n_resamples : int
        Bootstrap resamples per interval.
    min_prompts : int
        Values with fewer prompts are returned in the second element instead.

    Returns
    -------
    rows : list of dict
        Per value with at least ``min_prompts`` prompts: counts, its primary
        metric (from its label mix, as :class:`SourceMetricFrame` infers a
        source's), recall and FPR where defined, each with its 95% interval;
        larger values first, then by value. Callers may reorder them.
    skipped : dict
        Prompts per value below ``min_prompts``.

    Notes
    -----
    Prompts whose value is missing (a trace written before the column was
    recorded) are left out: they are neither a row nor skipped.
    """
    if column not in head:
        return [], {}
    known = head[head[column].notna()]
    if known.empty:
        return [], {}
    y, s = known["label"].to_numpy(), known["score"].to_numpy()
    values = known[column].astype(str).to_numpy()
    table = SourceMetricFrame(y, s, values, threshold=threshold).by_source
    rows: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    for name, r in table.iterrows():
        value = str(name)
        if int(r["n"]) < min_prompts:
            skipped[value] = int(r["n"])
            continue
        mask = values == value
        row: dict[str, Any] = {
            column: value,
            "n": int(r["n"]),
            "n_attack": int(r["n_pos"]),
            "n_benign": int(r["n_neg"]),
            "primary_metric": str(r["primary_metric"]),
            **dict.fromkeys(("recall", "recall_ci", "fpr", "fpr_ci")),
        }
        present = {
            "primary": str(r["primary_metric"]),
            "recall": "recall" if r["n_pos"] else None,
            "fpr": "fpr" if r["n_neg"] else None,
        }
        for key, metric in present.items():
            if metric is None:
                continue
            d = dataset_intervals(
                y[mask],
                s[mask],
                threshold=threshold,
                metric=metric,
                seed=child_sequence(seed, "bootstrap", f"by_{column}", value, key),
                levels=(0.95,),
                n_resamples=n_resamples,
            )
            row[key], row[f"{key}_ci"] = d.estimate, d.ci(0.95).as_dict()
        rows.append(row)
    rows.sort(key=lambda r: (-r["n"], r[column]))
    return rows, skipped
