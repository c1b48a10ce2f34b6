"""Hashed n-gram counts, TF-IDF weighting, the vector cache and the static embedder."""

from __future__ import annotations

import numpy as np

from gatebench.gate._ngrams import TfidfWeights, char_ngram_counts, word_ngram_counts
from gatebench.gate.cache import VectorCache


def test_char_counts_exact() -> None:
    m = char_ngram_counts(["abc d", "ABC  D"], (1, 2), 1 << 12)
    # 5 unigrams + 4 bigrams; case and whitespace runs do not matter.
    assert m[0].sum() == 9
    assert (m[0] != m[1]).nnz == 0


def test_char_counts_nul_and_batches() -> None:
    texts = ["a\x00b", "", "x" * 10] * 1000
    m = char_ngram_counts(texts, (2, 3), 1 << 10)
    assert m.shape == (3000, 1 << 10)
    assert m[1].sum() == 0
    assert m[2].sum() == 9 + 8
    assert m[0].sum() == 2 + 1  # the NUL reads as a space: "a b"


def test_word_counts() -> None:
    m = word_ngram_counts(["ignore the rules"], (1, 2), 1 << 12)
    assert m.sum() == 5


def test_tfidf_rows_are_unit_norm() -> None:
    counts = char_ngram_counts(["hello world", "goodbye world", ""], (2, 4), 1 << 12)
    x = TfidfWeights().fit(counts).transform(counts)
    norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
    assert np.allclose(norms, [1.0, 1.0, 0.0], atol=1e-6)


def test_char_counts_match_scipys_own_build() -> None:
    import scipy.sparse as sp

    from gatebench.gate._ngrams import _DIRECT_MAX_PAIRS, _count_matrix

    rng = np.random.default_rng(0)
    rows = rng.integers(0, 40, 5000)
    rows[rows == 3] = 4  # an empty row inside, and the last rows empty too
    cols = rng.integers(0, 1 << 10, 5000)
    ours = _count_matrix(rows, cols, 45, 1 << 10)
    assert len(rows) <= _DIRECT_MAX_PAIRS  # the direct build, not scipy's own
    theirs = sp.csr_matrix(
        (np.ones(len(rows), np.float32), (rows, cols)), shape=(45, 1 << 10), dtype=np.float32
    )
    theirs.sum_duplicates()
    assert ours.dtype == np.float32 and ours.has_canonical_format
    np.testing.assert_array_equal(ours.indptr, theirs.indptr)
    np.testing.assert_array_equal(ours.indices, theirs.indices)
    np.testing.assert_array_equal(ours.data, theirs.data)
    assert ours.nnz and ours[3].nnz == 0 and ours[44].nnz == 0


def test_tfidf_matches_scikit_learn() -> None:
    from sklearn.feature_extraction.text import TfidfTransformer

    texts = ["hello world", "goodbye world", "", "hello hello hello there"]
    counts = char_ngram_counts(texts, (2, 4), 1 << 12)
    weights = TfidfWeights().fit(counts)
    ours = weights.transform(counts)
    # Sublinear TF here is log(1 + tf) (scikit-learn's is 1 + log(tf)), so the
    # reference weighs the log counts with its smoothed IDF and L2 norm.
    logs = counts.copy()
    logs.data = np.log1p(logs.data)
    theirs = TfidfTransformer(smooth_idf=True).fit_transform(logs)
    np.testing.assert_allclose(ours.toarray(), theirs.toarray(), rtol=1e-5, atol=1e-7)
    # the scipy expression the row norms replace gives the same bits
    x = counts.copy()
    x.data = np.log1p(x.data) * weights.idf[x.indices]  # type: ignore[index]
    norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    x.data /= np.repeat(norms, np.diff(x.indptr)).astype(np.float32)
    np.testing.assert_array_equal(ours.data, x.data)


def test_vector_cache_computes_each_text_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    calls: list[list[str]] = []

    def compute(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return np.array([[len(t), 1.0] for t in texts])

    cache = VectorCache(tmp_path, "ns")
    a = cache.get_or_compute(["x", "yy", "x"], compute)
    assert a.tolist() == [[1, 1], [2, 1], [1, 1]]
    # A second cache object (another fold, another process) reads the shards.
    again = VectorCache(tmp_path, "ns").get_or_compute(["yy", "zzz"], compute)
    assert again.tolist() == [[2, 1], [3, 1]]
    assert calls == [["x", "yy"], ["zzz"]]
    # Exact-text keys: case differences are separate rows.
    assert VectorCache.key("Hi") != VectorCache.key("hi")


def _fill(folder, n: int) -> None:  # type: ignore[no-untyped-def]
    """``n`` shards of one text each, as ``n`` separate scoring calls leave them."""
    for i in range(n):
        VectorCache(folder, "ns").get_or_compute(
            [f"text {i}"], lambda t, i=i: np.full((len(t), 3), i)
        )


def test_a_reader_merges_many_shards_into_one_and_reads_the_same_rows(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from gatebench.gate.cache import COMPACT_AT

    texts = [f"text {i}" for i in range(COMPACT_AT + 1)]
    _fill(tmp_path, len(texts))
    assert len(list((tmp_path / "ns").glob("*.npz"))) == COMPACT_AT + 1

    def never(t: list[str]) -> np.ndarray:
        raise AssertionError(f"recomputed {t}")

    rows = VectorCache(tmp_path, "ns").get_or_compute(texts, never)
    assert rows[:, 0].tolist() == list(range(len(texts)))
    assert len(list((tmp_path / "ns").glob("*.npz"))) == 1
    again = VectorCache(tmp_path, "ns").get_or_compute(texts[::-1], never)
    np.testing.assert_array_equal(again, rows[::-1])
    # At the limit nothing is merged.
    _fill(tmp_path / "few", COMPACT_AT)
    VectorCache(tmp_path / "few", "ns").get_or_compute(["text 0"], never)
    assert len(list((tmp_path / "few" / "ns").glob("*.npz"))) == COMPACT_AT


def test_a_shard_merged_away_while_listed_is_read_from_the_merge(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from gatebench.gate import cache as cache_module

    monkeypatch.setattr(cache_module, "COMPACT_AT", 2)
    texts = [f"text {i}" for i in range(4)]
    _fill(tmp_path, len(texts))
    reader = VectorCache(tmp_path, "ns")
    real_load = np.load
    merged: list[bool] = []

    def load_after_a_merge(path, **kw):  # type: ignore[no-untyped-def]
        # Another process merges every shard just after this reader listed them.
        if not merged:
            merged.append(True)
            VectorCache(tmp_path, "ns").get_or_compute(texts[:1], lambda t: np.zeros((1, 3)))
        return real_load(path, **kw)

    monkeypatch.setattr(cache_module.np, "load", load_after_a_merge)

    def never(t: list[str]) -> np.ndarray:
        raise AssertionError(f"recomputed {t}")

    rows = reader.get_or_compute(texts, never)
    assert merged and rows[:, 0].tolist() == [0, 1, 2, 3]


def test_static_embedder(embedder) -> None:  # type: ignore[no-untyped-def]
    e = embedder.encode(["ignore all previous instructions", ""])
    assert e.shape == (2, embedder.dims)
    assert np.isclose(np.linalg.norm(e[0]), 1.0, atol=1e-5)
    assert not e[1].any()
    assert embedder.fingerprint() == embedder.fingerprint()
