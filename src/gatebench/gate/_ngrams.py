"""Hashed n-gram count matrices, vectorised with numpy, and their TF-IDF weighting.

Hashing instead of a learned vocabulary has two payoffs here. The count
matrix of a text depends on nothing learned, so the combiner's inner
cross-fit builds it once and every sub-fit reuses it; and the saved model is
plain arrays (IDF and weights), with no vocabulary object to pickle.

scikit-learn's ``char_wb`` analyser builds one Python string per n-gram and
took 45 s for the default trace on this machine; laying all texts out as one
code-point array and hashing every window with whole-array operations takes
about a second.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

__all__ = ["TfidfWeights", "char_ngram_counts", "word_ngram_counts"]

_BASE = np.uint64(0x100000001B3)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_SEP = 0x110000  # one past the largest code point: never a real character
_MAX_BATCH_CHARS = 1 << 21  # bounds peak memory near 100 MB per batch
_DIRECT_MAX_PAIRS = 1 << 16  # above it, scipy builds the count matrix quicker


def _mix(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """splitmix64 finaliser: spreads the polynomial hash over all 64 bits."""
    x = x ^ (x >> np.uint64(30))
    x = x * _MIX1
    x = x ^ (x >> np.uint64(27))
    x = x * _MIX2
    return x ^ (x >> np.uint64(31))


def _codepoints(texts: Sequence[str]) -> tuple[NDArray[np.uint64], NDArray[np.int64]]:
    """All texts, lower-cased, as one code-point array with a separator after each."""
    # A NUL inside a text would read as a separator: it becomes a space first.
    joined = "\x00".join(t.replace("\x00", " ") for t in texts) + "\x00"
    cp = np.frombuffer(joined.lower().encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(
        np.uint64
    )
    # Lower-casing can change a text's length (rare: "İ" -> "i̇"), so the
    # separators are located after lower-casing rather than computed from lengths.
    seps = np.flatnonzero(cp == 0)
    cp[seps] = _SEP
    # Runs of whitespace read as one space, so layout does not change n-grams.
    space = (cp == 0x20) | (cp == 0x0A) | (cp == 0x09) | (cp == 0x0D)
    cp[space] = 0x20
    keep = ~(space & np.concatenate(([False], space[:-1])))
    cp = cp[keep]
    doc = np.cumsum(np.concatenate(([0], (cp == _SEP)[:-1].astype(np.int64))))
    return cp, doc


def _batches(texts: Sequence[str]) -> list[tuple[int, int]]:
    spans, start, size = [], 0, 0
    for i, t in enumerate(texts):
        size += len(t) + 1
        if size > _MAX_BATCH_CHARS:
            spans.append((start, i + 1))
            start, size = i + 1, 0
    if start < len(texts) or not spans:
        spans.append((start, len(texts)))
    return spans


def char_ngram_counts(
    texts: Sequence[str], ngram_range: tuple[int, int] = (2, 5), n_features: int = 1 << 20
) -> sp.csr_matrix:
    """Counts of hashed character n-grams (lower-cased, whitespace runs collapsed).

    Parameters
    ----------
    texts : sequence of str
    ngram_range : (int, int)
        Smallest and largest n, inclusive.
    n_features : int
        Number of hash buckets, a power of two.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (len(texts), n_features), float32

    Examples
    --------
    >>> m = char_ngram_counts(["abc", "abc", "xyz"], (2, 3), 1 << 10)
    >>> (m[0] != m[1]).nnz, int(m[0].sum()), int(m[2].sum())
    (0, 3, 3)
    """
    lo, hi = ngram_range
    mask = np.uint64(n_features - 1)
    blocks = []
    for a, b in _batches(texts):
        cp, doc = _codepoints(texts[a:b])
        rows, cols = [], []
        h = np.zeros(len(cp), dtype=np.uint64)
        for n in range(1, hi + 1):
            m = len(cp) - n + 1
            if m <= 0:
                break
            # h[i] is the hash of cp[i : i + n], extended by one character per step.
            h = h[:m] * _BASE + cp[n - 1 : n - 1 + m]
            if n < lo:
                continue
            valid = doc[:m] == doc[n - 1 : n - 1 + m]
            valid &= cp[n - 1 : n - 1 + m] != _SEP  # ...and does not end on the separator
            idx = np.flatnonzero(valid)
            rows.append(doc[idx])
            cols.append((_mix(h[idx] + np.uint64(n)) & mask).astype(np.int64))
        r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        c = np.concatenate(cols) if cols else np.zeros(0, np.int64)
        blocks.append(_count_matrix(r, c, b - a, n_features))
    return sp.vstack(blocks, format="csr") if len(blocks) > 1 else blocks[0]


def _count_matrix(
    rows: NDArray[np.int64], cols: NDArray[np.int64], n_rows: int, n_cols: int
) -> sp.csr_matrix:
    """The canonical CSR matrix counting each ``(row, col)`` pair, built directly.

    The same matrix as a COO build followed by ``sum_duplicates`` (sorted
    columns, one entry per pair, float32 counts). For a request's few
    thousand n-grams one sort is quicker than scipy's conversions, which cost
    more than the hashing itself; for a training batch of millions scipy's
    row-by-row build is the quicker.
    """
    if len(rows) > _DIRECT_MAX_PAIRS:
        out = sp.csr_matrix(
            (np.ones(len(rows), dtype=np.float32), (rows, cols)),
            shape=(n_rows, n_cols),
            dtype=np.float32,
        )
        out.sum_duplicates()
        return out
    pairs, counts = np.unique(rows * np.int64(n_cols) + cols, return_counts=True)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(pairs // n_cols, minlength=n_rows), out=indptr[1:])
    # At most _DIRECT_MAX_PAIRS entries here, so only the width can need 64 bits.
    index = np.int32 if n_cols <= np.iinfo(np.int32).max else np.int64
    out = sp.csr_matrix(
        (counts.astype(np.float32), (pairs % n_cols).astype(index), indptr.astype(index)),
        shape=(n_rows, n_cols),
    )
    out.has_canonical_format = True
    return out


def word_ngram_counts(
    texts: Sequence[str], ngram_range: tuple[int, int] = (1, 2), n_features: int = 1 << 20
) -> sp.csr_matrix:
    """Counts of hashed word n-grams (scikit-learn's murmur hashing, lower-cased).

    Examples
    --------
    >>> m = word_ngram_counts(["ignore the rules", "the rules"], (1, 2), 1 << 12)
    >>> int(m[0].sum()), int(m[1].sum())
    (5, 3)
    """
    from sklearn.feature_extraction.text import HashingVectorizer

    hv = HashingVectorizer(
        analyzer="word",
        ngram_range=ngram_range,
        token_pattern=r"(?u)\b\w+\b",
        n_features=n_features,
        alternate_sign=False,
        norm=None,
        dtype=np.float32,
    )
    return hv.transform(texts).tocsr()


class TfidfWeights:
    """Sublinear TF, smoothed IDF and L2 row normalisation over hashed counts.

    Parameters
    ----------
    idf : ndarray of shape (n_features,), optional
        Set by :meth:`fit`, or restored from a saved model.
    """

    def __init__(self, idf: NDArray[np.float32] | None = None) -> None:
        self.idf = idf

    def fit(self, counts: sp.csr_matrix) -> TfidfWeights:
        """Learn IDF weights ``log((1 + n) / (1 + df)) + 1`` from a count matrix."""
        n = counts.shape[0]
        df = np.bincount(counts.indices, minlength=counts.shape[1])
        self.idf = (np.log((1.0 + n) / (1.0 + df)) + 1.0).astype(np.float32)
        return self

    def transform(self, counts: sp.csr_matrix, *, binary: bool = False) -> sp.csr_matrix:
        """Weighted, L2-normalised copy of ``counts`` (``binary``: presence instead of TF)."""
        if self.idf is None:
            raise RuntimeError("TfidfWeights.transform called before fit")
        x = counts.copy()
        x.data = np.ones_like(x.data) if binary else np.log1p(x.data)
        x.data *= self.idf[x.indices]
        # Row sums of squares, reduced in float32 in storage order, as scipy's
        # ``x.multiply(x).sum(axis=1)`` does, without building a second matrix.
        norms = np.zeros(x.shape[0], dtype=np.float32)
        filled = np.flatnonzero(np.diff(x.indptr))
        if filled.size:
            norms[filled] = np.add.reduceat(x.data * x.data, x.indptr[filled])
        norms = np.sqrt(norms)
        norms[norms == 0] = 1.0
        x.data /= np.repeat(norms, np.diff(x.indptr)).astype(np.float32)
        return x
