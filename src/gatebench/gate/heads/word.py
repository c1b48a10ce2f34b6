"""The ``word`` head: NB-SVM on hashed word n-grams (Wang & Manning, 2012).

A linear SVM over naive-Bayes log-count ratios is a different model family
from the other linear heads on purpose: the combiner gains only where the
heads disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Self

import numpy as np
import scipy.sparse as sp

from gatebench.gate._ngrams import TfidfWeights, word_ngram_counts
from gatebench.gate.heads.base import LinearHead

__all__ = ["WordHead"]


class WordHead(LinearHead):
    """Word n-gram NB-SVM (Wang & Manning, 2012): a linear SVM on NB log-count ratios.

    Parameters
    ----------
    seed : int
        Seeds the SVM's coordinate descent.
    ngram_range : (int, int) or None
        Word n-gram sizes; ``None``: :attr:`default_ngrams`.
    n_features : int
        Hash buckets.
    C : float
        SVM regularisation.
    smoothing : float
        Additive smoothing of the per-class feature counts.
    """

    name = "word"
    view = "word"
    settings = ("seed", "ngram_range", "n_features", "C", "smoothing")
    #: The n-gram sizes when ``ngram_range`` is not given.
    default_ngrams: ClassVar[tuple[int, int]] = (1, 2)

    def __init__(
        self,
        *,
        seed: int = 0,
        ngram_range: tuple[int, int] | None = None,
        n_features: int = 1 << 20,
        C: float = 0.3,  # noqa: N803  (sklearn's name)
        smoothing: float = 1.0,
    ) -> None:
        super().__init__(seed=seed)
        lo, hi = self.default_ngrams if ngram_range is None else ngram_range
        self.ngram_range = (int(lo), int(hi))
        self.n_features = int(n_features)
        self.C = float(C)
        self.smoothing = float(smoothing)
        self.tfidf = TfidfWeights()

    def represent(self, texts: Sequence[str]) -> sp.csr_matrix:
        return word_ngram_counts(list(texts), self.ngram_range, self.n_features)

    def _nb(self, x: sp.csr_matrix) -> sp.csr_matrix:
        # Scaling the stored values column by column is what multiplying by the
        # ratio row does, without scipy's broadcasting copy.
        nb = self.tfidf.transform(x, binary=True)
        nb.data *= self.ratio[nb.indices]
        return nb

    def fit_x(self, x: sp.csr_matrix, y: np.ndarray, weight: np.ndarray | None = None) -> Self:
        from sklearn.svm import LinearSVC

        self.tfidf.fit(x)
        present = x.copy()
        present.data = np.ones_like(present.data)
        w = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=np.float64)
        p = np.asarray(present[y == 1].T @ w[y == 1]).ravel() + self.smoothing
        q = np.asarray(present[y == 0].T @ w[y == 0]).ravel() + self.smoothing
        self.ratio = np.log((p / p.sum()) / (q / q.sum())).astype(np.float32)
        svm = LinearSVC(C=self.C, random_state=self.seed).fit(self._nb(x), y, sample_weight=weight)
        self.coef = svm.coef_.ravel().astype(np.float32)
        self.intercept = float(svm.intercept_[0])
        return self

    def decision_x(self, x: sp.csr_matrix) -> np.ndarray:
        return self._linear(self._nb(x))

    def fitted_state(self) -> dict[str, Any]:
        assert self.tfidf.idf is not None
        return {"idf": self.tfidf.idf, "ratio": self.ratio} | super().fitted_state()

    def restore_fitted(self, state: Mapping[str, Any]) -> None:
        super().restore_fitted(state)
        self.tfidf = TfidfWeights(state["idf"])
        self.ratio = state["ratio"]
