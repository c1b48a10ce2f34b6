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
"""

from __future__ import annotations

import numpy as np

__all__ = ["balance_weights"]


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
    w = sizes[cell] ** -float(power)
    for label in np.unique(y):
        rows = y == label
        w[rows] *= rows.sum() / w[rows].sum()
    return np.asarray(w)
