"""Per-text representations shared by the heads: computed once, sliced by row.

A :class:`Views` holds, for one list of texts, the hashed character and word
n-gram counts, the static embedding, the handcrafted features and, when a
head reads it, the multilingual sentence embedding. The heads
and the combiner's inner cross-fit only ever slice it, which is what keeps
the cross-fit cheap: no text is featurised twice within a fit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from gatebench.gate._ngrams import char_ngram_counts, word_ngram_counts
from gatebench.gate.cache import VectorCache
from gatebench.gate.features import FEATURE_NAMES, handcrafted_features
from gatebench.gate.form import form_texts
from gatebench.gate.multilingual import (
    ENCODER_LANGUAGES,
    MultilingualEncoder,
    route_fingerprint,
    route_flags,
)
from gatebench.gate.static_embed import StaticEmbedder
from gatebench.gate.textpool import beside
from gatebench.gate.topic_shift import SHIFT_NAMES, shift_features
from gatebench.text import text_hash

__all__ = ["Featurizer", "Views", "text_keys"]

FEATURES_VERSION = 2  # bump whenever a feature definition changes (cache key)


@dataclass
class Views:
    """Representations of ``texts``, row-aligned."""

    texts: list[str]
    char: sp.csr_matrix
    word: sp.csr_matrix
    static: np.ndarray
    features: np.ndarray
    #: MiniLM sentence embeddings; filled only where the deferred stage needs them.
    minilm: np.ndarray | None = None
    #: Multilingual sentence embeddings; filled only when a head reads them.
    #: Where only routed texts are encoded, the others' rows are NaN.
    multilingual: np.ndarray | None = None
    #: Per text, whether it is routed to the multilingual head (not English);
    #: filled only when the routed head is among Gate's heads.
    routed: np.ndarray | None = None
    #: Per text, whether it is routed and in a language the multilingual encoder
    #: reads (:data:`~gatebench.gate.multilingual.ENCODER_LANGUAGES`); filled with ``routed``.
    encoder_language: np.ndarray | None = None
    #: :func:`text_keys` of ``texts``, computed on first use.
    keys: np.ndarray | None = None
    #: Topic-shift columns (:data:`~gatebench.gate.topic_shift.SHIFT_NAMES`); filled
    #: only when the featurizer was built with ``shift=True``.
    shift: np.ndarray | None = None
    #: Word n-gram counts of form-only text (:mod:`gatebench.gate.form`); filled
    #: only when the ``form`` head is among Gate's heads.
    form: sp.csr_matrix | None = None

    def __len__(self) -> int:
        return len(self.texts)

    def text_keys(self) -> np.ndarray:
        """64-bit keys of the normalised texts (what the neighbour heads match on)."""
        if self.keys is None:
            self.keys = text_keys(self.texts)
        return self.keys

    def take(self, idx: np.ndarray) -> Views:
        """The rows ``idx``, in that order."""
        return Views(
            texts=[self.texts[i] for i in idx],
            char=self.char[idx],
            word=self.word[idx],
            static=self.static[idx],
            features=self.features[idx],
            minilm=None if self.minilm is None else self.minilm[idx],
            multilingual=None if self.multilingual is None else self.multilingual[idx],
            routed=None if self.routed is None else self.routed[idx],
            encoder_language=None if self.encoder_language is None else self.encoder_language[idx],
            keys=None if self.keys is None else self.keys[idx],
            shift=None if self.shift is None else self.shift[idx],
            form=None if self.form is None else self.form[idx],
        )


def text_keys(texts: Sequence[str]) -> np.ndarray:
    """The first 64 bits of :func:`gatebench.text.text_hash` per text, as ``uint64``.

    Two texts share a key when they are the same text up to Unicode
    normalisation, case and whitespace: the trace's notion of an exact duplicate.
    """
    return np.array([int(text_hash(t)[:16], 16) for t in texts], dtype=np.uint64)


class Featurizer:
    """Turns texts into :class:`Views`.

    Parameters
    ----------
    embedder : StaticEmbedder
    char_ngrams, word_ngrams : (int, int)
        n-gram ranges of the two TF-IDF heads.
    char_features, word_features : int
        Hash buckets of each n-gram family.
    cache_dir : path or None
        Embeddings and handcrafted features are cached here by text hash;
        ``None`` disables the cache (serving does not need it).
    multilingual : MultilingualEncoder, optional
        Fills :attr:`Views.multilingual`; left out, that view stays empty.
    route : bool
        Also fill :attr:`Views.routed` and :attr:`Views.encoder_language`
        (:func:`~gatebench.gate.multilingual.route_flags`).
        Called with ``full=False``, the featurizer then encodes only the
        routed texts, since no head reads the others' multilingual vectors.
    shift : bool
        Also fill :attr:`Views.shift` (topic-shift columns).
    form_ngrams : (int, int) or None
        n-gram range of the ``form`` head's view; ``None`` leaves
        :attr:`Views.form` empty.
    form_features : int
        Hash buckets of that view.
    """

    def __init__(
        self,
        embedder: StaticEmbedder,
        *,
        char_ngrams: tuple[int, int] = (2, 5),
        word_ngrams: tuple[int, int] = (1, 2),
        char_features: int = 1 << 20,
        word_features: int = 1 << 20,
        cache_dir: Path | str | None = None,
        multilingual: MultilingualEncoder | None = None,
        route: bool = False,
        shift: bool = False,
        form_ngrams: tuple[int, int] | None = None,
        form_features: int = 1 << 20,
    ) -> None:
        self.embedder = embedder
        self.form_ngrams = (
            None if form_ngrams is None else (int(form_ngrams[0]), int(form_ngrams[1]))
        )
        self.form_features = int(form_features)
        self.shift = bool(shift)
        self.multilingual = multilingual
        self.route = bool(route)
        self.char_ngrams = (int(char_ngrams[0]), int(char_ngrams[1]))
        self.word_ngrams = (int(word_ngrams[0]), int(word_ngrams[1]))
        self.char_features = int(char_features)
        self.word_features = int(word_features)
        self._static_cache: VectorCache | None = None
        self._feature_cache: VectorCache | None = None
        self._multilingual_cache: VectorCache | None = None
        self._route_cache: VectorCache | None = None
        self._shift_cache: VectorCache | None = None
        if cache_dir is not None:
            key = embedder.fingerprint()
            self._static_cache = VectorCache(cache_dir, f"static-{key}")
            self._feature_cache = VectorCache(
                cache_dir, f"features-v{FEATURES_VERSION}-{len(FEATURE_NAMES)}"
            )
            if multilingual is not None:
                self._multilingual_cache = VectorCache(cache_dir, multilingual.fingerprint())
            if route:
                langs = ",".join(sorted(ENCODER_LANGUAGES))
                key = hashlib.sha256(langs.encode()).hexdigest()[:8]
                self._route_cache = VectorCache(cache_dir, f"route-{route_fingerprint()}-{key}")
            if shift:
                self._shift_cache = VectorCache(cache_dir, f"shift-v1-{embedder.fingerprint()}")

    def static(self, texts: Sequence[str]) -> np.ndarray:
        """Static embeddings, through the cache when there is one."""
        if self._static_cache is None or not texts:
            return self.embedder.encode(texts)
        return self._static_cache.get_or_compute(texts, self.embedder.encode)

    def features(self, texts: Sequence[str]) -> np.ndarray:
        """Handcrafted features, through the cache when there is one."""
        if self._feature_cache is None or not texts:
            return handcrafted_features(texts)
        return self._feature_cache.get_or_compute(texts, handcrafted_features)

    def multilingual_vectors(self, texts: Sequence[str]) -> np.ndarray | None:
        """Multilingual embeddings (through the cache when there is one), or ``None``."""
        enc = self.multilingual
        if enc is None:
            return None
        if self._multilingual_cache is None or not texts:
            vectors = enc.encode(texts)
        else:
            vectors = self._multilingual_cache.get_or_compute(texts, enc.encode)
        return vectors.reshape(len(texts), enc.dims)

    def route_flags(self, texts: Sequence[str]) -> np.ndarray | None:
        """:func:`~gatebench.gate.multilingual.route_flags` of ``texts`` (cached), or ``None``."""
        if not self.route:
            return None
        if self._route_cache is None or not texts:
            return route_flags(texts)
        return self._route_cache.get_or_compute(texts, route_flags).reshape(len(texts), 2)

    def shift_view(self, texts: Sequence[str]) -> np.ndarray | None:
        """Topic-shift columns of ``texts`` (cached), or ``None`` when ``shift`` is off."""
        if not self.shift:
            return None
        if self._shift_cache is None or not texts:
            vectors = shift_features(texts, self.embedder)
        else:
            vectors = self._shift_cache.get_or_compute(
                texts, lambda t: shift_features(t, self.embedder)
            )
        return vectors.reshape(len(texts), len(SHIFT_NAMES))

    def form_view(self, texts: Sequence[str]) -> sp.csr_matrix | None:
        """Word n-gram counts of form-only ``texts``, or ``None`` when no head reads them."""
        if self.form_ngrams is None:
            return None
        return word_ngram_counts(form_texts(texts), self.form_ngrams, self.form_features)

    def without_cache(self) -> Featurizer:
        """The same featurizer with no disk cache (for derived texts such as windows)."""
        return Featurizer(
            self.embedder,
            char_ngrams=self.char_ngrams,
            word_ngrams=self.word_ngrams,
            char_features=self.char_features,
            word_features=self.word_features,
            multilingual=self.multilingual,
            route=self.route,
            shift=self.shift,
            form_ngrams=self.form_ngrams,
            form_features=self.form_features,
        )

    def __call__(self, texts: Sequence[str], *, full: bool = True) -> Views:
        """The views of ``texts``.

        ``full=False`` (scoring) encodes only routed texts with the
        multilingual encoder when routing is on; fitting needs every text's
        vector, since the routed head learns from English rows too.
        """
        texts = list(texts)
        flags = self.route_flags(texts)
        routed = None if flags is None else flags[:, 0] > 0.5
        # The sentence encoder's work runs outside the GIL, so the n-gram and
        # feature views are built beside it, a lone routed text's included.
        encodes = self.multilingual is not None and (routed is None or full or bool(routed.any()))
        with beside(
            lambda: self._multilingual_view(texts, routed, full), threaded=encodes
        ) as multilingual:
            # Arguments are evaluated in order: the encoder's result is read last.
            return Views(
                texts=texts,
                char=char_ngram_counts(texts, self.char_ngrams, self.char_features),
                word=word_ngram_counts(texts, self.word_ngrams, self.word_features),
                static=self.static(texts).reshape(len(texts), self.embedder.dims),
                features=self.features(texts).reshape(len(texts), len(FEATURE_NAMES)),
                multilingual=multilingual(),
                routed=routed,
                encoder_language=None if flags is None else flags[:, 1] > 0.5,
                shift=self.shift_view(texts),
                form=self.form_view(texts),
            )

    def _multilingual_view(
        self, texts: list[str], routed: np.ndarray | None, full: bool
    ) -> np.ndarray | None:
        """The multilingual vectors a call of ``full`` needs (NaN rows where none is read)."""
        if routed is None or full or self.multilingual is None:
            return self.multilingual_vectors(texts)
        out = np.full((len(texts), self.multilingual.dims), np.nan, np.float32)
        idx = np.flatnonzero(routed)
        if idx.size:
            out[idx] = self.multilingual_vectors([texts[i] for i in idx])
        return out
