"""The combiners' input layout: which columns, in which order, under which names.

The fast and the deferred combiner read the heads' outputs and the
handcrafted features in one fixed order. Fitting, scoring, the saved model
(``gate.json`` records the names) and the monotone constraints must all
agree on it, so it is defined once, here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gatebench.gate.features import FEATURE_NAMES, STYLE_FEATURES
from gatebench.gate.heads import (
    Head,
    NeighbourHead,
    RoutedMultilingualHead,
    SentenceNeighbourHead,
)
from gatebench.gate.topic_shift import SHIFT_NAMES
from gatebench.gate.views import Views

__all__ = [
    "column_direction",
    "column_names",
    "combiner_input",
    "feature_columns",
    "read_as_routed",
]

_NEIGHBOUR_HEADS = (NeighbourHead.name, SentenceNeighbourHead.name)


def feature_columns(meta_features: str) -> np.ndarray:
    """Mask over :data:`FEATURE_NAMES`: all, all but the style ones (``"content"``), or none."""
    if meta_features == "none":
        return np.zeros(len(FEATURE_NAMES), dtype=bool)
    return np.array([meta_features == "all" or f not in STYLE_FEATURES for f in FEATURE_NAMES])


def column_names(
    head_names: Sequence[str], feature_cols: np.ndarray, *, combine: str, shift: bool = False
) -> list[str]:
    """Names of a combiner's input columns for the heads ``head_names``, in order.

    ``shift``: the topic-shift columns follow the handcrafted features.
    """
    if combine == "mean":
        return [f"{h}_logit" for h in head_names]
    names = []
    for h in head_names:
        if h in _NEIGHBOUR_HEADS:
            names += [f"{h}_att_max", f"{h}_att_topk", f"{h}_ben_max", f"{h}_ben_topk"]
        else:
            names.append(f"{h}_margin")
    names += [f for f, keep in zip(FEATURE_NAMES, feature_cols, strict=True) if keep]
    return names + list(SHIFT_NAMES) if shift else names


def column_direction(column: str) -> int:
    """Monotone direction of a combiner column: +1 attack evidence, -1 benign, 0 free."""
    if column.endswith(("_ben_max", "_ben_topk")):
        return -1
    if column.endswith(("_margin", "_att_max", "_att_topk")):
        return 1
    return 0


def combiner_input(
    per_head: list[np.ndarray],
    heads: Sequence[Head],
    views: Views,
    feature_cols: np.ndarray,
    *,
    combine: str,
    english_heads: Sequence[str] = (),
    english_scope: str = "encoder",
) -> np.ndarray:
    """A combiner's input: head columns and meta-features, or one log-odds column per head.

    The meta-features are the handcrafted ``feature_cols``, then the
    topic-shift columns where ``views.shift`` holds them. ``per_head`` holds
    each head's :meth:`Head.meta_x` columns, in the order of ``heads`` (the
    fast heads, then for the deferred combiner the MiniLM heads); ``heads``
    may run longer than ``per_head``. The columns of
    ``english_heads`` are missing (NaN) for the texts ``views.routed`` marks:
    all of them (``english_scope="routed"``), or those whose language the
    multilingual encoder reads (``"encoder"``, ``views.encoder_language``).
    """
    if english_heads and views.routed is not None:
        # ``encoder_language`` only marks routed texts, so it is the narrower mask.
        narrow = views.encoder_language if english_scope == "encoder" else None
        marked = (views.routed if narrow is None else narrow).reshape(-1, 1)
        per_head = [
            np.where(marked, np.nan, m) if h.name in english_heads else m
            for h, m in zip(heads[: len(per_head)], per_head, strict=True)
        ]
    if combine == "mean":
        cols = [
            h.logit_from_decision(h.decision_from_meta(m))
            for h, m in zip(heads[: len(per_head)], per_head, strict=True)
        ]
        return np.column_stack(cols).astype(np.float64)
    features = views.features[:, feature_cols]
    shift = () if views.shift is None else (views.shift,)
    return np.column_stack([*per_head, features, *shift]).astype(np.float64)


def read_as_routed(
    x: np.ndarray, names: Sequence[str], english_heads: Sequence[str], routed_margin: np.ndarray
) -> np.ndarray:
    """Combiner rows of English text as they would read had the route taken them.

    The ``english_heads`` columns go missing and the routed head's column
    takes ``routed_margin`` (its margin on these texts), which is how the
    combiners see text in a language the multilingual encoder reads. Trees
    fitted on such copies learn that branch from the English training rows,
    read through the encoder, and not only from the narrow non-English
    training mix (mostly translated harmful requests and maths).
    """
    missing = set(column_names(english_heads, np.zeros(len(FEATURE_NAMES), bool), combine="trees"))
    out = np.array(x, dtype=np.float64, copy=True)
    out[:, [i for i, n in enumerate(names) if n in missing]] = np.nan
    out[:, list(names).index(f"{RoutedMultilingualHead.name}_margin")] = routed_margin
    return out
