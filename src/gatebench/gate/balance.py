"""Row weights that even out how much each region of the training text counts.

The trace is a mix of sources of very different sizes, and nearly every
source holds one label. A loss summed over rows is then dominated by the
few large, homogeneous regions (thousands of maths problems, thousands of
translated harmful requests), and a model fits what tells *those* apart,
including their form. Weighting each row by ``n ** -power``, where ``n`` is
the number of training rows of its label in its group (Gate passes each
row's source), lets small sources count closer to as much as large ones:
``power=1`` gives every (group, label) cell the same total weight,
``power=0`` is the plain row-weighted loss, and values between temper it so
that a handful of rows in a cell of their own are not blown up into a
source's worth of weight.

Within each label the weights are rescaled to sum to that label's row
count, so the class balance the heads and the combiner see, and with it the
calibration the operating point is chosen on, stays what the data has.

:func:`language_weights` evens out something else: the share of attacks
within each language. The non-English training text comes mostly from
translated harmful-request sets, so a language can carry far more attack
weight than English does, and a model learns the language itself as
evidence: never-seen benign text in those languages (maths, instructions)
is then flagged many times as often as English. Rescaling each
(language, label) cell so that every language has the attack share of the
whole training set leaves the language uninformative on its own.

Length is the same kind of attribute: long training texts are mostly
jailbreak templates, so a model can learn length as evidence and flag long
benign requests. :func:`length_buckets` puts each text in a power-of-two
band of characters, and :func:`rake_weights` evens out several attributes
at once (languages and length bands) by rescaling for each in turn, a few
rounds, until every cell of each is near the overall attack share.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

__all__ = [
    "MIN_LANGUAGE_ROWS",
    "attack_shares",
    "balance_weights",
    "keep_label_totals",
    "language_weights",
    "length_buckets",
    "rake_weights",
]

#: Rounds of :func:`rake_weights`: each attribute's cells are rescaled once per round.
RAKE_ROUNDS = 5
#: The smallest and largest length band's bounds, in characters (powers of two between).
LENGTH_BANDS = (64, 4096)
_BAND_EDGES = [
    LENGTH_BANDS[0] * 2**k for k in range((LENGTH_BANDS[1] // LENGTH_BANDS[0]).bit_length())
]
_BAND_NAMES = np.asarray(
    [f"<{_BAND_EDGES[0]}"]
    + [f"{a}-{b - 1}" for a, b in pairwise(_BAND_EDGES)]
    + [f">={_BAND_EDGES[-1]}"]
)

#: Rows a language needs of each label before its cells are rescaled.
MIN_LANGUAGE_ROWS = 20


def balance_weights(groups: np.ndarray, y: np.ndarray, power: float) -> np.ndarray:
    """Per-row weights ``n(group, label) ** -power``, rescaled per label to its count.

    Parameters
    ----------
    groups : ndarray of shape (n,)
        A group id per row (any hashable values).
    y : ndarray of shape (n,)
        Labels, 0 or 1.
    power : float
        In [0, 1]: 0 leaves every row at weight 1; 1 gives every
        (group, label) cell equal total weight.

    Returns
    -------
    ndarray of shape (n,)
        Positive float64 weights; within each label they sum to its row count.
    """
    if not 0.0 <= power <= 1.0:
        raise ValueError(f"balance power={power!r} must be in [0, 1], e.g. 0.5")
    groups, y = np.asarray(groups), np.asarray(y)
    if groups.shape != y.shape:
        raise ValueError(f"groups has shape {groups.shape} but labels have {y.shape}")
    _, cell = np.unique(np.stack([groups.astype(str), y.astype(str)]), axis=1, return_inverse=True)
    cell = cell.ravel()
    sizes = np.bincount(cell).astype(np.float64)
    return keep_label_totals(sizes[cell] ** -float(power), y, np.ones(len(y)))


def keep_label_totals(w: np.ndarray, y: np.ndarray, like: np.ndarray) -> np.ndarray:
    """``w`` rescaled within each label to the total ``like`` has there.

    Every reweighting here moves emphasis within a label only: the class
    balance the heads and the combiner see, and with it their calibration,
    stays that of ``like`` (the rows' weights before the reweighting).
    """
    w = np.asarray(w, dtype=np.float64).copy()
    for label in np.unique(y):
        rows = y == label
        w[rows] *= like[rows].sum() / w[rows].sum()
    return w


def language_weights(
    languages: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None
) -> np.ndarray:
    """``weight`` rescaled so that each language holds the overall attack share.

    Nothing here is specific to languages: :func:`rake_weights` passes length
    bands the same way.

    Parameters
    ----------
    languages : ndarray of shape (n,)
        A language code per row (``"und"`` is a language like any other).
    y : ndarray of shape (n,)
        Labels, 0 or 1.
    weight : ndarray of shape (n,), optional
        The rows' weights so far (None: an unweighted fit, every row 1).

    Returns
    -------
    ndarray of shape (n,)
        Within each language that has at least :data:`MIN_LANGUAGE_ROWS`
        rows of each label, the attack rows' share of its weight equals the
        attack share of the whole weight; a language with fewer of either
        label keeps its weights (there is no contrast in it to even out).
        Within each label the result sums to what ``weight`` did.
    """
    languages, y = np.asarray(languages).astype(str), np.asarray(y)
    base = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=np.float64)
    w = base.copy()
    if not (languages.shape == y.shape == w.shape):
        raise ValueError(
            f"languages {languages.shape}, labels {y.shape} and weights {w.shape} differ in shape"
        )
    share = w[y == 1].sum() / w.sum()
    for code in np.unique(languages):
        rows = languages == code
        attack, benign = rows & (y == 1), rows & (y == 0)
        if min(attack.sum(), benign.sum()) < MIN_LANGUAGE_ROWS:
            continue
        total = w[rows].sum()
        w[attack] *= share * total / w[attack].sum()
        w[benign] *= (1.0 - share) * total / w[benign].sum()
    return keep_label_totals(w, y, base)


def attack_shares(
    cells: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None
) -> dict[str, dict[str, float]]:
    """Each cell's rows and its attack share of the weight, for a fit's record.

    Parameters
    ----------
    cells, y : ndarray of shape (n,)
        A cell (a language code, a length band) and a label (0 or 1) per row.
    weight : ndarray of shape (n,), optional
        Row weights (None: every row 1).

    Returns
    -------
    dict
        ``{code: {"rows": n, "attack_share": s}}``, codes sorted; ``s`` is the
        attack rows' share of the language's weight, rounded to 4 places.
    """
    cells, y = np.asarray(cells).astype(str), np.asarray(y)
    w = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=np.float64)
    out: dict[str, dict[str, float]] = {}
    for code in np.unique(cells):
        rows = cells == code
        out[str(code)] = {
            "rows": int(rows.sum()),
            "attack_share": round(float(w[rows & (y == 1)].sum() / w[rows].sum()), 4),
        }
    return out


def length_buckets(texts: list[str]) -> np.ndarray:
    """Each text's length band: ``"<64"``, ``"64-127"``, ... ``">=4096"`` characters.

    Bands double in width, so short texts are told apart as finely, in
    proportion, as long ones.
    """
    return _BAND_NAMES[np.searchsorted(_BAND_EDGES, [len(t) for t in texts], side="right")]


def rake_weights(
    attributes: list[np.ndarray],
    y: np.ndarray,
    weight: np.ndarray | None = None,
    rounds: int = RAKE_ROUNDS,
) -> np.ndarray:
    """:func:`language_weights` applied to each attribute in turn, ``rounds`` times.

    Parameters
    ----------
    attributes : list of ndarray of shape (n,)
        One cell label per row for each attribute (a language, a length band).
    y : ndarray of shape (n,)
        Labels, 0 or 1.
    weight : ndarray of shape (n,), optional
        The rows' weights so far (None: every row 1).
    rounds : int
        Passes over the attributes. One attribute needs one pass (the
        rescaling is idempotent); with several, each pass moves the others'
        cells off the share a little less than the last.

    Returns
    -------
    ndarray of shape (n,)
        Each label keeps its total weight.
    """
    if not attributes:
        raise ValueError("rake_weights needs at least one attribute")
    w = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=np.float64)
    for _ in range(1 if len(attributes) == 1 else max(1, int(rounds))):
        for cells in attributes:
            w = language_weights(cells, y, w)
    return w
