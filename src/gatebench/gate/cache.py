"""On-disk cache of per-text vectors (embeddings, features), keyed by text hash.

One evaluation fits ten fresh detectors (two passes of five folds) on
overlapping rows, in up to two worker processes. Each fold looks its texts up
here first and computes only the missing ones, so a text is embedded about
once per run instead of ten times.

Layout: ``<folder>/<namespace>/<shard>.npz``, each shard holding ``keys``
(hex digests) and ``values`` (float32 rows). Shards are written to a
temporary name and renamed, so a concurrent reader never sees half a file;
two processes filling the cache at once can at worst compute the same rows
twice. Plain arrays, loaded with ``allow_pickle=False``.

Every call that computes rows adds a shard, and a process reads every shard
when it first looks a text up, so a cache that many runs, evaluations and
scored batches have filled costs a fresh process seconds of opening small
files. A reader that finds more than :data:`COMPACT_AT` shards writes the
rows it read as one shard, then removes the shards it merged. A reader
that finds a shard gone (merged by another process after it listed the
folder) lists the folder again: the merged shard was written before any
shard it holds was removed, so no row is ever missed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from gatebench.text import text_hash

__all__ = ["DEFAULT_CACHE_DIR", "VectorCache"]

#: Default cache folder, relative to the working directory.
DEFAULT_CACHE_DIR = Path(".cache/gatebench/embeddings")
#: A reader that finds more shards than this merges the ones it read into one.
COMPACT_AT = 64


class VectorCache:
    """Rows of float32 keyed by :func:`gatebench.text.text_hash` of the text.

    Parameters
    ----------
    folder : path
        Root folder; created on first write.
    namespace : str
        Sub-folder separating what is cached (for example
        ``"static-1a2b3c"``); include a version or content key in it so a
        change of model never reads stale rows.

    Notes
    -----
    The key is the hash of the *normalised* text (NFKC, case-folded,
    whitespace collapsed), so only use this cache for representations that
    are themselves invariant to that normalisation, or accept that two texts
    differing only in case share a row. The static embedding and the
    handcrafted features are not fully invariant, so :class:`Gate` keys them
    with :meth:`key` over the raw text instead.
    """

    def __init__(self, folder: Path | str, namespace: str) -> None:
        self.dir = Path(folder) / namespace
        self._rows: dict[str, np.ndarray] = {}
        self._seen: set[str] = set()

    @staticmethod
    def key(text: str, *, raw: bool = True) -> str:
        """Cache key of ``text``: its text hash, made exact for ``raw`` keys.

        ``raw`` keys prefix the normalised hash with a hash of the exact
        string, so texts that normalise alike but differ (case, Unicode
        form) keep separate rows.
        """
        if not raw:
            return text_hash(text)
        exact = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        return f"{text_hash(text)[:48]}{exact}"

    def _refresh(self) -> None:
        if not self.dir.is_dir():
            return
        read: list[Path] = []
        # A second listing only when a shard vanished: another reader merged it.
        for _ in range(2):
            vanished = False
            for shard in sorted(self.dir.glob("*.npz")):
                if shard.name in self._seen:
                    continue
                try:
                    with np.load(shard, allow_pickle=False) as data:
                        keys, values = data["keys"], data["values"]
                except FileNotFoundError:
                    vanished = True
                    continue
                except (OSError, ValueError, KeyError):
                    self._seen.add(shard.name)
                    continue  # a foreign or damaged file: recompute rather than fail
                self._seen.add(shard.name)
                self._rows.update(zip(keys.tolist(), values, strict=True))
                read.append(shard)
            if not vanished:
                break
        if len(read) > COMPACT_AT:
            self._compact(read)

    def _compact(self, shards: list[Path]) -> None:
        """Write every row read as one shard, then remove ``shards``, which it holds."""
        keys = list(self._rows)
        if not self._write(keys, np.stack([self._rows[k] for k in keys])):
            return
        for shard in shards:
            # Removed by another reader's merge, or a read-only folder: still correct.
            with contextlib.suppress(OSError):
                shard.unlink()

    def get_or_compute(
        self, texts: Sequence[str], compute: Callable[[list[str]], np.ndarray]
    ) -> np.ndarray:
        """Rows for ``texts``: cached ones read, missing ones computed and stored.

        Parameters
        ----------
        texts : sequence of str
        compute : callable
            Maps a list of texts to an array with one row per text.

        Returns
        -------
        ndarray of shape (len(texts), d), float32
        """
        keys = [self.key(t) for t in texts]
        self._refresh()
        missing = sorted({k: i for i, k in enumerate(keys) if k not in self._rows}.items())
        if missing:
            todo = [texts[i] for _, i in missing]
            values = np.asarray(compute(todo), dtype=np.float32)
            new_keys = [k for k, _ in missing]
            self._rows.update(zip(new_keys, values, strict=True))
            self._write(new_keys, values)
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._rows[k] for k in keys])

    def _write(self, keys: list[str], values: np.ndarray) -> bool:
        """Add a shard; False when the disk refused it (read-only or full)."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            name = f"{uuid.uuid4().hex}.npz"
            tmp = self.dir / f".{name}.{os.getpid()}.tmp"
            with tmp.open("wb") as fh:
                np.savez(fh, keys=np.asarray(keys), values=values)
            tmp.replace(self.dir / name)
            self._seen.add(name)
        except OSError:
            return False  # a read-only or full disk only costs recomputation next time
        return True
