"""The deferred stage's heads: the ``embed`` and ``neighbours`` models on MiniLM embeddings.

The real MiniLM encoder is too slow for every request on two cores, so Gate
runs these heads only on the rows its fast path defers. They reuse the
fast heads' models unchanged; only the view they read differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gatebench.gate.heads.embed import EmbedHead
from gatebench.gate.heads.neighbours import NeighbourHead

__all__ = ["SentenceHead", "SentenceNeighbourHead"]


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
    #: 128 of MiniLM's 384 dimensions keep 81% of the training texts' squared length;
    #: the deferred rows read an 18 MB bank as 6 MB (benchmarks/RESULTS.md).
    default_dims = 128
