"""Fitting a Gate: cross-fit the heads, fit the combiners, set the band and the deferred weights.

:class:`~gatebench.gate.model.Gate` holds what a fitted model needs to
score; how it gets fitted lives here, so that the order of the fitting
steps (and which rows each one may see) reads in one place, and a saved
model that only serves requests never runs any of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from gatebench.gate.balance import (
    attack_shares,
    balance_weights,
    keep_label_totals,
    length_buckets,
    rake_weights,
)
from gatebench.gate.columns import column_direction, read_as_routed
from gatebench.gate.combiner import Blend, Combiner, HeadMean, cross_fit, head_weight
from gatebench.gate.features import escalation_cues
from gatebench.gate.heads import Head, RoutedMultilingualHead, sigmoid
from gatebench.gate.heads.base import Valid
from gatebench.gate.views import Views

if TYPE_CHECKING:
    from gatebench.gate.model import Gate

__all__ = [
    "cluster_groups",
    "combiner_rows",
    "fit_gate",
    "hard_weights",
    "holdout_rows",
    "inner_groups",
    "row_weights",
]

_EPS = 1e-6


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1 - _EPS)
    return np.asarray(np.log(p) - np.log1p(-p))


def cluster_groups(views: Views, n_groups: int, seed: int) -> np.ndarray | None:
    """Cluster labels of the training texts for the inner cross-fit (None: plain folds).

    ``n_groups`` is Gate's ``stack_groups``: 0 is off; otherwise k-means on
    the static embedding, capped at one cluster per 50 texts on small fits.
    """
    if not n_groups:
        return None
    from sklearn.cluster import MiniBatchKMeans

    k = min(n_groups, max(2, len(views) // 50))
    km = MiniBatchKMeans(n_clusters=k, random_state=seed, n_init=3, batch_size=4096)
    return np.asarray(km.fit_predict(np.asarray(views.static, dtype=np.float64)))


def row_weights(gate: Gate, y: np.ndarray, sources: np.ndarray | None) -> np.ndarray | None:
    """The training rows' weights under Gate's ``balance`` (None: unweighted).

    Without ``sources`` every row is taken to come from one source; each
    label is then a single cell, every weight is 1, and none are applied.
    """
    if not gate.balance or sources is None:
        return None
    return balance_weights(sources, y, gate.balance)


def hard_weights(
    heads: list[Head],
    decisions: np.ndarray,
    y: np.ndarray,
    weight: np.ndarray | None,
    strength: float,
) -> np.ndarray:
    """Per head, each row's weight times ``1 + strength * (1 - p)``.

    ``p`` is the head's out-of-fold probability of the row's own label
    (its margin Platt-scaled on the same out-of-fold margins). The rows a
    head gets wrong from the other folds are benign texts that read like
    attacks (a question about an exploit, a text that names a jailbreak) and
    attacks that read like data; among many easy rows they are outvoted.
    Each label's total weight is kept, so only the emphasis within a label
    moves, not the class balance or the heads' regularisation.

    Returns
    -------
    ndarray of shape (n, n_heads)
        A weight column per head, for :func:`~gatebench.gate.combiner.cross_fit`.
    """
    base = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=np.float64)
    out = np.empty((len(y), len(heads)))
    for j, head in enumerate(heads):
        p = head.calibrate(decisions[:, j], y).proba_from_decision(decisions[:, j])
        miss = np.where(y == 1, 1.0 - p, p)
        out[:, j] = keep_label_totals(base * (1.0 + strength * miss), y, base)
    return out


def inner_groups(gate: Gate, views: Views, sources: np.ndarray | None) -> np.ndarray | None:
    """Groups the inner cross-fit keeps whole: sources, clusters, or none (plain folds).

    With ``stack_sources`` every training row's combiner column comes from
    heads fitted without any row of its source: the combiner learns how each
    head behaves on a source it never saw, the situation of deployment.
    """
    if gate.stack_sources:
        if sources is None:
            raise ValueError(
                "stack_sources=true needs each training row's source, but fit() got no "
                "sources; pass sources=[one name per training text], or stack_sources=false"
            )
        return np.unique(sources.astype(str), return_inverse=True)[1].ravel()
    return cluster_groups(views, gate.stack_groups, gate.seed)


def holdout_rows(labels: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The training and validation rows of a fit that was given no ``valid``: 15%, stratified."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(labels))
    tr, va = train_test_split(idx, test_size=0.15, stratify=labels, random_state=seed)
    return np.asarray(tr), np.asarray(va)


def fit_gate(
    gate: Gate,
    texts: Sequence[str],
    labels: np.ndarray,
    valid: Valid,
    sources: Sequence[str] | None = None,
) -> None:
    """Fit ``gate`` in place: heads, combiner, band and deferred stage (see :meth:`Gate.fit`)."""
    t0 = time.perf_counter()
    y = np.asarray(labels, dtype=np.int64)
    texts = list(texts)
    src = None if sources is None else np.asarray(sources, dtype=object)
    if src is not None and len(src) != len(texts):
        raise ValueError(f"fit() got {len(src)} sources for {len(texts)} training texts")
    if valid is None:
        tr, va = holdout_rows(y, gate.seed)
        valid = ([texts[i] for i in va], y[va])
        texts, y = [texts[i] for i in tr], y[tr]
        src = None if src is None else src[tr]
    weight = row_weights(gate, y, src)
    weight, shares = _balance_attributes(gate, texts, y, weight)
    v_texts, v_y = list(valid[0]), np.asarray(valid[1], dtype=np.int64)
    feat = gate._get_featurizer()
    views, v_views = feat(texts), feat(v_texts)
    t_feat = time.perf_counter()

    # One grouping per fit: the fast and MiniLM heads are cross-fitted on the same folds.
    groups = inner_groups(gate, views, src)
    only = combiner_rows(gate, src)
    heads, oof_meta, oof_dec = _stack(gate, gate._make_heads, views, y, groups, weight, only)
    t_cross = time.perf_counter()
    gate.heads = {h.name: h for h in heads}
    v_meta = [h.meta_x(h.x_of(v_views)) for h in heads]
    x, y_x, w_x = _routed_copies(
        gate, gate._combiner_x(oof_meta, views), False, views, y, weight, oof_dec
    )
    gate.combiner = _new_combiner(gate, sentence=False).fit(
        x, y_x, gate._combiner_x(v_meta, v_views), v_y, weight=w_x
    )
    t_comb = time.perf_counter()

    p_valid = gate.combiner.proba(gate._combiner_x(v_meta, v_views))
    p_base = p_valid
    t_sent = time.perf_counter()
    if gate.sentence:
        p_base = _fit_sentence(
            gate, views, y, v_views, v_y, (oof_meta, oof_dec), v_meta, groups, weight, only
        )
    t_sent = time.perf_counter() - t_sent
    _set_head_thresholds(gate, v_views, v_y)
    _fit_cascade(gate, v_texts, v_views, v_y, p_valid, p_base)
    t_end = time.perf_counter()
    gate.fit_info = {
        "n_train": len(texts),
        "n_valid": len(v_texts),
        "weighted": weight is not None,
        "routed_copies": len(y_x) - len(y),
        "combiner_only_rows": 0 if only is None else int(only.sum()),
        **shares,
        "best_iteration": gate.combiner.best_iteration,
        "band": list(gate.band),
        "deferred_coef": [float(c) for c in gate.deferred.coef],
        "seconds": {
            "featurise": t_feat - t0,
            "cross_fit": t_cross - t_feat,
            "heads_and_combiner": t_comb - t_cross,
            "sentence_stage": t_sent,
            "cascade": t_end - t_comb - t_sent,
            "total": t_end - t0,
        },
    }


def _balance_attributes(
    gate: Gate, texts: Sequence[str], y: np.ndarray, weight: np.ndarray | None
) -> tuple[np.ndarray | None, dict[str, Any]]:
    """Weights with every language and/or length band at the overall attack share.

    Which attributes are evened out follows ``balance_languages`` and
    ``balance_lengths``. For each, the record (rows, attack share before and
    after, per cell) goes into ``fit_info`` as ``<attribute>_attack_share``,
    so that a shipped model says how far its training text was evened out.
    """
    attributes: dict[str, np.ndarray] = {}
    if gate.balance_languages:
        from gatebench.language import detect_languages

        attributes["language"] = np.asarray(detect_languages(texts))
    if gate.balance_lengths:
        attributes["length"] = length_buckets(list(texts))
    record: dict[str, Any] = {"language_attack_share": {}}
    if not attributes:
        return weight, record
    balanced = rake_weights(list(attributes.values()), y, weight)
    for name, cells in attributes.items():
        before, after = attack_shares(cells, y, weight), attack_shares(cells, y, balanced)
        record[f"{name}_attack_share"] = {
            code: {
                "rows": cell["rows"],
                "before": cell["attack_share"],
                "after": after[code]["attack_share"],
            }
            for code, cell in before.items()
        }
    if weight is None and np.allclose(balanced, 1.0):
        # No cell had both labels to even out: the fit stays unweighted.
        return None, record
    return balanced, record


def _new_combiner(gate: Gate, *, sentence: bool) -> Combiner | HeadMean | Blend:
    if gate.combine == "mean":
        return HeadMean()
    params = dict(gate.combiner_params)
    names = gate.meta_names(sentence=sentence)
    if gate.monotone:
        params["monotone_constraints"] = [column_direction(n) for n in names]
    trees = Combiner(seed=gate.seed, **params)
    if gate.combine == "blend":
        columns = [names.index(f"{h}_margin") for h in gate.blend_heads]
        return Blend(trees, columns, [gate.heads[h].platt for h in gate.blend_heads])
    return trees


def combiner_rows(gate: Gate, sources: np.ndarray | None) -> np.ndarray | None:
    """Mask of the training rows only the combiners learn from (Gate's ``combiner_only``).

    None when there are none. Raises when ``combiner_only`` is set but the
    fit was given no sources to find its rows by.
    """
    if not gate.combiner_only:
        return None
    if sources is None:
        raise ValueError(
            f"combiner_only={list(gate.combiner_only)!r} names sources, but fit() got none; "
            "pass fit(..., sources=...) (the harness does) or leave combiner_only empty"
        )
    only = np.isin(sources, gate.combiner_only)
    return only if only.any() else None


def _stack(
    gate: Gate,
    make: Callable[[], list[Head]],
    views: Views,
    y: np.ndarray,
    groups: np.ndarray | None,
    weight: np.ndarray | None = None,
    only: np.ndarray | None = None,
) -> tuple[list[Head], list[np.ndarray], np.ndarray]:
    """Cross-fit ``make()``'s heads, then fit each on every row (rows weighted by ``weight``).

    Rows in ``only`` (:func:`combiner_rows`) are left out of the heads'
    fits; their columns come from the final heads, which never saw them, so
    they are out of sample like every other row's.

    With Gate's ``hard_rows`` the cross-fit runs twice: the first gives each
    row's out-of-fold miss per head (:func:`hard_weights`), the second and
    the final fits weight by it, so the combiner's columns come from heads
    fitted as the served ones are.

    Returns the fitted heads (Platt-calibrated on their out-of-fold
    margins), the out-of-fold combiner columns of every head, and the
    out-of-fold margins (rows by heads).
    """

    if only is not None:
        keep, rest = np.flatnonzero(~only), np.flatnonzero(only)
        heads, meta, dec = _stack(
            gate,
            make,
            views.take(keep),
            y[keep],
            None if groups is None else groups[keep],
            None if weight is None else weight[keep],
        )
        rest_views = views.take(rest)
        rest_meta = [h.meta_x(h.x_of(rest_views)) for h in heads]
        rest_dec = np.column_stack(
            [h.decision_from_meta(r) for h, r in zip(heads, rest_meta, strict=True)]
        )
        full_meta = [_scatter(keep, m, rest, r) for m, r in zip(meta, rest_meta, strict=True)]
        return heads, full_meta, _scatter(keep, dec, rest, rest_dec)

    def inner(w: np.ndarray | None) -> tuple[list[np.ndarray], np.ndarray]:
        return cross_fit(
            make, views, y, n_folds=gate.n_folds, seed=gate.seed, groups=groups, weight=w
        )

    oof_meta, oof_dec = inner(weight)
    if gate.hard_rows:
        weight = hard_weights(make(), oof_dec, y, weight, gate.hard_rows)
        oof_meta, oof_dec = inner(weight)
    heads = make()
    for j, head in enumerate(heads):
        head.fit_x(head.x_of(views), y, None if weight is None else head_weight(weight, j))
        head.calibrate(oof_dec[:, j], y)
    return heads, oof_meta, oof_dec


def _scatter(keep: np.ndarray, a: np.ndarray, rest: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One array holding ``a``'s rows at positions ``keep`` and ``b``'s at ``rest``."""
    out = np.empty((len(keep) + len(rest), a.shape[1]), dtype=np.float64)
    out[keep], out[rest] = a, b
    return out


def _routed_copies(
    gate: Gate,
    x: np.ndarray,
    sentence: bool,
    views: Views,
    y: np.ndarray,
    weight: np.ndarray | None,
    oof_dec: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A combiner's training rows, plus (``routed_copies``) its English rows read as routed.

    Each copy is an English training row with the ``english_heads`` columns
    missing and the routed head's out-of-fold margin in its column
    (:func:`~gatebench.gate.columns.read_as_routed`), with the row's label
    and weight. Without them the trees learn what to make of the
    multilingual column alone from the non-English training text only.
    """
    if not gate.routed_copies or views.routed is None:
        return x, y, weight
    rows = np.flatnonzero(np.asarray(views.routed) == 0)
    j = list(gate.head_names).index(RoutedMultilingualHead.name)
    copies = read_as_routed(
        x[rows], gate.meta_names(sentence=sentence), gate.english_heads, oof_dec[rows, j]
    )
    w = None if weight is None else np.concatenate([weight, weight[rows]])
    return np.vstack([x, copies]), np.concatenate([y, y[rows]]), w


def _fit_sentence(
    gate: Gate,
    views: Views,
    y: np.ndarray,
    v_views: Views,
    v_y: np.ndarray,
    oof: tuple[list[np.ndarray], np.ndarray],
    v_meta: list[np.ndarray],
    groups: np.ndarray | None,
    weight: np.ndarray | None = None,
    only: np.ndarray | None = None,
) -> np.ndarray:
    """Fit the MiniLM heads and the deferred combiner; return its validation P(attack).

    The MiniLM heads are cross-fitted with the fast heads' seed, so every
    training row's fast and MiniLM columns come from sub-fits that never
    saw it, and the deferred combiner stacks them like the fast one does.
    """
    gate._sentence_views(views)
    gate._sentence_views(v_views)
    oof_meta, oof_dec = oof
    heads, s_oof, _ = _stack(gate, gate._make_sentence_heads, views, y, groups, weight, only)
    gate.sentence_heads = {h.name: h for h in heads}
    v_s = [h.meta_x(h.x_of(v_views)) for h in heads]
    x, y_x, w_x = _routed_copies(
        gate, gate._combiner_x([*oof_meta, *s_oof], views), True, views, y, weight, oof_dec
    )
    gate.sentence_combiner = _new_combiner(gate, sentence=True).fit(
        x, y_x, gate._combiner_x([*v_meta, *v_s], v_views), v_y, weight=w_x
    )
    return gate.sentence_combiner.proba(gate._combiner_x([*v_meta, *v_s], v_views))


def _set_head_thresholds(gate: Gate, v_views: Views, v_y: np.ndarray) -> None:
    from gatebench.threshold import fold_threshold

    for name, head in {**gate.heads, **gate.sentence_heads}.items():
        p = head.proba_from_decision(head.decision_x(head.x_of(v_views)))
        gate.head_thresholds[name] = float(fold_threshold(v_y, p)[0]) if v_y.any() else 0.5


def _fit_cascade(
    gate: Gate,
    v_texts: list[str],
    v_views: Views,
    v_y: np.ndarray,
    p_valid: np.ndarray,
    p_base: np.ndarray,
) -> None:
    """Set the band on the fast scores; fit the evidence weights on the deferred base."""
    from gatebench.threshold import select_operating_point

    centre = 0.5
    if v_y.any() and not v_y.all():
        op = select_operating_point(v_y, p_valid, max_fpr=0.01)
        centre = op.threshold if op.feasible else 0.5
    c = float(_logit(np.array([centre]))[0])
    dist = np.abs(_logit(p_valid) - c)
    if gate.band_fraction <= 0 or not len(dist):
        gate.band = (1.0, 1.0)
        return
    d = float(np.quantile(dist, gate.band_fraction))
    gate.band = (float(sigmoid(np.array(c - d))), float(sigmoid(np.array(c + d))))
    # The evidence weights are fitted on a band three times as wide: the
    # real band holds too few validation rows for four weights.
    wide = float(np.quantile(dist, min(1.0, 3 * gate.band_fraction)))
    train = (dist <= wide) | escalation_cues(v_views.features)
    if min(int(v_y[train].sum()), int((1 - v_y[train]).sum())) < 10:
        train = np.ones(len(v_y), dtype=bool)
    idx = np.flatnonzero(train)
    ev = gate.deferred.evidence([v_texts[i] for i in idx], p_base[idx], gate._fast_pieces)
    gate.deferred.fit(ev, v_y[idx])
