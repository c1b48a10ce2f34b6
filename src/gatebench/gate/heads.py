"""Gate's classifier heads: five detectors, each usable on its own.

=============  ==========================================  ==============================
head           representation                              model
=============  ==========================================  ==============================
``char``       hashed char 2-5-gram TF-IDF (sublinear)     logistic regression (SGD)
``word``       hashed word 1-2-gram binary TF-IDF          NB-SVM (linear SVM on NB ratios)
``embed``      static MiniLM embedding (256-d)             logistic regression
``features``   handcrafted cues and statistics             logistic regression (scaled)
``neighbours`` static MiniLM embedding                     k-NN similarity to train rows
=============  ==========================================  ==============================

The heads differ in representation *and* model family on purpose: the
combiner gains only where they disagree (paper §2.8, head agreement).

Every head exposes the detector protocol (``fit(texts, labels, *, valid)``,
``score(texts)`` giving P(attack)) and a lower-level interface on
precomputed :class:`~gatebench.gate.views.Views` that :class:`Gate` uses:
``fit_x``, ``decision_x`` (one raw margin per row) and ``meta_x`` (the
columns the combiner sees). ``score`` maps the margin through a Platt
sigmoid, fitted on out-of-fold margins inside Gate and on ``valid`` when a
head is used alone. State is plain arrays and JSON-able parameters, never
pickled objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Self

import numpy as np
import scipy.sparse as sp

from gatebench.gate._ngrams import TfidfWeights, char_ngram_counts, word_ngram_counts
from gatebench.gate.features import CONTENT_COLUMNS, handcrafted_features
from gatebench.gate.static_embed import StaticEmbedder
from gatebench.gate.views import Views, text_keys

__all__ = [
    "HEAD_TYPES",
    "SENTENCE_HEAD_TYPES",
    "CharHead",
    "EmbedHead",
    "FeatureHead",
    "Head",
    "NeighbourHead",
    "SentenceHead",
    "SentenceNeighbourHead",
    "WordHead",
    "sigmoid",
]

Valid = tuple[Sequence[str], np.ndarray] | None


def sigmoid(z: np.ndarray) -> np.ndarray:
    """Numerically safe logistic function."""
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=np.float64))))


def _platt(decision: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Fit ``P(y=1) = sigmoid(a * d + b)``; a weakly regularised 1-D logistic regression."""
    from sklearn.linear_model import LogisticRegression

    if len(np.unique(y)) < 2:
        return 1.0, 0.0
    lr = LogisticRegression(C=100.0).fit(np.asarray(decision).reshape(-1, 1), y)
    return float(lr.coef_[0, 0]), float(lr.intercept_[0])


class Head:
    """Base class: the detector protocol on top of ``fit_x`` / ``decision_x``.

    Subclasses set ``name`` and ``view`` (the :class:`Views` field they read)
    and implement ``represent``, ``fit_x``, ``decision_x``, ``state`` and
    ``from_state``.
    """

    name: ClassVar[str] = ""
    view: ClassVar[str] = ""
    requires_fit: ClassVar[bool] = True

    def __init__(self, *, seed: int = 0) -> None:
        self.seed = int(seed)
        self.platt = (1.0, 0.0)

    # -- representation-level interface (used by Gate) -------------------------------
    def represent(self, texts: Sequence[str]) -> Any:
        """This head's view of ``texts`` when used on its own."""
        raise NotImplementedError

    def x_of(self, views: Views) -> Any:
        """This head's input taken from shared views."""
        return getattr(views, self.view)

    def fit_x(self, x: Any, y: np.ndarray) -> Self:
        """Fit on a precomputed representation."""
        raise NotImplementedError

    def decision_x(self, x: Any) -> np.ndarray:
        """Raw margin per row (higher means more attack-like)."""
        raise NotImplementedError

    def meta_x(self, x: Any) -> np.ndarray:
        """Columns handed to the combiner; the margin alone unless overridden."""
        return self.decision_x(x).reshape(-1, 1)

    def decision_from_meta(self, meta: np.ndarray) -> np.ndarray:
        """The margin, recovered from :meth:`meta_x`'s columns without recomputing them."""
        return np.asarray(meta[:, 0])

    def logit_from_decision(self, decision: np.ndarray) -> np.ndarray:
        """Calibrated log-odds from margins (the Platt line before its sigmoid)."""
        a, b = self.platt
        return np.asarray(a * decision + b)

    def calibrate(self, decision: np.ndarray, y: np.ndarray) -> Self:
        """Fit the Platt sigmoid that turns margins into probabilities."""
        self.platt = _platt(decision, y)
        return self

    def proba_from_decision(self, decision: np.ndarray) -> np.ndarray:
        """P(attack) from margins, through the Platt sigmoid."""
        a, b = self.platt
        return sigmoid(a * decision + b)

    # -- detector protocol -----------------------------------------------------------
    def fit(self, texts: Sequence[str], labels: np.ndarray, *, valid: Valid = None) -> Self:
        """Fit on raw texts; ``valid`` (if given) fits the probability calibration."""
        y = np.asarray(labels, dtype=np.int64)
        self.fit_x(self.represent(texts), y)
        if valid is not None:
            self.calibrate(self.decision_x(self.represent(valid[0])), np.asarray(valid[1]))
        else:
            self.calibrate(self.decision_x(self.represent(texts)), y)
        return self

    def score(self, texts: Sequence[str]) -> np.ndarray:
        """P(attack) per text."""
        return self.proba_from_decision(self.decision_x(self.represent(texts)))

    # -- persistence -----------------------------------------------------------------
    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """JSON-able parameters and named arrays that rebuild this head."""
        raise NotImplementedError

    def _base_params(self) -> dict[str, Any]:
        return {"seed": self.seed, "platt": list(self.platt)}

    def _restore_base(self, params: dict[str, Any]) -> None:
        self.platt = (float(params["platt"][0]), float(params["platt"][1]))


class _LinearMixin:
    coef: np.ndarray
    intercept: float

    def _linear(self, x: Any) -> np.ndarray:
        return np.asarray(x @ self.coef).ravel() + self.intercept


class CharHead(_LinearMixin, Head):
    """Character n-gram TF-IDF with logistic regression.

    Parameters
    ----------
    seed : int
        Seeds the SGD shuffling.
    ngram_range : (int, int)
        Character n-gram sizes.
    n_features : int
        Hash buckets.
    alpha : float
        L2 penalty of the SGD logistic regression.
    epochs : int
        SGD passes; averaging makes a fixed, small number enough, which
        keeps the inner cross-fit fast (liblinear took 5x longer for a
        slightly worse held-out F1 on the default trace).
    """

    name = "char"
    view = "char"

    def __init__(
        self,
        *,
        seed: int = 0,
        ngram_range: tuple[int, int] = (2, 5),
        n_features: int = 1 << 20,
        alpha: float = 1e-5,
        epochs: int = 15,
    ) -> None:
        super().__init__(seed=seed)
        self.ngram_range = (int(ngram_range[0]), int(ngram_range[1]))
        self.n_features = int(n_features)
        self.alpha = float(alpha)
        self.epochs = int(epochs)
        self.tfidf = TfidfWeights()

    def represent(self, texts: Sequence[str]) -> sp.csr_matrix:
        return char_ngram_counts(list(texts), self.ngram_range, self.n_features)

    def fit_x(self, x: sp.csr_matrix, y: np.ndarray) -> Self:
        from sklearn.linear_model import SGDClassifier

        self.tfidf.fit(x)
        model = SGDClassifier(
            loss="log_loss",
            alpha=self.alpha,
            max_iter=self.epochs,
            tol=None,
            average=True,
            random_state=self.seed,
        ).fit(self.tfidf.transform(x), y)
        self.coef = model.coef_.ravel().astype(np.float32)
        self.intercept = float(model.intercept_[0])
        return self

    def decision_x(self, x: sp.csr_matrix) -> np.ndarray:
        return self._linear(self.tfidf.transform(x))

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        params = self._base_params() | {
            "ngram_range": list(self.ngram_range),
            "n_features": self.n_features,
            "alpha": self.alpha,
            "epochs": self.epochs,
            "intercept": self.intercept,
        }
        assert self.tfidf.idf is not None
        return params, {"idf": self.tfidf.idf, "coef": self.coef}

    @classmethod
    def from_state(cls, params: dict[str, Any], arrays: dict[str, np.ndarray]) -> CharHead:
        head = cls(
            seed=params["seed"],
            ngram_range=tuple(params["ngram_range"]),
            n_features=params["n_features"],
            alpha=params["alpha"],
            epochs=params["epochs"],
        )
        head._restore_base(params)
        head.tfidf = TfidfWeights(arrays["idf"])
        head.coef, head.intercept = arrays["coef"], float(params["intercept"])
        return head


class WordHead(_LinearMixin, Head):
    """Word n-gram NB-SVM (Wang & Manning, 2012): a linear SVM on NB log-count ratios.

    Parameters
    ----------
    seed : int
        Seeds the SVM's coordinate descent.
    ngram_range : (int, int)
        Word n-gram sizes.
    n_features : int
        Hash buckets.
    C : float
        SVM regularisation.
    smoothing : float
        Additive smoothing of the per-class feature counts.
    """

    name = "word"
    view = "word"

    def __init__(
        self,
        *,
        seed: int = 0,
        ngram_range: tuple[int, int] = (1, 2),
        n_features: int = 1 << 20,
        C: float = 0.3,  # noqa: N803  (sklearn's name)
        smoothing: float = 1.0,
    ) -> None:
        super().__init__(seed=seed)
        self.ngram_range = (int(ngram_range[0]), int(ngram_range[1]))
        self.n_features = int(n_features)
        self.C = float(C)
        self.smoothing = float(smoothing)
        self.tfidf = TfidfWeights()

    def represent(self, texts: Sequence[str]) -> sp.csr_matrix:
        return word_ngram_counts(list(texts), self.ngram_range, self.n_features)

    def _nb(self, x: sp.csr_matrix) -> sp.csr_matrix:
        return self.tfidf.transform(x, binary=True).multiply(self.ratio).tocsr()

    def fit_x(self, x: sp.csr_matrix, y: np.ndarray) -> Self:
        from sklearn.svm import LinearSVC

        self.tfidf.fit(x)
        present = x.copy()
        present.data = np.ones_like(present.data)
        p = np.asarray(present[y == 1].sum(axis=0)).ravel() + self.smoothing
        q = np.asarray(present[y == 0].sum(axis=0)).ravel() + self.smoothing
        self.ratio = np.log((p / p.sum()) / (q / q.sum())).astype(np.float32)
        svm = LinearSVC(C=self.C, random_state=self.seed).fit(self._nb(x), y)
        self.coef = svm.coef_.ravel().astype(np.float32)
        self.intercept = float(svm.intercept_[0])
        return self

    def decision_x(self, x: sp.csr_matrix) -> np.ndarray:
        return self._linear(self._nb(x))

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        params = self._base_params() | {
            "ngram_range": list(self.ngram_range),
            "n_features": self.n_features,
            "C": self.C,
            "smoothing": self.smoothing,
            "intercept": self.intercept,
        }
        assert self.tfidf.idf is not None
        return params, {"idf": self.tfidf.idf, "ratio": self.ratio, "coef": self.coef}

    @classmethod
    def from_state(cls, params: dict[str, Any], arrays: dict[str, np.ndarray]) -> WordHead:
        head = cls(
            seed=params["seed"],
            ngram_range=tuple(params["ngram_range"]),
            n_features=params["n_features"],
            C=params["C"],
            smoothing=params["smoothing"],
        )
        head._restore_base(params)
        head.tfidf = TfidfWeights(arrays["idf"])
        head.ratio, head.coef = arrays["ratio"], arrays["coef"]
        head.intercept = float(params["intercept"])
        return head


class _EmbeddingInput:
    """Mixin for heads that read the static embedding: ``represent`` needs an embedder."""

    embedder: StaticEmbedder | None

    def represent(self, texts: Sequence[str]) -> Any:
        return self.embed(texts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The embedding matrix of ``texts``."""
        if self.embedder is None:
            from gatebench.gate.static_embed import distill_static

            vectors, tokenizer_json = distill_static(cache_dir=".cache/gatebench")
            self.embedder = StaticEmbedder(vectors, tokenizer_json)
        return self.embedder.encode(list(texts))


class EmbedHead(_EmbeddingInput, _LinearMixin, Head):
    """Logistic regression on the static MiniLM sentence embedding.

    Parameters
    ----------
    seed : int
        Unused by the deterministic solver; kept for the protocol.
    C : float
        Inverse L2 strength.
    embedder : StaticEmbedder, optional
        Needed only for standalone ``fit``/``score``; distilled (cached) when omitted.
    """

    name = "embed"
    view = "static"

    def __init__(
        self,
        *,
        seed: int = 0,
        C: float = 10.0,  # noqa: N803
        embedder: StaticEmbedder | None = None,
    ) -> None:
        super().__init__(seed=seed)
        self.C = float(C)
        self.embedder = embedder

    def fit_x(self, x: np.ndarray, y: np.ndarray) -> Self:
        from sklearn.linear_model import LogisticRegression

        lr = LogisticRegression(C=self.C, max_iter=3000).fit(x, y)
        self.coef = lr.coef_.ravel().astype(np.float32)
        self.intercept = float(lr.intercept_[0])
        return self

    def decision_x(self, x: np.ndarray) -> np.ndarray:
        return self._linear(x)

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return self._base_params() | {"C": self.C, "intercept": self.intercept}, {"coef": self.coef}

    @classmethod
    def from_state(cls, params: dict[str, Any], arrays: dict[str, np.ndarray]) -> EmbedHead:
        head = cls(seed=params["seed"], C=params["C"])
        head._restore_base(params)
        head.coef, head.intercept = arrays["coef"], float(params["intercept"])
        return head


class FeatureHead(_LinearMixin, Head):
    """Logistic regression on the handcrafted features (signed log, standardised).

    Parameters
    ----------
    seed : int
        Unused by the deterministic solver; kept for the protocol.
    C : float
        Inverse L2 strength.
    content_only : bool
        Read only the content columns (:data:`~gatebench.gate.features.CONTENT_COLUMNS`),
        not the style ones (length, script, character classes). Style tells
        sources apart: where the training attacks are mostly non-English, a
        style-reading head learns "other script = attack" and flags every
        unseen non-English benign text.
    """

    name = "features"
    view = "features"

    def __init__(self, *, seed: int = 0, C: float = 1.0, content_only: bool = False) -> None:  # noqa: N803
        super().__init__(seed=seed)
        self.C = float(C)
        self.content_only = bool(content_only)

    def _columns(self, x: np.ndarray) -> np.ndarray:
        return x[:, list(CONTENT_COLUMNS)] if self.content_only else x

    def represent(self, texts: Sequence[str]) -> np.ndarray:
        return self._columns(handcrafted_features(list(texts)))

    def x_of(self, views: Views) -> np.ndarray:
        return self._columns(views.features)

    def _scale(self, x: np.ndarray) -> np.ndarray:
        # Counts are heavy-tailed (one jailbreak repeats "DAN" 40 times): the
        # signed log keeps one text from dominating the fit.
        z = np.sign(x) * np.log1p(np.abs(x))
        return np.asarray((z - self.mean) / self.scale)

    def fit_x(self, x: np.ndarray, y: np.ndarray) -> Self:
        from sklearn.linear_model import LogisticRegression

        z = np.sign(x) * np.log1p(np.abs(x))
        self.mean = z.mean(axis=0).astype(np.float32)
        sd = z.std(axis=0)
        self.scale = np.where(sd > 0, sd, 1.0).astype(np.float32)
        lr = LogisticRegression(C=self.C, max_iter=3000).fit(self._scale(x), y)
        self.coef = lr.coef_.ravel().astype(np.float32)
        self.intercept = float(lr.intercept_[0])
        return self

    def decision_x(self, x: np.ndarray) -> np.ndarray:
        return self._linear(self._scale(x))

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        params = {"C": self.C, "intercept": self.intercept, "content_only": self.content_only}
        return self._base_params() | params, {
            "coef": self.coef,
            "mean": self.mean,
            "scale": self.scale,
        }

    @classmethod
    def from_state(cls, params: dict[str, Any], arrays: dict[str, np.ndarray]) -> FeatureHead:
        head = cls(
            seed=params["seed"], C=params["C"], content_only=params.get("content_only", False)
        )
        head._restore_base(params)
        head.coef, head.intercept = arrays["coef"], float(params["intercept"])
        head.mean, head.scale = arrays["mean"], arrays["scale"]
        return head


_BLAS: Any = None


def _one_blas_thread() -> Any:
    """Context limiting BLAS to one thread.

    For a single request the product takes ~0.4 ms, but a second BLAS thread
    on a busy 2-core machine waits for a time slice and turns it into ~7 ms.
    The controller is built once (building it scans the loaded libraries).
    """
    global _BLAS
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController

        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


Keyed = tuple[np.ndarray, np.ndarray | None]


def _split_keyed(x: np.ndarray | Keyed) -> Keyed:
    return (x[0], x[1]) if isinstance(x, tuple) else (x, None)


_BLOCK = 256


class NeighbourHead(_EmbeddingInput, Head):
    """Cosine similarity to the nearest training attacks and benign texts.

    The margin is ``max_sim(attacks) - max_sim(benign)``; the combiner also
    sees the mean similarity of the ``k`` nearest of each class. Near-duplicate
    templates (a jailbreak reworded, an injection re-targeted) sit close to
    their siblings in embedding space even when their n-grams differ.

    A bank entry never votes for its own text: entries whose text key
    (:func:`gatebench.gate.views.text_keys`) equals the query's are left out.
    The combiner learns from out-of-fold rows, which never find themselves in
    the bank; without this a text the model was trained on would find itself
    at similarity 1 and look like nothing the combiner saw. On this trace that
    made benign training texts look like injected copies of benign documents
    (the constructed attacks are exactly that), so scoring training texts
    flagged 30% of the benign ones.

    Parameters
    ----------
    seed : int
        Unused (exact search); kept for the protocol.
    k : int
        Neighbours averaged per class.
    embedder : StaticEmbedder, optional
        Needed only for standalone ``fit``/``score``.
    """

    name = "neighbours"
    view = "static"

    def __init__(self, *, seed: int = 0, k: int = 5, embedder: StaticEmbedder | None = None):
        super().__init__(seed=seed)
        self.k = int(k)
        self.embedder = embedder
        # Bank key -> bank rows, per bank; built on first use, never stored.
        self._where: list[dict[int, list[int]]] | None = None

    def represent(self, texts: Sequence[str]) -> Keyed:
        return self.embed(texts), text_keys(texts)

    def x_of(self, views: Views) -> Keyed:
        return getattr(views, self.view), views.text_keys()

    def fit_x(self, x: np.ndarray | Keyed, y: np.ndarray) -> Self:
        emb, keys = _split_keyed(x)
        # Rounded through float16, the precision the model directory stores
        # the banks in, so a reloaded model scores identically.
        bank = np.asarray(emb, dtype=np.float16).astype(np.float32)
        self.attacks = np.ascontiguousarray(bank[y == 1])
        self.benign = np.ascontiguousarray(bank[y == 0])
        none = np.zeros(0, dtype=np.uint64)
        self.attack_keys = none if keys is None else np.asarray(keys[y == 1], dtype=np.uint64)
        self.benign_keys = none if keys is None else np.asarray(keys[y == 0], dtype=np.uint64)
        self._where = None
        return self

    def _self_matches(self, keys: np.ndarray | None, j: int) -> list[tuple[int, list[int]]]:
        """``(query row, bank rows with the same text)`` pairs for bank ``j``."""
        if keys is None:
            return []
        if self._where is None:
            self._where = []
            for bank_keys in (self.attack_keys, self.benign_keys):
                where: dict[int, list[int]] = {}
                for i, key in enumerate(bank_keys.tolist()):
                    where.setdefault(key, []).append(i)
                self._where.append(where)
        assert self._where is not None
        where = self._where[j]
        return [(r, where[key]) for r, key in enumerate(keys.tolist()) if key in where]

    def similarities(self, x: np.ndarray | Keyed) -> np.ndarray:
        """Columns: max and top-k mean similarity to attacks, then to benign rows."""
        emb, keys = _split_keyed(x)
        q = np.asarray(emb, dtype=np.float32)
        out = np.zeros((len(q), 4), dtype=np.float64)
        banks = (self.attacks, self.benign)
        for j, bank in enumerate(banks):
            if not len(bank) or not len(q):
                continue
            k = min(self.k, len(bank))
            own = self._self_matches(keys, j)
            # Query blocks bound the similarity block's memory: 256 queries against a
            # bank of 25,000 entries is 25 MB, plus as much again for the partition.
            for start in range(0, len(q), _BLOCK):
                if len(q) == 1:  # one request: a matrix-vector product on one thread
                    with _one_blas_thread():
                        s = (bank @ q[0])[None, :]
                else:
                    s = q[start : start + _BLOCK] @ bank.T
                for r, rows in own:
                    if start <= r < start + _BLOCK:
                        s[r - start, rows] = -1.0  # the lowest cosine: never a neighbour
                top = np.partition(s, len(bank) - k, axis=1)[:, -k:]
                out[start : start + _BLOCK, 2 * j] = top.max(axis=1)
                out[start : start + _BLOCK, 2 * j + 1] = top.mean(axis=1)
        return out

    def meta_x(self, x: np.ndarray | Keyed) -> np.ndarray:
        return self.similarities(x)

    def decision_x(self, x: np.ndarray | Keyed) -> np.ndarray:
        return self.decision_from_meta(self.similarities(x))

    def decision_from_meta(self, meta: np.ndarray) -> np.ndarray:
        # Nearest attack minus nearest benign similarity.
        return np.asarray(meta[:, 0] - meta[:, 2])

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        # float16 halves the bank on disk; cosine similarities move by < 1e-3.
        return self._base_params() | {"k": self.k}, {
            "attacks": self.attacks.astype(np.float16),
            "benign": self.benign.astype(np.float16),
            "attack_keys": self.attack_keys,
            "benign_keys": self.benign_keys,
        }

    @classmethod
    def from_state(cls, params: dict[str, Any], arrays: dict[str, np.ndarray]) -> NeighbourHead:
        head = cls(seed=params["seed"], k=params["k"])
        head._restore_base(params)
        head.attacks = np.ascontiguousarray(arrays["attacks"], dtype=np.float32)
        head.benign = np.ascontiguousarray(arrays["benign"], dtype=np.float32)
        head.attack_keys = np.asarray(arrays["attack_keys"], dtype=np.uint64)
        head.benign_keys = np.asarray(arrays["benign_keys"], dtype=np.uint64)
        return head


class _SentenceInput:
    """Mixin for heads that read MiniLM sentence embeddings (the deferred stage's view)."""

    encoder: Any = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """MiniLM embeddings of ``texts`` (what ``represent`` reads in heads using this view)."""
        if self.encoder is None:
            from gatebench.gate.encoder import MiniLMEncoder

            self.encoder = MiniLMEncoder.build(".cache/gatebench/minilm")
        return np.asarray(self.encoder.encode(list(texts)))


class SentenceHead(_SentenceInput, EmbedHead):
    """Logistic regression on all-MiniLM-L6-v2 sentence embeddings (int8 ONNX).

    Too slow for every request on two cores, so Gate runs it only on the rows
    its fast path defers; it is a detector in its own right all the same.
    """

    name = "minilm"
    view = "minilm"


class SentenceNeighbourHead(_SentenceInput, NeighbourHead):
    """Nearest training attacks and benign texts in MiniLM space (the attack bank)."""

    name = "minilm_neighbours"
    view = "minilm"


#: Head name -> class, in the combiner's column order.
HEAD_TYPES: dict[str, type[Head]] = {
    h.name: h for h in (CharHead, WordHead, EmbedHead, FeatureHead, NeighbourHead)
}
#: The deferred stage's extra heads, stacked after the fast ones.
SENTENCE_HEAD_TYPES: dict[str, type[Head]] = {
    h.name: h for h in (SentenceHead, SentenceNeighbourHead)
}
