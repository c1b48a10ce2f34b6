"""The perceptron head: a boundary a hyperplane cannot draw, reproducible from its seed."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.neural_network import MLPClassifier

from gatebench.gate.heads import MLPHead, sigmoid


def _xor(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two classes in opposite quadrants, padded to a 16-d 'embedding' with noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 16)).astype(np.float32)
    y = ((x[:, 0] > 0) ^ (x[:, 1] > 0)).astype(np.int64)
    return x, y


def test_separates_classes_no_hyperplane_can() -> None:
    x, y = _xor(2000, seed=0)
    xt, yt = _xor(600, seed=1)
    head = MLPHead(seed=0, hidden=(32,)).fit_x(x, y)
    linear = LogisticRegression().fit(x, y).decision_function(xt)
    assert roc_auc_score(yt, linear) < 0.6
    assert roc_auc_score(yt, head.decision_x(xt)) > 0.95


def test_forward_pass_matches_scikit_learn() -> None:
    x, y = _xor(800, seed=2)
    head = MLPHead(seed=4, hidden=(16, 8)).fit_x(x, y)
    reference = MLPClassifier(
        hidden_layer_sizes=(16, 8), alpha=1e-3, early_stopping=True, max_iter=200, random_state=4
    ).fit(x, y)
    p = reference.predict_proba(x[:50])[:, 1]
    ours = sigmoid(head.decision_x(x[:50]))
    np.testing.assert_allclose(ours, p, rtol=0, atol=1e-5)


def test_same_seed_same_weights_other_seed_other_weights() -> None:
    x, y = _xor(600, seed=3)
    a = MLPHead(seed=1, hidden=(8,)).fit_x(x, y).decision_x(x)
    b = MLPHead(seed=1, hidden=(8,)).fit_x(x, y).decision_x(x)
    c = MLPHead(seed=2, hidden=(8,)).fit_x(x, y).decision_x(x)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("hidden", [(), (0,), (16, -1)])
def test_bad_layer_widths_are_refused(hidden: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=r"hidden=.*one positive width per layer"):
        MLPHead(hidden=hidden)


def test_gate_stacks_the_head_and_reloads_it(dataset, embedder, make_data, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from gatebench.gate import Gate

    texts, y = dataset
    gate = Gate(
        seed=0,
        embedder=embedder,
        heads=["char", "embed", "mlp"],
        head_params={"char": {"n_features": 1 << 14}, "mlp": {"hidden": [16]}},
        n_folds=3,
        cache_dir=None,
        sentence=False,
    ).fit(texts, y, valid=make_data(150, seed=1))
    assert "mlp_margin" in gate.meta_names()
    test_texts, test_y = make_data(120, seed=7)
    p = gate.score(test_texts)
    assert roc_auc_score(test_y, p) > 0.8
    gate.save(tmp_path / "m")
    again = Gate.load(tmp_path / "m")
    assert again.heads["mlp"].hidden == (16,)
    assert np.array_equal(again.score(test_texts), p)
