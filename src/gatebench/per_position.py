"""Results per position in an agent's input (user turn, tool result, document), at one threshold.

An injection planted in a tool result or a retrieved document reads like data,
not like a request, and a detector fitted mostly on user turns may miss it; a
pooled recall hides that. The run reports these rows for its headline pass and
``gatebench evaluate`` for the never-seen sets, by the rule the per-language
rows follow (:func:`gatebench.per_group.by_column`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from gatebench.per_group import MIN_GROUP_PROMPTS, by_column
from gatebench.types import Position

__all__ = ["MIN_POSITION_PROMPTS", "by_position"]

#: Positions with fewer headline prompts get no row of their own (they are
#: counted in ``by_position_skipped``), as for languages.
MIN_POSITION_PROMPTS = MIN_GROUP_PROMPTS

_ORDER = {str(p): i for i, p in enumerate(Position)}


def by_position(
    head: pd.DataFrame,
    *,
    threshold: float,
    seed: int,
    n_resamples: int,
    min_prompts: int = MIN_POSITION_PROMPTS,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Per-position rows at ``threshold``, and the positions too small for a row.

    Each position with at least ``min_prompts`` prompts gets its counts, its
    primary metric, recall and FPR, each with a 95% interval whose seed is
    named by position and metric. Rows follow :class:`Position` (user, tool,
    document), the order an agent's input is usually read in. Prompts without
    a position (a trace written before positions were recorded) are left out.
    """
    rows, skipped = by_column(
        head,
        column="position",
        threshold=threshold,
        seed=seed,
        n_resamples=n_resamples,
        min_prompts=min_prompts,
    )
    rows.sort(key=lambda r: _ORDER.get(r["position"], len(_ORDER)))
    return rows, skipped
