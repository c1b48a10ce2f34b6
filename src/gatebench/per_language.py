"""Results per prompt language, at one threshold, each rate with its interval.

The run reports them for its headline pass and ``gatebench evaluate`` for the
never-seen sets, with the same rule, so the two can be read side by side.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from gatebench.language import UNDETERMINED
from gatebench.metrics.bootstrap import dataset_intervals
from gatebench.metrics.frame import SourceMetricFrame
from gatebench.seeding import child_sequence

__all__ = ["MIN_LANGUAGE_PROMPTS", "by_language"]

#: Languages with fewer headline prompts get no row of their own (they are
#: counted in ``by_language_skipped``): below this a 95% interval spans most of
#: [0, 1] and the row would read as a finding.
MIN_LANGUAGE_PROMPTS = 20


def by_language(
    head: pd.DataFrame,
    *,
    threshold: float,
    seed: int,
    n_resamples: int,
    min_prompts: int = MIN_LANGUAGE_PROMPTS,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Per-language rows at ``threshold``, and the languages too small for a row.

    Each language with at least ``min_prompts`` prompts gets its counts, its
    primary metric (from its label mix, as :class:`SourceMetricFrame` infers a
    source's), recall and FPR where defined, each with a label-stratified 95%
    bootstrap interval (:func:`dataset_intervals`). Every interval draws from a
    child of the root ``seed`` named by language and metric, so one language's interval
    does not move when another language enters or leaves the trace. Prompts
    without a language (a trace written before languages were detected) are
    left out; "und" (undetermined) is a language here like any other.
    """
    if "language" not in head:
        return [], {}
    known = head[head["language"].notna()]
    if known.empty:
        return [], {}
    y, s = known["label"].to_numpy(), known["score"].to_numpy()
    lang = known["language"].astype(str).to_numpy()
    table = SourceMetricFrame(y, s, lang, threshold=threshold).by_source
    rows: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}
    for name, r in table.iterrows():
        code = str(name)
        if int(r["n"]) < min_prompts:
            skipped[code] = int(r["n"])
            continue
        mask = lang == code
        row: dict[str, Any] = {
            "language": code,
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
                seed=child_sequence(seed, "bootstrap", "by_language", code, key),
                levels=(0.95,),
                n_resamples=n_resamples,
            )
            row[key], row[f"{key}_ci"] = d.estimate, d.ci(0.95).as_dict()
        rows.append(row)
    # The undetermined row last: it is a remainder, not a language.
    rows.sort(key=lambda r: (r["language"] == UNDETERMINED, -r["n"], r["language"]))
    return rows, skipped
