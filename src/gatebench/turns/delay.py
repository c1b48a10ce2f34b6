"""Detection delay: after how many messages a conversation is first flagged.

A gate screening a live conversation scores it again as each message
arrives, and the conversation's score is the maximum over what it has scanned
so far, so it can only rise. The score after message ``t`` is therefore the
maximum of the scanned messages up to ``t`` and of the border windows whose
second message is at most ``t``, and the first flag is the first ``t`` at
which that reaches the threshold. One scoring pass gives every prefix's
score; ``tests/test_turns.py`` checks it against scoring each prefix anew.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import binomtest

__all__ = ["first_flag", "prefix_scores", "rate", "turn_stats"]


def prefix_scores(result: dict[str, Any]) -> list[float | None]:
    """The conversation's score after each message (None before anything is scanned)."""
    n = len(result["messages"])
    at: list[float | None] = [m["score"] if m["scanned"] else None for m in result["messages"]]
    for border in result["borders"]:
        j = border["messages"][1]
        now, score = at[j], float(border["score"])
        at[j] = score if now is None else max(now, score)
    out: list[float | None] = []
    best: float | None = None
    for t in range(n):
        here = at[t]
        if here is not None:
            best = here if best is None else max(best, here)
        out.append(best)
    return out


def first_flag(result: dict[str, Any], threshold: float) -> int | None:
    """Index of the message after which the conversation is first flagged, or None."""
    for t, score in enumerate(prefix_scores(result)):
        if score is not None and score >= threshold:
            return t
    return None


def rate(k: int, n: int) -> dict[str, Any]:
    """``k / n`` with its 95% Wilson interval (scipy's), or None values when ``n`` is 0."""
    if n == 0:
        return {"k": 0, "n": 0, "rate": None, "ci": None}
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return {"k": k, "n": n, "rate": k / n, "ci": [float(ci.low), float(ci.high)]}


def turn_stats(values: Sequence[int]) -> dict[str, Any]:
    """Median, mean, 90th percentile and the histogram of message counts."""
    if not values:
        return {"n": 0, "median": None, "mean": None, "p90": None, "histogram": {}}
    arr = np.asarray(values, dtype=np.float64)
    counts = Counter(int(v) for v in values)
    return {
        "n": len(values),
        "median": float(np.median(arr)),
        "mean": float(arr.mean()),
        "p90": float(np.percentile(arr, 90)),
        "histogram": {str(k): counts[k] for k in sorted(counts)},
    }
