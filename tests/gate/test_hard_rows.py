"""Hard-row weights: more weight where a head's other folds get a row wrong, per label."""

from __future__ import annotations

import numpy as np
import pytest

from gatebench.gate import Gate
from gatebench.gate.heads import HEAD_TYPES
from gatebench.gate.training import hard_weights


def _heads(n: int) -> list:
    return [HEAD_TYPES["embed"](seed=0) for _ in range(n)]


def test_rows_a_head_misses_weigh_more_and_each_label_keeps_its_total() -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, size=400)
    # Head 0 separates the labels well; head 1 is noise.
    decisions = np.column_stack([np.where(y == 1, 2.0, -2.0) + rng.normal(0, 1.5, 400),
                                 rng.normal(0, 1, 400)])  # fmt: skip
    base = rng.uniform(0.5, 2.0, size=400)
    w = hard_weights(_heads(2), decisions, y, base, strength=3.0)
    assert w.shape == (400, 2)
    for j in range(2):
        for label in (0, 1):
            rows = y == label
            assert w[rows, j].sum() == pytest.approx(base[rows].sum())
    # For the good head, an attack it scores low is weighted up against its base weight.
    ratio = w[:, 0] / base
    attacks = np.flatnonzero(y == 1)
    low, high = attacks[np.argmin(decisions[attacks, 0])], attacks[np.argmax(decisions[attacks, 0])]
    assert ratio[low] > 2 * ratio[high]
    # Benign rows: the one scored most like an attack gains the most.
    benign = np.flatnonzero(y == 0)
    assert np.argmax(ratio[benign]) == np.argmax(decisions[benign, 0])


def test_strength_zero_is_the_base_weight_and_no_base_means_ones() -> None:
    y = np.array([0, 1, 0, 1, 1, 0])
    decisions = np.array([[-1.0], [2.0], [0.5], [-0.3], [1.0], [-2.0]])
    base = np.array([1.0, 2.0, 1.0, 0.5, 1.0, 3.0])
    assert np.allclose(hard_weights(_heads(1), decisions, y, base, 0.0)[:, 0], base)
    plain = hard_weights(_heads(1), decisions, y, None, 2.0)[:, 0]
    assert plain[y == 0].sum() == pytest.approx(3.0) and plain[y == 1].sum() == pytest.approx(3.0)


def test_bad_strength_is_named() -> None:
    with pytest.raises(ValueError, match=r"hard_rows=-1"):
        Gate(hard_rows=-1.0)


def test_hard_rows_change_the_fit_and_survive_a_reload(dataset, gate_kw, tmp_path) -> None:  # type: ignore[no-untyped-def]
    texts, y = dataset
    plain = Gate(seed=3, **gate_kw).fit(texts, y)
    hard = Gate(seed=3, hard_rows=3.0, **gate_kw).fit(texts, y)
    probe = texts[:80]
    assert not np.array_equal(plain.score(probe), hard.score(probe))
    # The same settings give the same model.
    again = Gate(seed=3, hard_rows=3.0, **gate_kw).fit(texts, y)
    assert np.array_equal(hard.score(probe), again.score(probe))
    hard.save(tmp_path / "m")
    loaded = Gate.load(tmp_path / "m")
    assert loaded.hard_rows == 3.0
    assert np.allclose(loaded.score(probe), hard.score(probe))
