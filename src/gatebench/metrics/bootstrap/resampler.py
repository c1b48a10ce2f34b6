"""How stratified resamples are drawn: row weights, blocks, seeds and their execution.

Rows are partitioned into cells (strata). Within each cell of ``n_c`` rows we
draw ``n_c`` rows uniformly with replacement, so every resample has exactly
the cell sizes of the data and the total is exactly ``N``. The headline uses
cells = source x label; per-dataset intervals use cells = label.

A resample is kept as per-row weights (how many times each row was drawn).
Per block of resamples: one bounded-integer draw per slot (cell by cell), then
a histogram of the draws built with a sparse CSR -> dense conversion (which,
unlike ``np.bincount``, releases the GIL, so blocks run in threads).

Each block has its own child seed (``SeedSequence.spawn``) and the block size
depends only on N, so the weights depend on the seed and the data, never on
the number of threads or on where a block was computed (a thread here, a
dask worker). What is computed from the weights lives elsewhere
(:mod:`gatebench.metrics.bootstrap.replicates`); this module only draws them.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from gatebench.errors import ConfigError
from gatebench.metrics._validate import (
    check_labels_scores,
    check_positive_int,
    check_sources,
    to_seed_sequence,
)

if TYPE_CHECKING:
    from gatebench.parallel import Executor

__all__ = [
    "Block",
    "StratifiedResampler",
    "map_blocks",
    "resample_counts",
    "resolve_n_jobs",
    "stratify",
]

#: Resamples per block are chosen so a block holds about this many row weights
#: (a few int32 arrays of this size per worker: ~100 MB).
_CHUNK_CELLS = 4_000_000

#: ``(first resample, stop, child seed)`` of one block of resamples.
Block = tuple[int, int, np.random.SeedSequence]


def _codes(values: ArrayLike, n: int, name: str) -> tuple[NDArray[np.intp], NDArray[Any]]:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.size != n:
        raise ConfigError(f"{name} must be 1-D with one entry per row ({n}), got shape {arr.shape}")
    uniq, inv = np.unique(arr, return_inverse=True)
    return inv.astype(np.intp), uniq


def resolve_n_jobs(n_jobs: int | None) -> int:
    """Threads to use: ``n_jobs``, or every core this process may run on when None or -1."""
    if n_jobs is None or n_jobs == -1:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - non-Linux
            return max(1, os.cpu_count() or 1)
    return check_positive_int(n_jobs, name="n_jobs")


def stratify(
    y: ArrayLike,
    scores: ArrayLike,
    sources: ArrayLike | None,
    strata: ArrayLike | None,
) -> tuple[NDArray[np.int8], NDArray[np.float64], NDArray[np.intp], list[str], NDArray[np.intp]]:
    """Checked rows and their cells: ``(y, scores, source codes, source names, cell codes)``.

    Without ``strata`` the cells are source x label (the headline's strata);
    without ``sources`` every row belongs to one source, ``"all"``.
    """
    yy, ss = check_labels_scores(y, scores)
    if yy.size == 0:
        raise ConfigError("y is empty; the bootstrap needs at least one row")
    if sources is None:
        src = np.zeros(yy.size, dtype=np.intp)
        names = ["all"]
    else:
        src_arr = check_sources(sources, yy.size)
        src, uniq = _codes(src_arr, yy.size, "sources")
        names = [str(u) for u in uniq]
    if strata is None:
        cells = src * 2 + yy  # source x label
    else:
        cells, _ = _codes(strata, yy.size, "strata")
    return yy, ss, src, names, cells


def _in_threads(task: Callable[[Block], Any], blocks: list[Block], n_jobs: int) -> list[Any]:
    workers = min(n_jobs, len(blocks))
    if workers <= 1:
        return [task(block) for block in blocks]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(task, blocks))


class StratifiedResampler:
    """Per-resample row weights, drawn cell by cell, block by block.

    Columns are the rows reordered by (cell, label, source, score), so each
    cell and each (cell, label, source) segment is a contiguous column range
    with ascending scores inside. Weights are indexed by column;
    ``order[column]`` is the row.
    """

    def __init__(
        self,
        yy: NDArray[np.int8],
        ss: NDArray[np.float64],
        src: NDArray[np.intp],
        n_sources: int,
        cells: NDArray[np.intp],
    ) -> None:
        n = yy.size
        if n >= 2**31 - 1:
            raise ConfigError(f"bootstrap supports fewer than 2**31 rows, got {n}")
        # Columns grouped by cell, then label, source, ascending score. When every
        # cell is label-pure (the headline), label goes first so all attack
        # columns are one contiguous block (a view, not a gather, in the AUC).
        cell_pos = np.bincount(cells, weights=yy)
        cell_n = np.bincount(cells)
        pure = bool(np.all((cell_pos == 0) | (cell_pos == cell_n)))
        order = np.lexsort((ss, src, cells, yy) if pure else (ss, src, yy, cells))
        self.n = n
        self.label_pure = pure
        self.order = order  # column -> row
        self.col_y = yy[order]
        self.col_s = ss[order]
        self.col_src = src[order]
        col_cell = cells[order]
        self.n_sources = n_sources

        cb = np.flatnonzero(np.r_[True, col_cell[1:] != col_cell[:-1], True])
        self.cell_bounds: list[tuple[int, int]] = list(itertools.pairwise(cb.tolist()))
        self._csr_parts: dict[int, tuple[NDArray[np.int32], NDArray[Any]]] = {}

    def weights(self, rng: np.random.Generator, bc: int) -> NDArray[np.int32]:
        """(bc, N) int32 draw counts per column; row sums per cell equal cell sizes."""
        n = self.n
        draws = np.empty((bc, n), dtype=np.int32)
        for a, b in self.cell_bounds:
            draws[:, a:b] = rng.integers(a, b, size=(bc, b - a), dtype=np.int32)
        if bc not in self._csr_parts:  # read-only after creation; a race only duplicates work
            itype = np.int64 if bc * n >= 2**31 else np.int32
            self._csr_parts[bc] = (
                np.ones(bc * n, dtype=np.int32),
                np.arange(0, bc * n + 1, n, dtype=itype),
            )
        ones, indptr = self._csr_parts[bc]
        # CSR -> dense adds duplicate entries: a histogram per row, GIL released.
        mat = sp.csr_array((ones, draws.ravel(), indptr), shape=(bc, n))
        return np.asarray(mat.toarray(), dtype=np.int32)

    def chunks(self, n_resamples: int) -> list[tuple[int, int]]:
        """``(start, stop)`` spans of the blocks; their size depends only on N."""
        bc = max(1, min(n_resamples, _CHUNK_CELLS // max(self.n, 1)))
        return [(i, min(i + bc, n_resamples)) for i in range(0, n_resamples, bc)]

    def run(
        self,
        n_resamples: int,
        seed: np.random.SeedSequence,
        n_jobs: int,
        fn: Any,
    ) -> list[Any]:
        """Apply ``fn(weights, start, stop)`` to every block of :meth:`blocks`, in threads."""
        blocks = self.blocks(n_resamples, seed)

        def task(block: Block) -> Any:
            return fn(self.block_weights(block), block[0], block[1])

        return _in_threads(task, blocks, n_jobs)

    def block_weights(self, block: Block) -> NDArray[np.int32]:
        """The resample weights of one block, drawn from its own seed."""
        a, b, child = block
        return self.weights(np.random.Generator(np.random.PCG64(child)), b - a)

    def blocks(self, n_resamples: int, seed: np.random.SeedSequence) -> list[Block]:
        """The ``(start, stop, seed)`` resample blocks, as data.

        Each block carries its own spawned child seed, so a block computed
        anywhere (a thread here, another process, a dask worker) draws the
        same weights.
        """
        spans = self.chunks(n_resamples)
        children = seed.spawn(len(spans))
        return [(a, b, c) for (a, b), c in zip(spans, children, strict=True)]


def map_blocks(
    engine: StratifiedResampler,
    n_resamples: int,
    seed: np.random.SeedSequence,
    block_fn: Callable[..., tuple[int, int, Any]],
    sink: Callable[[int, int, Any], None],
    *,
    n_jobs: int,
    executor: Executor | None = None,
) -> None:
    """Compute ``block_fn(block, engine=engine)`` for every block and hand it to ``sink``.

    ``block_fn`` returns ``(start, stop, value)`` and must be a module-level
    function, so it pickles. A dask ``executor`` ships the blocks to its
    cluster and calls ``sink`` here as they finish; otherwise the blocks are
    computed in ``n_jobs`` threads, each calling ``sink`` itself, so ``sink``
    must be safe to call from threads for disjoint blocks.
    """
    blocks = engine.blocks(n_resamples, seed)
    if executor is not None and executor.is_dask:
        for a, z, value in executor.map(block_fn, blocks, shared={"engine": engine}):
            sink(a, z, value)
    else:
        _in_threads(lambda block: sink(*block_fn(block, engine=engine)), blocks, n_jobs)


def resample_counts(
    y: ArrayLike,
    scores: ArrayLike,
    sources: ArrayLike,
    *,
    seed: int | np.random.SeedSequence | np.random.Generator,
    strata: ArrayLike | None = None,
    n_resamples: int = 10_000,
) -> NDArray[np.int32]:
    """Row draw counts of each stratified resample, shape (n_resamples, N).

    Entry ``[b, i]`` is how many times row ``i`` was drawn in resample ``b``.
    Called with the same arguments as
    :func:`~gatebench.metrics.bootstrap.bootstrap_headline` it returns exactly
    the weights behind that call's replicates (same code, blocks and seeds),
    so the headline can be audited row by row. Holds ``B x N`` int32 values:
    mind the memory.

    Examples
    --------
    >>> w = resample_counts([0, 0, 1, 1, 1], [0.1, 0.2, 0.3, 0.4, 0.5], ["a"] * 5,
    ...                     n_resamples=3, seed=0)
    >>> w[:, :2].sum(axis=1).tolist(), w[:, 2:].sum(axis=1).tolist()
    ([2, 2, 2], [3, 3, 3])
    """
    b = check_positive_int(n_resamples, name="n_resamples")
    yy, ss, src, names, cells = stratify(y, scores, sources, strata)
    eng = StratifiedResampler(yy, ss, src, len(names), cells)
    out = np.empty((b, eng.n), dtype=np.int32)
    inverse = np.empty(eng.n, dtype=np.intp)
    inverse[eng.order] = np.arange(eng.n)

    def fill(w: NDArray[np.int32], a: int, z: int) -> None:
        out[a:z] = w[:, inverse]

    eng.run(b, to_seed_sequence(seed), 1, fill)
    return out
