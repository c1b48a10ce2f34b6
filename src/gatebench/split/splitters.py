"""Fold assignment for the headline, grouped and leave-one-source-out passes.

scikit-learn calling conventions: data first, options keyword-only, the seed
always passed in. Fold functions return a fold id per row rather than index
pairs, because the OOF table and ``folds.json`` are keyed by row; turn them
into index pairs with ``np.flatnonzero(folds == k)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold, StratifiedShuffleSplit

from gatebench.errors import ConfigError

__all__ = [
    "HEADLINE_PASS",
    "PASSES",
    "TRAINING_ONLY",
    "assign_folds",
    "fold_label_marginals",
    "inner_split",
    "leave_one_source_out",
    "stratified_folds",
    "stratified_group_folds",
]

_LABEL_NAMES = {0: "benign", 1: "attack"}
# Fold id of rows that are never scored: they fall outside every test fold, so
# ``folds != k`` puts them in the training split of every fold.
TRAINING_ONLY = -1
#: The CV passes: StratifiedKFold (the headline) and StratifiedGroupKFold (the leakage check).
PASSES = ("strat", "sgk")
#: The pass whose pooled out-of-fold scores give every headline number.
HEADLINE_PASS = PASSES[0]


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(f"seed={seed!r} is invalid; pass a non-negative integer, e.g. seed=0.")
    return int(seed)


def _as_binary(y: ArrayLike) -> NDArray[np.int64]:
    """Labels as int64, each 0 or 1."""
    array = np.asarray(y)
    if array.ndim != 1 or array.size == 0:
        raise ConfigError(
            f"y has shape {array.shape}; pass a non-empty 1-D array of labels (1 attack, 0 benign)."
        )
    values = set(np.unique(array).tolist())
    if not values <= {0, 1}:
        bad = sorted(values - {0, 1}, key=repr)[:5]
        raise ConfigError(f"y contains labels {bad}; labels must be 1 (attack) or 0 (benign).")
    return array.astype(np.int64)


def _check_labels(y: ArrayLike) -> NDArray[np.int64]:
    """Binary labels as int64, with both classes present."""
    array = _as_binary(y)
    values = set(np.unique(array).tolist())
    if len(values) == 1:
        only = int(values.pop())
        other = 1 - only
        raise ConfigError(
            f"y: trace has only label {only} ({_LABEL_NAMES[only]}); add sources with "
            f"label {other} ({_LABEL_NAMES[other]}) so that every fold can be scored."
        )
    return array


def _check_n_splits(y: NDArray[np.int64], n_splits: object) -> int:
    if isinstance(n_splits, bool) or not isinstance(n_splits, int | np.integer) or n_splits < 2:
        raise ConfigError(f"n_splits={n_splits!r} is invalid; use an integer >= 2, e.g. 5.")
    counts = np.bincount(y, minlength=2)
    label = int(np.argmin(counts))
    if n_splits > counts[label]:
        raise ConfigError(
            f"n_splits={n_splits} is more than the {counts[label]} rows with label {label} "
            f"({_LABEL_NAMES[label]}); every fold needs at least one, so use "
            f"n_splits <= {counts[label]} or add rows with label {label}."
        )
    return int(n_splits)


def _check_every_fold_has_both_labels(
    y: NDArray[np.int64], folds: NDArray[np.int64], n_splits: int, splitter: str
) -> None:
    """A fold without one label has no F1 (no positives) or no FPR (no negatives)."""
    fewer = f"use fewer splits (n_splits={n_splits - 1}) or " if n_splits > 2 else ""
    for fold in range(n_splits):
        present = np.bincount(y[folds == fold], minlength=2)
        for label in (1, 0):
            if present[label] == 0:
                raise ConfigError(
                    f"{splitter}: fold {fold} of {n_splits} has no rows with label {label} "
                    f"({_LABEL_NAMES[label]}), so its metrics are undefined; {fewer}add "
                    f"more rows with label {label} in more independent groups."
                )


def _fold_ids(splits: Iterator[tuple[NDArray[Any], NDArray[Any]]], n: int) -> NDArray[np.int64]:
    folds = np.full(n, -1, dtype=np.int64)
    for fold, (_, test) in enumerate(splits):
        folds[test] = fold
    return folds


def stratified_folds(y: ArrayLike, *, n_splits: int = 5, seed: int) -> NDArray[np.int64]:
    """Fold id per row from a shuffled ``StratifiedKFold`` (the headline pass).

    Parameters
    ----------
    y : array-like of {0, 1}
        Label per row.
    n_splits : int, default 5
        Number of folds, at least 2 and at most the smaller class count.
    seed : int
        Shuffling seed.

    Returns
    -------
    ndarray of int64
        Fold 0..n_splits-1 of every row; each fold's label marginal matches
        the overall one to within one row per class.

    Examples
    --------
    >>> y = np.array([0, 1] * 4)
    >>> folds = stratified_folds(y, n_splits=2, seed=0)
    >>> [int(y[folds == k].sum()) for k in range(2)]
    [2, 2]
    """
    labels = _check_labels(y)
    k = _check_n_splits(labels, n_splits)
    splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=_check_seed(seed))
    folds = _fold_ids(splitter.split(np.zeros(labels.size), labels), labels.size)
    _check_every_fold_has_both_labels(labels, folds, k, "stratified_folds")
    return folds


def stratified_group_folds(
    y: ArrayLike, groups: ArrayLike, *, n_splits: int = 5, seed: int
) -> NDArray[np.int64]:
    """Fold id per row from a shuffled ``StratifiedGroupKFold`` (the leakage diagnostic).

    Every group lies in exactly one fold, and folds keep the overall label
    marginal as closely as whole groups allow.

    Parameters
    ----------
    y : array-like of {0, 1}
        Label per row.
    groups : array-like
        Group label per row, as from :func:`gatebench.split.group_keys`.
    n_splits : int, default 5
        Number of folds.
    seed : int
        Seed for the order in which groups are placed.

    Returns
    -------
    ndarray of int64
        Fold 0..n_splits-1 of every row.

    Examples
    --------
    >>> folds = stratified_group_folds([0, 0, 1, 1, 0, 1], [0, 0, 1, 2, 3, 4],
    ...                                n_splits=2, seed=0)
    >>> bool(folds[0] == folds[1]), sorted(set(folds.tolist()))
    (True, [0, 1])
    """
    labels = _check_labels(y)
    k = _check_n_splits(labels, n_splits)
    group_array = np.asarray(groups)
    if group_array.shape != labels.shape:
        raise ConfigError(
            f"groups has shape {group_array.shape} but y has shape {labels.shape}; "
            "pass one group label per row."
        )
    for label in (1, 0):
        n_groups = np.unique(group_array[labels == label]).size
        if n_groups < k:
            raise ConfigError(
                f"stratified_group_folds: rows with label {label} ({_LABEL_NAMES[label]}) "
                f"fall in only {n_groups} groups, fewer than n_splits={k}; use "
                f"n_splits <= {n_groups} or add more independent rows with label {label}."
            )
    splitter = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=_check_seed(seed))
    folds = _fold_ids(splitter.split(np.zeros(labels.size), labels, group_array), labels.size)
    _check_every_fold_has_both_labels(labels, folds, k, "stratified_group_folds")
    return folds


def inner_split(
    y: ArrayLike, *, valid_fraction: float = 0.15, seed: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Stratified inner-train / inner-valid split of one outer fold's training rows.

    Parameters
    ----------
    y : array-like of {0, 1}
        Labels of the outer training rows.
    valid_fraction : float, default 0.15
        Share of rows held out for early stopping and threshold selection.
    seed : int
        Seed of the shuffle.

    Returns
    -------
    train_idx, valid_idx : ndarray of int64
        Sorted positions into ``y`` (not into the full trace).

    Examples
    --------
    >>> train, valid = inner_split([0, 1] * 10, valid_fraction=0.2, seed=0)
    >>> len(train), len(valid), sorted(set(train) | set(valid)) == list(range(20))
    (16, 4, True)
    """
    labels = _check_labels(y)
    if not isinstance(valid_fraction, float | int) or not 0.0 < valid_fraction < 1.0:
        raise ConfigError(
            f"valid_fraction={valid_fraction!r} is invalid; use a fraction in (0, 1), e.g. 0.15."
        )
    counts = np.bincount(labels, minlength=2)
    for label in (1, 0):
        if counts[label] < 2:
            raise ConfigError(
                f"inner_split: y has {counts[label]} row with label {label} "
                f"({_LABEL_NAMES[label]}); both inner-train and inner-valid need one, "
                f"so add rows with label {label} or use fewer outer folds."
            )
    n_valid = int(np.ceil(valid_fraction * labels.size))
    if n_valid < 2 or labels.size - n_valid < 2:
        raise ConfigError(
            f"inner_split: valid_fraction={valid_fraction} of {labels.size} rows leaves "
            f"{n_valid} inner-valid and {labels.size - n_valid} inner-train rows; each "
            "needs at least one row per label, so pick a fraction closer to 0.5 or add rows."
        )
    splitter = StratifiedShuffleSplit(
        n_splits=1, test_size=valid_fraction, random_state=_check_seed(seed)
    )
    train, valid = next(splitter.split(np.zeros(labels.size), labels))
    return np.sort(train).astype(np.int64), np.sort(valid).astype(np.int64)


def leave_one_source_out(
    sources: ArrayLike,
) -> Iterator[tuple[str, NDArray[np.int64], NDArray[np.int64]]]:
    """Yield ``(source, train_idx, test_idx)`` holding out one source at a time.

    Sources come in sorted order so the pass order is reproducible. Arguments
    are checked when this is called, not on the first ``next()``.

    Examples
    --------
    >>> [(s, te.tolist()) for s, _, te in leave_one_source_out(["b", "a", "b"])]
    [('a', [1]), ('b', [0, 2])]
    """
    array = np.asarray(sources, dtype=object)
    if array.ndim != 1:
        raise ConfigError(f"sources has shape {array.shape}; pass one source name per row.")
    names = sorted({str(s) for s in array})
    if len(names) < 2:
        raise ConfigError(
            f"leave_one_source_out: the trace has only source(s) {names}; holding one out "
            "leaves nothing to train on, so add at least one more source."
        )
    as_str = array.astype(str)

    def _passes() -> Iterator[tuple[str, NDArray[np.int64], NDArray[np.int64]]]:
        for name in names:
            held_out = as_str == name
            yield name, np.flatnonzero(~held_out), np.flatnonzero(held_out)

    return _passes()


def fold_label_marginals(y: ArrayLike, folds: ArrayLike) -> list[dict[str, Any]]:
    """Per-fold size and label balance, as plain JSON for ``folds.json``.

    Examples
    --------
    >>> fold_label_marginals([0, 1, 1, 0], [0, 0, 1, 1])[0]["positive_rate"]
    0.5
    """
    labels = _as_binary(y)
    fold_array = np.asarray(folds, dtype=np.int64)
    if fold_array.shape != labels.shape:
        raise ConfigError(
            f"folds has shape {fold_array.shape} but y has shape {labels.shape}; "
            "pass one fold id per row."
        )
    # Training-only rows are in no fold, so they take no part in its balance.
    scored = fold_array != TRAINING_ONLY
    labels, fold_array = labels[scored], fold_array[scored]
    overall = float(labels.mean())
    out = []
    for fold in np.unique(fold_array).tolist():
        in_fold = labels[fold_array == fold]
        rate = float(in_fold.mean())
        out.append(
            {
                "fold": int(fold),
                "n_rows": int(in_fold.size),
                "n_positive": int(in_fold.sum()),
                "n_negative": int(in_fold.size - in_fold.sum()),
                "positive_rate": rate,
                "positive_rate_deviation": rate - overall,
            }
        )
    return out


def assign_folds(
    y: ArrayLike,
    groups: ArrayLike | None,
    *,
    scored: ArrayLike | None = None,
    passes: tuple[str, ...] = PASSES,
    n_splits: int = 5,
    seeds: dict[str, int],
) -> dict[str, NDArray[np.int64]]:
    """Fold id per row for each pass; unscored (training-corpus) rows get ``TRAINING_ONLY``.

    The splitters see the scored rows only, so a trace without training rows
    gets exactly the folds it got before roles existed, and training rows
    never change which evaluation rows share a fold.

    Parameters
    ----------
    y : array-like of {0, 1}
        Label per row.
    groups : array-like or None
        Composite group per row; required when ``passes`` holds ``"sgk"``.
    scored : array-like of bool, optional
        True for evaluation rows; all rows when omitted.
    passes : tuple of str
        ``"strat"`` (StratifiedKFold) and optionally ``"sgk"`` (StratifiedGroupKFold).
    n_splits : int
        Folds per pass.
    seeds : dict of str -> int
        Shuffling seed per pass.
    """
    labels = _as_binary(y)
    mask = np.ones(labels.size, dtype=bool) if scored is None else np.asarray(scored, dtype=bool)
    if mask.shape != labels.shape:
        raise ConfigError(f"scored has shape {mask.shape} but y has shape {labels.shape}")
    idx = np.flatnonzero(mask)
    out: dict[str, NDArray[np.int64]] = {}
    for name in passes:
        if name == "strat":
            part = stratified_folds(labels[idx], n_splits=n_splits, seed=seeds[name])
        elif name == "sgk":
            if groups is None:
                raise ConfigError("the grouped pass (sgk) needs composite group keys")
            part = stratified_group_folds(
                labels[idx], np.asarray(groups)[idx], n_splits=n_splits, seed=seeds[name]
            )
        else:
            raise ConfigError(f"unknown pass {name!r}; use 'strat' and/or 'sgk'")
        folds = np.full(labels.size, TRAINING_ONLY, dtype=np.int64)
        folds[idx] = part
        out[name] = folds
    return out
