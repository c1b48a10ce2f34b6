"""Gate's classifier heads: nine detectors, each usable on its own.

================  ==========================================  ==============================
head              representation                              model
================  ==========================================  ==============================
``char``          hashed char 2-5-gram TF-IDF (sublinear)     logistic regression (SGD)
``word``          hashed word 1-2-gram binary TF-IDF          NB-SVM (linear SVM on NB ratios)
``form``          the same, 1-4-grams of form-only text       NB-SVM (as ``word``)
``embed``         static MiniLM embedding (256-d)             logistic regression
``mlp``           static MiniLM embedding (256-d)             perceptron, one ReLU layer
``features``      handcrafted cues and statistics             logistic regression (scaled)
``neighbours``    static MiniLM embedding                     k-NN similarity to train rows
``multilingual``  USE multilingual v3 embedding (512-d)       logistic regression
``multilingual_   the same, read only for non-English text    logistic regression
routed``
================  ==========================================  ==============================

The heads differ in representation *and* model family on purpose: the
combiner gains only where they disagree (paper §2.8, head agreement).

Every head exposes the detector protocol (``fit(texts, labels, *, valid)``,
``score(texts)`` giving P(attack)) and a lower-level interface on
precomputed :class:`~gatebench.gate.views.Views` that :class:`Gate` uses:
``fit_x``, ``decision_x`` (one raw margin per row) and ``meta_x`` (the
columns the combiner sees). ``score`` maps the margin through a Platt
sigmoid, fitted on out-of-fold margins inside Gate and on ``valid`` when a
head is used alone. Every head's state round-trips through one flat
dictionary of JSON-able values and named arrays (``get_state`` and
``from_state``, :mod:`gatebench.gate.heads.base`), never a pickled object.

One module per head; this package maps head names to their classes.
"""

from __future__ import annotations

from gatebench.gate.heads.base import Head, sigmoid
from gatebench.gate.heads.char import CharHead
from gatebench.gate.heads.embed import EmbedHead
from gatebench.gate.heads.form import FormHead
from gatebench.gate.heads.handcrafted import FeatureHead
from gatebench.gate.heads.mlp import MLPHead
from gatebench.gate.heads.multilingual import MultilingualHead, RoutedMultilingualHead
from gatebench.gate.heads.neighbours import NeighbourHead
from gatebench.gate.heads.sentence import SentenceHead, SentenceNeighbourHead
from gatebench.gate.heads.word import WordHead

__all__ = [
    "HEAD_TYPES",
    "MULTILINGUAL_HEADS",
    "SENTENCE_HEAD_TYPES",
    "CharHead",
    "EmbedHead",
    "FeatureHead",
    "FormHead",
    "Head",
    "MLPHead",
    "MultilingualHead",
    "NeighbourHead",
    "RoutedMultilingualHead",
    "SentenceHead",
    "SentenceNeighbourHead",
    "WordHead",
    "sigmoid",
]

#: Head name -> class, in the combiner's column order.
HEAD_TYPES: dict[str, type[Head]] = {
    h.name: h
    for h in (
        CharHead,
        WordHead,
        EmbedHead,
        FeatureHead,
        NeighbourHead,
        MultilingualHead,
        MLPHead,
        RoutedMultilingualHead,
        FormHead,
    )
}
#: The heads that read the multilingual view.
MULTILINGUAL_HEADS: tuple[str, ...] = (MultilingualHead.name, RoutedMultilingualHead.name)
#: The deferred stage's extra heads, stacked after the fast ones.
SENTENCE_HEAD_TYPES: dict[str, type[Head]] = {
    h.name: h for h in (SentenceHead, SentenceNeighbourHead)
}
