"""Checks on Gate's settings, run when a Gate is built.

A fit takes minutes; a misspelt head or an impossible band should fail at
construction, with a message that names the setting and a valid value.
"""

from __future__ import annotations

from collections.abc import Sequence

from gatebench.gate.combiner import COMBINER_KINDS
from gatebench.gate.data_guard import GUARD_POSITIVES
from gatebench.gate.heads import (
    HEAD_TYPES,
    MultilingualHead,
    NeighbourHead,
    RoutedMultilingualHead,
)

__all__ = ["ENGLISH_SCOPES", "META_FEATURE_SETS", "check_params"]

#: Which routed texts lose the English heads' combiner columns (see :class:`Gate`).
ENGLISH_SCOPES = ("encoder", "routed")
#: Which handcrafted features the fast path reads.
META_FEATURE_SETS = ("all", "content", "none")


def check_params(
    *,
    heads: Sequence[str],
    meta_features: str,
    combine: str,
    band_fraction: float,
    stack_groups: int,
    blend_heads: Sequence[str],
    balance: float = 0.0,
    stack_sources: bool = False,
    hard_rows: float = 0.0,
    english_heads: Sequence[str] = (),
    english_scope: str = "encoder",
    routed_copies: bool = False,
    shift_features: bool = False,
    combiner_only: Sequence[str] = (),
    guard_positives: str = "requests",
    segment_negatives: int = 0,
) -> None:
    """Raise :class:`ValueError` for the first setting Gate cannot use (see :class:`Gate`)."""
    unknown = [h for h in heads if h not in HEAD_TYPES]
    if unknown or not heads:
        raise ValueError(f"heads={list(heads)!r}: unknown or empty; choose from {list(HEAD_TYPES)}")
    if meta_features not in META_FEATURE_SETS:
        raise ValueError(
            f"meta_features={meta_features!r}: choose one of {list(META_FEATURE_SETS)}"
        )
    if combine not in COMBINER_KINDS:
        raise ValueError(f"combine={combine!r}: choose one of {list(COMBINER_KINDS)}")
    routed = RoutedMultilingualHead.name
    if routed in heads:
        if MultilingualHead.name in heads:
            raise ValueError(
                f"heads={list(heads)!r}: {MultilingualHead.name!r} and {routed!r} read one "
                f"encoder, once for every text and once for non-English text; keep one"
            )
        if combine == "mean":
            raise ValueError(
                f"combine={combine!r} with the {routed!r} head: its column is missing for "
                "English text, which only the trees combiner handles; use combine='trees'"
            )
        if routed in blend_heads:
            raise ValueError(f"blend_heads={list(blend_heads)!r}: {routed!r} cannot be blended")
    if guard_positives not in GUARD_POSITIVES:
        raise ValueError(
            f"guard_positives={guard_positives!r}: choose one of {list(GUARD_POSITIVES)}"
        )
    if english_scope not in ENGLISH_SCOPES:
        raise ValueError(f"english_scope={english_scope!r}: choose one of {list(ENGLISH_SCOPES)}")
    if english_heads:
        if routed not in heads:
            raise ValueError(
                f"english_heads={list(english_heads)!r} needs the {routed!r} head, whose "
                f"route marks the non-English text; add it to heads={list(heads)!r}"
            )
        wrong = [h for h in english_heads if h not in heads or h == routed]
        if wrong:
            raise ValueError(
                f"english_heads={list(english_heads)!r}: {wrong!r} not among the other "
                f"heads {[h for h in heads if h != routed]!r}"
            )
        if set(english_heads) & set(blend_heads) and combine == "blend":
            raise ValueError(
                f"blend_heads={list(blend_heads)!r}: a head in english_heads has no column "
                "for non-English text and cannot be blended"
            )
    if routed_copies and not english_heads:
        raise ValueError(
            "routed_copies=true reads English rows as routed text without the English "
            f"heads' columns, so it needs english_heads; heads={list(heads)!r} has none "
            f"(add {routed!r}, or leave routed_copies off)"
        )
    if isinstance(combiner_only, str):
        raise ValueError(
            f"combiner_only={combiner_only!r} must be a list of source names, "
            f"e.g. [{combiner_only!r}]"
        )
    if shift_features and combine == "mean":
        raise ValueError(
            "shift_features=true adds combiner columns, which combine='mean' does not read "
            "(it averages the heads' log-odds); use combine='trees' or 'blend'"
        )
    if not 0.0 <= band_fraction < 1.0:
        raise ValueError(f"band_fraction={band_fraction!r} must be in [0, 1), e.g. 0.1")
    if stack_groups < 0 or stack_groups == 1:
        raise ValueError(f"stack_groups={stack_groups!r}: use 0 (off) or at least 2, e.g. 40")
    if stack_sources and stack_groups:
        raise ValueError(
            f"stack_sources=true and stack_groups={stack_groups!r} both set the inner folds' "
            "groups; keep one (stack_groups=0 with stack_sources)"
        )
    if not 0.0 <= balance <= 1.0:
        raise ValueError(f"balance={balance!r} must be in [0, 1], e.g. 0.5 (0: off)")
    if not 0.0 <= hard_rows <= 100.0:
        raise ValueError(f"hard_rows={hard_rows!r} must be in [0, 100], e.g. 2 (0: off)")
    if isinstance(segment_negatives, bool) or not (
        int(segment_negatives) == segment_negatives >= 0
    ):
        raise ValueError(
            f"segment_negatives={segment_negatives!r}: give a whole number of segments >= 0 "
            "(0: none)"
        )
    if combine == "blend" and (
        not blend_heads or set(blend_heads) - set(heads) or NeighbourHead.name in blend_heads
    ):
        raise ValueError(
            f"blend_heads={list(blend_heads)!r}: name one or more of the linear heads "
            f"in heads={list(heads)!r}, e.g. ['embed']"
        )
