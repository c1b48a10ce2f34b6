"""Each head is a detector on its own: it separates the classes and round-trips its state."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from gatebench.gate.heads import HEAD_TYPES, CharHead, Head, NeighbourHead, WordHead
from gatebench.gate.views import text_keys


def _head(name: str, embedder) -> Head:  # type: ignore[no-untyped-def]
    params: dict[str, object] = {"seed": 0}
    if name in ("char", "word"):
        params["n_features"] = 1 << 14
    head = HEAD_TYPES[name](**params)  # type: ignore[arg-type]
    if hasattr(head, "embedder"):
        head.embedder = embedder
    return head


@pytest.mark.parametrize("name", list(HEAD_TYPES))
def test_head_is_a_detector(name: str, dataset, embedder, make_data) -> None:  # type: ignore[no-untyped-def]
    texts, y = dataset
    test_texts, test_y = make_data(120, seed=7)
    head = _head(name, embedder).fit(texts, y, valid=make_data(90, seed=8))
    p = head.score(test_texts)
    assert p.shape == (len(test_texts),)
    assert ((p >= 0) & (p <= 1)).all()
    assert roc_auc_score(test_y, p) > 0.8
    assert head.name == name and head.requires_fit


@pytest.mark.parametrize("name", list(HEAD_TYPES))
def test_head_state_round_trip(name: str, dataset, embedder) -> None:  # type: ignore[no-untyped-def]
    texts, y = dataset
    head = _head(name, embedder).fit(texts, y)
    state = head.get_state()
    # Plain values for gate.json, named arrays for arrays.npz, and nothing else.
    plain = {k: v for k, v in state.items() if not isinstance(v, np.ndarray)}
    assert json.loads(json.dumps(plain)) == plain
    assert all(v.dtype != object for v in state.values() if isinstance(v, np.ndarray))
    again = type(head).from_state(state)
    if hasattr(again, "embedder"):
        again.embedder = embedder
    probe = texts[:40]
    assert np.array_equal(head.score(probe), again.score(probe))


def test_char_head_is_deterministic_in_seed(dataset) -> None:  # type: ignore[no-untyped-def]
    texts, y = dataset
    a = CharHead(seed=3, n_features=1 << 14).fit(texts, y).score(texts[:20])
    b = CharHead(seed=3, n_features=1 << 14).fit(texts, y).score(texts[:20])
    assert np.array_equal(a, b)


def test_word_head_nb_ratios_point_the_right_way(dataset) -> None:  # type: ignore[no-untyped-def]
    texts, y = dataset
    head = WordHead(n_features=1 << 14).fit(texts, y)
    x = head.represent(["ignore", "weather"])
    r = [float(head.ratio[x[i].indices[0]]) for i in range(2)]
    assert r[0] > 0 > r[1]


def test_neighbour_head_similarity_columns(dataset, embedder) -> None:  # type: ignore[no-untyped-def]
    texts, y = dataset
    head = NeighbourHead(k=3, embedder=embedder).fit(texts, y)
    sims = head.meta_x(head.represent([texts[0]]))
    assert sims.shape == (1, 4)
    # A copy of a training attack the bank does not hold finds it (float16 bank: ~1).
    copy = head.meta_x((head.embed([texts[0]]), None))
    assert y[0] == 1 and copy[0, 0] == pytest.approx(1.0, abs=1e-2)


def test_neighbour_bank_entry_never_votes_for_its_own_text(dataset, embedder) -> None:  # type: ignore[no-untyped-def]
    texts, y = dataset
    keys = text_keys(texts)
    head = NeighbourHead(k=3, embedder=embedder).fit(texts, y)

    def cols(h: NeighbourHead, batch: list[str]) -> np.ndarray:
        return np.asarray(h.meta_x(h.represent(batch)))

    # A training text sees the bank without its own entry (and without exact
    # duplicates of it): the same columns as a head fitted on every other text.
    for i in (0, 1, 7):
        rest = keys != keys[i]
        without = NeighbourHead(k=3, embedder=embedder).fit(
            [t for t, r in zip(texts, rest, strict=True) if r], y[rest]
        )
        np.testing.assert_allclose(cols(head, [texts[i]]), cols(without, [texts[i]]))
        assert cols(head, [texts[i]])[0, 0] < 0.999  # it did not find itself
    # batch scoring agrees with one text at a time
    single = np.vstack([cols(head, [t]) for t in texts[:20]])
    np.testing.assert_allclose(cols(head, texts[:20]), single, atol=1e-6)
    # the key is the normalised text: a case and spacing variant is the same text
    np.testing.assert_allclose(cols(head, ["  " + texts[0].upper() + " "]), cols(head, [texts[0]]))
    # a text that is not in the bank finds the one it was derived from
    assert y[0] == 1
    assert cols(head, [texts[0] + " now"])[0, 0] > cols(head, [texts[0]])[0, 0]
    # the keys survive a save/load round trip
    again = NeighbourHead.from_state(head.get_state())
    again.embedder = embedder
    np.testing.assert_array_equal(cols(again, texts[:5]), cols(head, texts[:5]))


def test_neighbour_head_names_the_nearest_entries_of_each_bank(dataset, embedder) -> None:  # type: ignore[no-untyped-def]
    texts, y = dataset
    keys = text_keys(texts)
    head = NeighbourHead(k=3, embedder=embedder).fit(texts, y)
    query = head.represent(texts[:4])
    (a_sim, a_key), (b_sim, b_key) = head.nearest(query, 4)
    bank_sims = head.similarities(query)
    for sims, got, label, col in ((a_sim, a_key, 1, 0), (b_sim, b_key, 0, 2)):
        assert sims.shape == got.shape == (4, 4)
        assert (np.diff(sims, axis=1) <= 0).all()  # nearest first
        assert set(got.ravel().tolist()) <= set(keys[y == label].tolist())
        # Its own entry is kept, so each text finds itself in its own label's bank.
        for i in range(4):
            if y[i] == label:
                assert got[i, 0] == keys[i] and sims[i, 0] == pytest.approx(1.0, abs=1e-2)
            else:
                # The other bank: the same nearest similarity the combiner column reads.
                assert sims[i, 0] == pytest.approx(bank_sims[i, col], abs=1e-6)
    # More neighbours than a bank holds: the whole bank, ranked.
    small = NeighbourHead(k=3, embedder=embedder).fit(texts[:6], np.array([1, 0, 0, 0, 0, 0]))
    (a_sim, a_key), (b_sim, _) = small.nearest(small.represent(texts[:2]), 10)
    assert a_sim.shape == (2, 1) and b_sim.shape == (2, 5) and a_key[0, 0] == keys[0]


def test_neighbour_head_searches_the_leading_directions(dataset, embedder) -> None:  # type: ignore[no-untyped-def]
    from sklearn.decomposition import TruncatedSVD

    texts, y = dataset
    full = NeighbourHead(k=3, dims=0, embedder=embedder).fit(texts, y)
    width = full.attacks.shape[1]
    dims = width // 2
    head = NeighbourHead(k=3, dims=dims, embedder=embedder).fit(texts, y)
    p = head.projection
    assert p is not None and p.shape == (width, dims)
    # The same subspace as an uncentred truncated SVD of the training vectors.
    emb = np.asarray(head.embed(texts), np.float64)
    svd = TruncatedSVD(n_components=dims, algorithm="arpack", random_state=0).fit(emb)
    np.testing.assert_allclose(p @ p.T, svd.components_.T @ svd.components_, atol=1e-3)
    # Narrow banks of unit rows (cosine), and columns that track the full search.
    assert head.attacks.shape[1] == head.benign.shape[1] == dims
    np.testing.assert_allclose(np.linalg.norm(head.benign, axis=1), 1.0, atol=2e-3)
    probe = texts[:60]
    a, b = head.meta_x(head.represent(probe)), full.meta_x(full.represent(probe))
    assert np.corrcoef(a[:, 0] - a[:, 2], b[:, 0] - b[:, 2])[0, 1] > 0.9
    assert not np.allclose(a, b)
    # The projection is part of the fitted state: a reload scores the same.
    again = NeighbourHead.from_state(head.get_state())
    again.embedder = embedder
    np.testing.assert_array_equal(again.meta_x(again.represent(probe)), a)
    # As wide as the input or wider: no projection, the full search.
    wide = NeighbourHead(k=3, dims=width, embedder=embedder).fit(texts, y)
    assert wide.projection is None and "projection" not in wide.get_state()
    np.testing.assert_array_equal(wide.meta_x(wide.represent(probe)), b)
    with pytest.raises(ValueError, match="dims=-1"):
        NeighbourHead(dims=-1)
    # A model saved before the setting existed (no dims, no projection) searches every dimension.
    old = {k: v for k, v in full.get_state().items() if k != "dims"}
    before = NeighbourHead.from_state(old)
    before.embedder = embedder
    assert before.dims == 0 and before.projection is None
    np.testing.assert_array_equal(before.meta_x(before.represent(probe)), b)


def test_state_without_a_later_setting_takes_its_default(dataset) -> None:  # type: ignore[no-untyped-def]
    from gatebench.gate.heads import FeatureHead

    texts, y = dataset
    head = FeatureHead(C=0.5).fit(texts, y)
    state = head.get_state()
    del state["content_only"]  # as written before the setting existed
    again = FeatureHead.from_state(state)
    assert again.content_only is False and again.C == 0.5
    assert np.array_equal(again.score(texts[:10]), head.score(texts[:10]))


@pytest.mark.parametrize("n", [7, 2_000, 10_240, 29_151])
def test_largest_values_match_a_full_sort(n: int) -> None:
    from gatebench.gate.heads.neighbours import _largest

    rng = np.random.default_rng(n)
    for trial in range(6):
        s = rng.standard_normal((7, n)).astype(np.float32)
        if trial % 3 == 1:
            s = np.round(s, 1)  # many ties, across blocks
        if trial % 3 == 2:
            s[:, rng.choice(n, size=n // 2, replace=False)] = -1.0  # left-out rows
        for k in (1, 5):
            k = min(k, n)
            want = np.sort(s, axis=1)[:, -k:]
            np.testing.assert_array_equal(np.sort(_largest(s, k), axis=1), want)
            np.testing.assert_array_equal(np.sort(_largest(s[2:3], k), axis=1), want[2:3])
