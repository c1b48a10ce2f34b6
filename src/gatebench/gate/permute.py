"""Gate's feature groups, and one group's combiner columns shuffled across rows.

Permutation importance (methodology §2.8) asks how much held-out F1 a
feature group carries. Gate's heads and handcrafted features reach a score
only through its combiners: the fast one, and the deferred one for the rows
the cascade routes to it. So a group is a set of combiner columns (one
head's outputs, the cue features, the topic-shift columns), and shuffling
it means every combiner call of a scoring pass sees those columns shuffled
across the rows it reads, while every other column, the routing, segment
reading and the data guard run as in :meth:`Gate.score`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gatebench.gate.columns import column_names
from gatebench.gate.features import FEATURE_NAMES
from gatebench.gate.topic_shift import SHIFT_NAMES

__all__ = ["CUES", "SHIFT", "ColumnShuffle", "feature_groups", "group_columns"]

#: The handcrafted features' group (the cue and obfuscation signals the combiners read).
CUES = "cues"
#: The topic-shift columns' group (``shift_features``).
SHIFT = "shift"


def feature_groups(
    heads: Sequence[str], feature_cols: np.ndarray, *, combine: str, shift: bool
) -> tuple[str, ...]:
    """The groups of a combiner input over ``heads``: each head, then the features.

    Under ``combine="mean"`` the combiners read one column per head and no
    features, so only the heads are groups.
    """
    groups = list(heads)
    if combine != "mean":
        groups += [CUES] if bool(np.any(feature_cols)) else []
        groups += [SHIFT] if shift else []
    return tuple(groups)


def group_columns(group: str, feature_cols: np.ndarray, *, combine: str) -> frozenset[str]:
    """The combiner column names that make up ``group``."""
    if group == CUES:
        return frozenset(f for f, keep in zip(FEATURE_NAMES, feature_cols, strict=True) if keep)
    if group == SHIFT:
        return frozenset(SHIFT_NAMES)
    no_features = np.zeros(len(FEATURE_NAMES), dtype=bool)
    return frozenset(column_names([group], no_features, combine=combine))


@dataclass(frozen=True)
class ColumnShuffle:
    """Shuffle ``columns`` across the rows of every combiner input it is applied to.

    The order depends only on ``seed`` and the number of rows, not on which
    call comes first: the cascade's stages run on two threads, and the same
    inputs must give the same scores.
    """

    columns: frozenset[str]
    seed: int

    def apply(self, x: np.ndarray, names: Sequence[str]) -> np.ndarray:
        """``x`` with the group's columns shuffled across its rows (a copy)."""
        if len(names) != x.shape[1]:
            raise RuntimeError(f"{x.shape[1]} combiner columns but {len(names)} names")
        cols = [i for i, name in enumerate(names) if name in self.columns]
        if not cols or len(x) < 2:
            return x
        order = np.random.default_rng([self.seed, len(x)]).permutation(len(x))
        out = np.array(x, copy=True)
        out[:, cols] = x[order][:, cols]
        return out
