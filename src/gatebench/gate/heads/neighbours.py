"""The ``neighbours`` head: cosine similarity to the nearest training attacks and benign texts.

Unlike the other heads it keeps its training rows (two embedding banks),
so its search, its leave-self-out rule and its one-request fast path live
here together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from typing import Any, Self

import numpy as np

from gatebench.gate.heads.base import Head
from gatebench.gate.heads.embed import EmbeddingInput
from gatebench.gate.static_embed import StaticEmbedder
from gatebench.gate.textpool import blas_single_threaded
from gatebench.gate.views import Views, text_keys

__all__ = ["NeighbourHead"]

Keyed = tuple[np.ndarray, np.ndarray | None]


def _split_keyed(x: np.ndarray | Keyed) -> Keyed:
    return (x[0], x[1]) if isinstance(x, tuple) else (x, None)


_BLOCK = 256


def _principal_directions(emb: np.ndarray, dims: int) -> np.ndarray | None:
    """The ``dims`` leading directions of ``emb``'s rows (uncentred), or None to keep all.

    Uncentred, because the search is by cosine: the directions that keep the
    most of the rows' own squared length keep the most of their dot products.
    The eigenvectors of the small Gram matrix, summed in float64, come out
    the same on every run, so the out-of-fold scores stay byte-identical.
    """
    if dims == 0 or dims >= emb.shape[1] or not len(emb):
        return None
    wide = emb.astype(np.float64)
    gram = wide.T @ wide
    _, vectors = np.linalg.eigh(gram)  # ascending eigenvalues
    return np.ascontiguousarray(vectors[:, ::-1][:, :dims], dtype=np.float32)


def _largest(s: np.ndarray, k: int, width: int = 1024) -> np.ndarray:
    """The ``k`` largest values of each row of ``s``, shape ``(len(s), k)``, ascending.

    A full partition of a 30,000-entry row costs a quarter of a millisecond,
    for a request and for each row of a batch alike. Every value at or above
    a row's ``k``-th largest block maximum is a candidate (``k`` blocks each
    hold one), and the row's ``k`` largest are among them, so ranking the few
    candidates gives the same values. Either way they come back sorted, so a
    mean over them adds the same values in the same order.
    """
    n_rows, n = s.shape
    if n < 2 * k * width:
        return np.sort(np.partition(s, n - k, axis=1)[:, -k:], axis=1)
    maxima = np.maximum.reduceat(s, np.arange(0, n, width), axis=1)
    bound = np.partition(maxima, maxima.shape[1] - k, axis=1)[:, -k]
    rows, cols = np.nonzero(s >= bound[:, None])
    values = s[rows, cols]
    order = np.lexsort((values, rows))  # by row, then smallest first
    end = np.searchsorted(rows[order], np.arange(n_rows), side="right")
    return np.asarray(values[order][end[:, None] + np.arange(-k, 0)])


class NeighbourHead(EmbeddingInput, Head):
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
    dims : int, optional
        Search in the first ``dims`` principal directions of the training
        texts (0: every dimension; default :attr:`default_dims`). One request
        reads both banks whole; at 256 dimensions the benign bank outgrows a
        server's last-level cache and the product is bound by memory, so a
        narrower bank is the difference between a fraction of a millisecond
        and several. At 128 and at 64, sources held out whole read within a
        draw's spread of 256.
    embedder : StaticEmbedder, optional
        Needed only for standalone ``fit``/``score``.
    """

    name = "neighbours"
    view = "static"
    settings = ("seed", "k", "dims")
    #: 64 of the static table's 256 dimensions keep 85% of the training texts' squared
    #: length; LODO reads 0.665 against 0.668 at 128 and 0.669 at 256, and a request
    #: reads a bank a quarter the size (benchmarks/RESULTS.md).
    default_dims = 64

    def __init__(
        self,
        *,
        seed: int = 0,
        k: int = 5,
        dims: int | None = None,
        embedder: StaticEmbedder | None = None,
    ):
        super().__init__(seed=seed)
        dims = self.default_dims if dims is None else dims
        if int(dims) < 0:
            raise ValueError(
                f"{self.name}: dims={dims} is negative; pass 0 (every dimension) or more"
            )
        self.k = int(k)
        self.dims = int(dims)
        self.embedder = embedder
        self.projection: np.ndarray | None = None
        # Bank key -> bank rows, per bank; built on first use, never stored.
        self._where: list[dict[int, list[int]]] | None = None

    def represent(self, texts: Sequence[str]) -> Keyed:
        return self.embed(texts), text_keys(texts)

    def x_of(self, views: Views) -> Keyed:
        return getattr(views, self.view), views.text_keys()

    def fit_x(self, x: np.ndarray | Keyed, y: np.ndarray, weight: np.ndarray | None = None) -> Self:
        # A bank holds every training text once; a weight has no meaning for it.
        emb, keys = _split_keyed(x)
        self.projection = _principal_directions(np.asarray(emb, np.float32), self.dims)
        # Rounded through float16, the precision the model directory stores
        # the banks in, so a reloaded model scores identically.
        bank = np.asarray(self._project(emb), dtype=np.float16).astype(np.float32)
        self.attacks = np.ascontiguousarray(bank[y == 1])
        self.benign = np.ascontiguousarray(bank[y == 0])
        none = np.zeros(0, dtype=np.uint64)
        self.attack_keys = none if keys is None else np.asarray(keys[y == 1], dtype=np.uint64)
        self.benign_keys = none if keys is None else np.asarray(keys[y == 0], dtype=np.uint64)
        self._where = None
        return self

    def _project(self, emb: np.ndarray) -> np.ndarray:
        """``emb`` in the bank's directions, each row back on the unit sphere (cosine)."""
        q = np.asarray(emb, dtype=np.float32)
        if self.projection is None:
            return q
        q = q @ self.projection
        norms = np.linalg.norm(q, axis=1, keepdims=True)
        return np.asarray(q / np.where(norms > 0, norms, 1.0), dtype=np.float32)

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
        q = self._project(emb)
        out = np.zeros((len(q), 4), dtype=np.float64)
        banks = (self.attacks, self.benign)
        # One request is a matrix-vector product per bank, on one BLAS thread: it
        # takes ~0.4 ms, but a second thread on a busy 2-core machine waits for a
        # time slice and turns it into ~7 ms. One limit covers both banks.
        one = len(q) == 1
        with blas_single_threaded() if one else nullcontext():
            for j, bank in enumerate(banks):
                if not len(bank) or not len(q):
                    continue
                k = min(self.k, len(bank))
                own = self._self_matches(keys, j)
                # Query blocks bound the similarity block's memory: 256 queries against
                # a bank of 25,000 entries is 25 MB, plus as much again for the partition.
                for start in range(0, len(q), _BLOCK):
                    s = (bank @ q[0])[None, :] if one else q[start : start + _BLOCK] @ bank.T
                    for r, rows in own:
                        if start <= r < start + _BLOCK:
                            s[r - start, rows] = -1.0  # the lowest cosine: never a neighbour
                    top = _largest(s, k)
                    out[start : start + _BLOCK, 2 * j] = top[:, -1]
                    out[start : start + _BLOCK, 2 * j + 1] = top.mean(axis=1)
        return out

    def nearest(self, x: np.ndarray | Keyed, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """The ``k`` nearest entries of each bank, for each row: ``[(attacks), (benign)]``.

        Each pair is ``(similarity, text key)``, both of shape ``(n, k')`` with
        ``k' = min(k, bank size)``, nearest first. Unlike :meth:`similarities`,
        a text's own entry is kept: a request the model was trained on shows
        the row it was trained as.
        """
        q = self._project(_split_keyed(x)[0])
        out = []
        for bank, keys in ((self.attacks, self.attack_keys), (self.benign, self.benign_keys)):
            kk = min(int(k), len(bank))
            sims = np.zeros((len(q), kk), dtype=np.float32)
            where = np.zeros((len(q), kk), dtype=np.int64)
            # Query blocks bound the similarity block's memory, as in :meth:`similarities`.
            for start in range(0, len(q) if kk else 0, _BLOCK):
                s = q[start : start + _BLOCK] @ bank.T
                top = np.sort(np.argpartition(-s, kk - 1, axis=1)[:, :kk], axis=1)
                # Nearest first; equal similarities in bank order, as a stable sort gives.
                rank = np.argsort(-np.take_along_axis(s, top, 1), axis=1, kind="stable")
                order = np.take_along_axis(top, rank, 1)
                where[start : start + _BLOCK] = order
                sims[start : start + _BLOCK] = np.take_along_axis(s, order, axis=1)
            out.append((sims, keys[where] if len(keys) else np.zeros(where.shape, np.uint64)))
        return out

    def meta_x(self, x: np.ndarray | Keyed) -> np.ndarray:
        return self.similarities(x)

    def decision_x(self, x: np.ndarray | Keyed) -> np.ndarray:
        return self.decision_from_meta(self.similarities(x))

    def decision_from_meta(self, meta: np.ndarray) -> np.ndarray:
        # Nearest attack minus nearest benign similarity.
        return np.asarray(meta[:, 0] - meta[:, 2])

    def fitted_state(self) -> dict[str, Any]:
        # float16 halves the bank on disk; cosine similarities move by < 1e-3.
        return {
            "attacks": self.attacks.astype(np.float16),
            "benign": self.benign.astype(np.float16),
            "attack_keys": self.attack_keys,
            "benign_keys": self.benign_keys,
        } | ({} if self.projection is None else {"projection": self.projection})

    def restore_fitted(self, state: Mapping[str, Any]) -> None:
        self.attacks = np.ascontiguousarray(state["attacks"], dtype=np.float32)
        self.benign = np.ascontiguousarray(state["benign"], dtype=np.float32)
        self.attack_keys = np.asarray(state["attack_keys"], dtype=np.uint64)
        self.benign_keys = np.asarray(state["benign_keys"], dtype=np.uint64)
        projection = state.get("projection")
        self.projection = None if projection is None else np.asarray(projection, np.float32)
        # A model saved before the setting existed searched every dimension.
        self.dims = 0 if self.projection is None else self.projection.shape[1]
        self._where = None
