"""Results per prompt language, at one threshold, each rate with its interval.

The run reports them for its headline pass and ``gatebench evaluate`` for the
never-seen sets, with the same rule, so the two can be read side by side.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from gatebench.language import UNDETERMINED
from gatebench.per_group import MIN_GROUP_PROMPTS, by_column

__all__ = ["MIN_LANGUAGE_PROMPTS", "by_language"]

#: Languages with fewer headline prompts get no row of their own (they are
#: counted in ``by_language_skipped``): below this a 95% interval spans most of
#: [0, 1] and the row would read as a finding.
MIN_LANGUAGE_PROMPTS = MIN_GROUP_PROMPTS


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
    primary metric, recall and FPR, each with a 95% interval
    (:func:`gatebench.per_group.by_column` over ``language``, whose seeds are
    named by language and metric). Prompts without a language (a trace written
    before languages were detected) are left out; "und" (undetermined) is a
    language here like any other, but its row comes last: it is a remainder,
    not a language.
    """
    rows, skipped = by_column(
        head,
        column="language",
        threshold=threshold,
        seed=seed,
        n_resamples=n_resamples,
        min_prompts=min_prompts,
    )
    rows.sort(key=lambda r: r["language"] == UNDETERMINED)  # stable: larger first otherwise
    return rows, skipped
