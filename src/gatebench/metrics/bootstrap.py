"""Stratified bootstrap confidence intervals (methodology §2.9).

Resampling scheme
-----------------
Rows are partitioned into cells (strata). Within each cell of ``n_c`` rows we
draw ``n_c`` rows uniformly with replacement, so every resample has exactly
the cell sizes of the data and the total is exactly ``N``. The headline uses
cells = source x label; per-dataset intervals use cells = label.

Interval
--------
Percentile interval from the order statistics of the ``B`` replicates
``theta*_(1) <= ... <= theta*_(B)`` (1-based ranks):

    CI_level = [theta*_(ceil(q B)), theta*_(floor((1 - q) B))],   q = (1 - level) / 2

so for ``B = 10,000`` and ``level = 0.95`` the 250th and 9,750th values.
Replicates where a metric is undefined (NaN, e.g. precision of a resample in
which nothing is blocked) are dropped and counted in ``n_undefined``; the rule
is applied to the ``B'`` defined ones.

How it is fast
--------------
:func:`bootstrap_headline` turns each resample into per-row weights (how many
times each row was drawn) and derives every metric from the *same* weights,
so the CI twins are consistent. Per chunk of resamples: one bounded-integer
draw per slot (cell by cell), a histogram of the draws built with a sparse CSR
-> dense conversion (which, unlike ``np.bincount``, releases the GIL, so
chunks run in threads), then

* count metrics at each threshold: sums of weights over the rows above the
  threshold in each (cell, source, label) segment, whose rows are stored
  contiguously and sorted by score, so each sum is one slice;
* macro F1 and macro FPR: per-source F1 and FPR from those segment sums,
  averaged over the sources with attacks (F1) or with benign rows (FPR); both
  sets are fixed across resamples under source x label strata;
* AUC: rank-based with ties 1/2; the benign weights in global score order are
  cumulated once, read at every attack row's position, and dotted with the
  attack weights: O(N) per resample.

Each chunk has its own child seed (``SeedSequence.spawn``) and the chunk size
depends only on N, so results depend on the seed and the data, never on the
number of threads. :func:`dataset_intervals` and :func:`subsample_interval`
need counts only and draw them directly (binomial / multivariate
hypergeometric), which is exact in distribution.
"""

from __future__ import annotations

import itertools
import math
import os
import zlib
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from gatebench.errors import ConfigError
from gatebench.metrics._validate import (
    check_labels_scores,
    check_level,
    check_positive_int,
    check_sources,
    check_thresholds,
    to_seed_sequence,
)
from gatebench.metrics.frame import _check_primary, _infer_primary
from gatebench.metrics.scores import (
    count_metric,
    f1_score,
    fpr_rate,
    precision_score,
    recall_score,
)

if TYPE_CHECKING:
    from gatebench.parallel import Executor

__all__ = [
    "DEFAULT_LEVELS",
    "SMALL_N",
    "ConfidenceInterval",
    "DatasetInterval",
    "HeadlineBootstrap",
    "bootstrap_headline",
    "by_source_intervals",
    "dataset_intervals",
    "order_statistic_ranks",
    "percentile_interval",
    "resample_counts",
    "subsample_interval",
]

#: Nested interval levels of the per-dataset forest plot.
DEFAULT_LEVELS = (0.5, 0.8, 0.95, 0.99)
#: Datasets with fewer rows are flagged ``small_n``.
SMALL_N = 200
#: Resamples per chunk are chosen so a chunk holds about this many row weights
#: (a few int32 arrays of this size per worker: ~100 MB).
_CHUNK_CELLS = 4_000_000

COUNT_METRICS = ("f1", "precision", "recall", "fpr", "oda", "accuracy")


# --------------------------------------------------------------------------- intervals


def order_statistic_ranks(n_resamples: int, level: float = 0.95) -> tuple[int, int]:
    """1-based ranks of the percentile interval's endpoints among ``B`` sorted values.

    ``(ceil(q B), floor((1 - q) B))`` with ``q = (1 - level) / 2``. Products
    are rounded to 9 decimals first so that, e.g., ``0.025 * 10000`` is 250
    and not 250.00000000000003 (which would give 251). ``q B`` must be at
    least 1 (each tail holds at least one resample), else ConfigError.

    Examples
    --------
    >>> order_statistic_ranks(10_000, 0.95)
    (250, 9750)
    >>> order_statistic_ranks(40, 0.95)
    (1, 39)
    """
    b = check_positive_int(n_resamples, name="n_resamples")
    lvl = check_level(level)
    q = (1.0 - lvl) / 2.0
    if round(q * b, 9) < 1:
        raise ConfigError(
            f"n_resamples={b} is too small for a {lvl:g} percentile interval (each tail "
            f"needs at least one resample); use at least {math.ceil(round(1 / q, 9))} resamples"
        )
    lo = math.ceil(round(q * b, 9))
    hi = math.floor(round((1.0 - q) * b, 9))
    return lo, hi


def percentile_interval(replicates: ArrayLike, level: float = 0.95) -> tuple[float, float, int]:
    """Percentile interval by the order-statistic rule, ignoring NaN replicates.

    Returns
    -------
    low, high : float
        The ``ceil(qB')``-th and ``floor((1-q)B')``-th smallest defined values
        (1-based), ``B'`` = number of non-NaN replicates; NaN when ``B'`` is
        too small for the level (``q B' < 1``).
    n_undefined : int
        How many replicates were NaN.

    Examples
    --------
    >>> percentile_interval(np.arange(40.0, 0.0, -1.0), 0.95)
    (1.0, 39.0, 0)
    """
    r = np.asarray(replicates, dtype=np.float64).ravel()
    ok = ~np.isnan(r)
    n_undef = int(r.size - ok.sum())
    vals = np.sort(r[ok])
    lvl = check_level(level)
    if round((1.0 - lvl) / 2.0 * vals.size, 9) < 1:
        return float("nan"), float("nan"), n_undef
    lo, hi = order_statistic_ranks(int(vals.size), lvl)
    return float(vals[lo - 1]), float(vals[hi - 1]), n_undef


@dataclass(frozen=True, slots=True)
class ConfidenceInterval:
    """A point estimate with its bootstrap percentile interval.

    Attributes
    ----------
    estimate : float
        The metric on the original data.
    low, high : float
        Interval endpoints (order-statistic rule, see module docstring).
    level : float
        Nominal coverage, e.g. 0.95.
    n_resamples : int
        Replicates drawn (B).
    n_undefined : int
        Replicates where the metric was undefined and which were dropped.
    method : str
        ``"percentile"`` (stratified bootstrap) or ``"subsample"``.
    """

    estimate: float
    low: float
    high: float
    level: float
    n_resamples: int
    n_undefined: int = 0
    method: str = "percentile"

    def contains(self, value: float) -> bool:
        """True when ``value`` lies in [low, high] ("within noise", §2.9)."""
        return bool(self.low <= value <= self.high)

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for result.json."""
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "level": self.level,
            "n_resamples": self.n_resamples,
            "n_undefined": self.n_undefined,
            "method": self.method,
        }


def _ci(
    estimate: float, replicates: NDArray[np.float64], level: float, method: str = "percentile"
) -> ConfidenceInterval:
    lo, hi, n_undef = percentile_interval(replicates, level)
    return ConfidenceInterval(
        estimate=float(estimate),
        low=lo,
        high=hi,
        level=level,
        n_resamples=int(replicates.size),
        n_undefined=n_undef,
        method=method,
    )


# --------------------------------------------------------------------------- engine


def _codes(values: ArrayLike, n: int, name: str) -> tuple[NDArray[np.intp], NDArray[Any]]:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.size != n:
        raise ConfigError(f"{name} must be 1-D with one entry per row ({n}), got shape {arr.shape}")
    uniq, inv = np.unique(arr, return_inverse=True)
    return inv.astype(np.intp), uniq


def _resolve_n_jobs(n_jobs: int | None) -> int:
    if n_jobs is None or n_jobs == -1:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - non-Linux
            return max(1, os.cpu_count() or 1)
    return check_positive_int(n_jobs, name="n_jobs")


#: ``(first resample, stop, child seed)`` of one block of resamples.
Block = tuple[int, int, np.random.SeedSequence]


class _Resampler:
    """Per-resample row weights and the statistics derived from them.

    Columns are the rows reordered by (cell, label, source, score), so each
    cell and each (cell, label, source) segment is a contiguous column range
    with ascending scores inside.
    """

    def __init__(
        self,
        yy: NDArray[np.int8],
        ss: NDArray[np.float64],
        src: NDArray[np.intp],
        n_sources: int,
        cells: NDArray[np.intp],
        thresholds: NDArray[np.float64],
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
        self.order = order  # column -> row
        self.col_y = yy[order]
        self.col_s = ss[order]
        self.col_src = src[order]
        col_cell = cells[order]
        self.n_sources = n_sources
        self.thresholds = thresholds

        cb = np.flatnonzero(np.r_[True, col_cell[1:] != col_cell[:-1], True])
        self.cell_bounds: list[tuple[int, int]] = list(itertools.pairwise(cb.tolist()))

        key = (col_cell.astype(np.int64) * 2 + self.col_y) * max(n_sources, 1) + self.col_src
        sb = np.flatnonzero(np.r_[True, key[1:] != key[:-1], True])
        cell_sizes = {a: b - a for a, b in self.cell_bounds}
        self.segments: list[tuple[int, int, int, int, bool, list[int]]] = []
        for a, b in itertools.pairwise(sb.tolist()):
            s_scores = self.col_s[a:b]
            # first column (absolute) of the suffix blocked at each threshold
            cut = [a + int(np.searchsorted(s_scores, t, side="left")) for t in thresholds]
            whole_cell = cell_sizes.get(a) == b - a
            self.segments.append((a, b, int(self.col_src[a]), int(self.col_y[a]), whole_cell, cut))

        pos = self.col_y == 1
        self.pos_cols = np.flatnonzero(pos)
        neg_cols = np.flatnonzero(~pos)
        neg_order = np.argsort(self.col_s[neg_cols], kind="stable")
        self.neg_cols_asc = neg_cols[neg_order].astype(np.intp)
        neg_sorted = self.col_s[self.neg_cols_asc]
        pos_s = self.col_s[self.pos_cols]
        self.pos_lo = np.searchsorted(neg_sorted, pos_s, side="left").astype(np.intp)
        pos_hi = np.searchsorted(neg_sorted, pos_s, side="right").astype(np.intp)
        # Attack rows tied with benign rows: their tied pairs count 1/2.
        tied = np.flatnonzero(pos_hi != self.pos_lo)
        self.tied_cols = self.pos_cols[tied]
        self.tied_lo = self.pos_lo[tied]
        self.tied_hi = pos_hi[tied]
        # The AUC numerator is at most W_pos * W_neg: n_pos * n_neg when cells are
        # label-pure, at most N^2 / 4 otherwise. Below 2**31 int32 dots are exact.
        n_pos, n_neg = int(pos.sum()), int((~pos).sum())
        bound = n_pos * n_neg if pure else n * n // 4
        self.dot_dtype = np.int32 if bound < 2**31 else np.int64
        p = self.pos_cols
        self.pos_slice = (
            slice(int(p[0]), int(p[-1]) + 1) if p.size and p[-1] - p[0] + 1 == p.size else None
        )
        self.auc_defined = bool(self.pos_cols.size and self.neg_cols_asc.size)
        self._csr_parts: dict[int, tuple[NDArray[np.int32], NDArray[Any]]] = {}

    # -- weights -------------------------------------------------------------------

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

    # -- statistics ----------------------------------------------------------------

    def stats(self, w: NDArray[np.int32]) -> dict[str, NDArray[np.float64]]:
        """All headline replicates from weights ``w`` (rows = resamples)."""
        out: dict[str, NDArray[np.float64]] = {"auc": self._auc(w)}
        bc = w.shape[0]
        t_count = self.thresholds.size
        k = self.n_sources
        above = np.zeros((t_count, bc, k, 2), dtype=np.int64)  # [t, b, source, label]
        totals = np.zeros((bc, k, 2), dtype=np.int64)
        for a, b, s, lab, whole, cuts in self.segments:
            size = b - a
            if whole:
                total: Any = size
            else:
                total = _rowsum(w[:, a:b])
            totals[:, s, lab] += total
            for ti, c in enumerate(cuts):
                m = b - c  # columns blocked
                if m == 0:
                    continue
                if whole and m > size // 2:
                    # cheaper to sum the unblocked prefix of a fixed-size cell
                    above[ti, :, s, lab] += size - _rowsum(w[:, a:c])
                else:
                    above[ti, :, s, lab] += _rowsum(w[:, c:b])
        n_pos_s, n_neg_s = totals[:, :, 1], totals[:, :, 0]
        for ti in range(t_count):
            tp_s, fp_s = above[ti, :, :, 1], above[ti, :, :, 0]
            fn_s = n_pos_s - tp_s
            tp, fp = tp_s.sum(axis=1), fp_s.sum(axis=1)
            n_pos, n_neg = n_pos_s.sum(axis=1), n_neg_s.sum(axis=1)
            fn, tn = n_pos - tp, n_neg - fp
            out[f"tp@{ti}"] = tp.astype(np.float64)
            out[f"fp@{ti}"] = fp.astype(np.float64)
            out[f"f1@{ti}"] = np.asarray(f1_score(tp, fp, fn), dtype=np.float64)
            out[f"precision@{ti}"] = np.asarray(precision_score(tp, fp), dtype=np.float64)
            out[f"recall@{ti}"] = np.asarray(recall_score(tp, fn), dtype=np.float64)
            out[f"fpr@{ti}"] = np.asarray(fpr_rate(fp, tn), dtype=np.float64)
            f1_s = np.asarray(f1_score(tp_s, fp_s, fn_s), dtype=np.float64)
            out[f"macro_f1@{ti}"] = _nanmean_rows(f1_s)
            # A source without benign rows has no FPR (NaN) and drops out of the
            # mean, as it does from SourceMetricFrame.macro["fpr"].
            fpr_s = np.asarray(fpr_rate(fp_s, n_neg_s - fp_s), dtype=np.float64)
            out[f"macro_fpr@{ti}"] = _nanmean_rows(fpr_s)
        return out

    def _auc(self, w: NDArray[np.int32]) -> NDArray[np.float64]:
        bc = w.shape[0]
        if not self.auc_defined:
            return np.full(bc, np.nan)
        # cn[:, k] = weight of the k lowest-scoring benign rows
        wn = np.take(w, self.neg_cols_asc, axis=1)
        cn = np.zeros((bc, wn.shape[1] + 1), dtype=np.int32)
        np.cumsum(wn, axis=1, out=cn[:, 1:])
        wp = (
            w[:, self.pos_slice]
            if self.pos_slice is not None
            else np.take(w, self.pos_cols, axis=1)
        )
        below = np.take(cn, self.pos_lo, axis=1)
        dt = self.dot_dtype
        # 2 * sum_i wp_i * (benign below + tied benign / 2), kept in integers
        num2 = 2 * np.einsum("ij,ij->i", wp, below, dtype=dt).astype(np.float64)
        if self.tied_cols.size:
            # gather from w itself: np.take on the strided view wp would copy it first
            ties = np.take(cn, self.tied_hi, axis=1) - np.take(cn, self.tied_lo, axis=1)
            num2 += np.einsum("ij,ij->i", np.take(w, self.tied_cols, axis=1), ties, dtype=dt)
        w_pos = np.add.reduce(wp, axis=1, dtype=np.int32).astype(np.float64)
        w_neg = cn[:, -1].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where((w_pos > 0) & (w_neg > 0), num2 / (2.0 * w_pos * w_neg), np.nan)

    # -- driver --------------------------------------------------------------------

    def chunks(self, n_resamples: int) -> list[tuple[int, int]]:
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

        workers = min(n_jobs, len(blocks))
        if workers <= 1:
            return [task(block) for block in blocks]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(task, blocks))

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


def _headline_block(
    block: Block, *, engine: _Resampler
) -> tuple[int, int, dict[str, NDArray[np.float64]]]:
    """Statistics of one resample block: the unit a cluster backend ships to a worker."""
    return block[0], block[1], engine.stats(engine.block_weights(block))


def _rowsum(x: NDArray[np.int32]) -> NDArray[np.int32]:
    # int32 accumulation is exact (a resample has fewer than 2**31 rows) and SIMD-fast.
    return np.add.reduce(x, axis=1, dtype=np.int32)


def _nanmean_rows(x: NDArray[np.float64]) -> NDArray[np.float64]:
    ok = ~np.isnan(x)
    cnt = ok.sum(axis=1)
    tot = np.where(ok, x, 0.0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)


def _prepare(
    y: ArrayLike,
    scores: ArrayLike,
    sources: ArrayLike | None,
    strata: ArrayLike | None,
    thresholds: NDArray[np.float64],
) -> tuple[_Resampler, list[str]]:
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
    return _Resampler(yy, ss, src, len(names), cells, thresholds), names


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
    Called with the same arguments as :func:`bootstrap_headline` it returns
    exactly the weights behind that call's replicates (same code, chunks and
    seeds), so the headline can be audited row by row. Holds ``B x N`` int32
    values: mind the memory.

    Examples
    --------
    >>> w = resample_counts([0, 0, 1, 1, 1], [0.1, 0.2, 0.3, 0.4, 0.5], ["a"] * 5,
    ...                     n_resamples=3, seed=0)
    >>> w[:, :2].sum(axis=1).tolist(), w[:, 2:].sum(axis=1).tolist()
    ([2, 2, 2], [3, 3, 3])
    """
    b = check_positive_int(n_resamples, name="n_resamples")
    eng, _ = _prepare(y, scores, sources, strata, np.array([0.5]))
    out = np.empty((b, eng.n), dtype=np.int32)
    inverse = np.empty(eng.n, dtype=np.intp)
    inverse[eng.order] = np.arange(eng.n)

    def fill(w: NDArray[np.int32], a: int, z: int) -> None:
        out[a:z] = w[:, inverse]

    eng.run(b, to_seed_sequence(seed), 1, fill)
    return out


# --------------------------------------------------------------------------- headline


@dataclass(frozen=True, eq=False)
class HeadlineBootstrap:
    """Headline CIs, all from the same stratified resamples.

    Attributes
    ----------
    thresholds : tuple of float
        The thresholds the count metrics were evaluated at.
    auc : ConfidenceInterval
        Pooled ROC AUC.
    at : dict of float -> dict of str -> ConfidenceInterval
        Per threshold: ``f1``, ``precision``, ``recall``, ``fpr`` (micro),
        ``macro_f1`` and ``macro_fpr``.
    level, n_resamples : float, int
        Interval level and B.
    strata : str
        ``"source x label"`` or ``"custom"``.
    n_cells : int
        Number of strata cells.
    macro_sources : tuple of str
        Sources averaged by the macro F1 point estimate (those with attacks).
    macro_fpr_sources : tuple of str
        Sources averaged by the macro FPR point estimate (those with benign rows).
    replicates : dict of str -> ndarray or None
        Raw replicates when asked for (``"auc"``, ``"f1@0"``, ...: the index
        after ``@`` is the threshold's position).
    """

    thresholds: tuple[float, ...]
    auc: ConfidenceInterval
    at: dict[float, dict[str, ConfidenceInterval]]
    level: float
    n_resamples: int
    strata: str
    n_cells: int
    macro_sources: tuple[str, ...]
    macro_fpr_sources: tuple[str, ...] = ()
    replicates: dict[str, NDArray[np.float64]] | None = field(default=None, repr=False)

    def to_frame(self) -> pd.DataFrame:
        """One row per (metric, threshold); AUC has threshold NaN."""
        rows = [{"metric": "auc", "threshold": float("nan"), **self.auc.as_dict()}]
        for t, cis in self.at.items():
            rows += [{"metric": m, "threshold": t, **ci.as_dict()} for m, ci in cis.items()]
        return pd.DataFrame(rows)


def bootstrap_headline(
    y: ArrayLike,
    scores: ArrayLike,
    sources: ArrayLike,
    *,
    thresholds: float | Sequence[float],
    seed: int | np.random.SeedSequence | np.random.Generator,
    strata: ArrayLike | None = None,
    n_resamples: int = 10_000,
    level: float = 0.95,
    n_jobs: int | None = None,
    return_replicates: bool = False,
    executor: Executor | None = None,
) -> HeadlineBootstrap:
    """Stratified-bootstrap CIs of every headline metric from one set of resamples.

    Parameters
    ----------
    y, scores, sources : array-like
        Labels (1 = attack), scores in [0, 1], source name per row.
    thresholds : float or sequence of float
        Operating thresholds (e.g. the FPR <= 1% point and the natural one);
        micro F1/precision/recall/FPR and macro F1/FPR are computed at each.
    seed : int, SeedSequence or Generator
        Root of the resampling randomness (required: no global RNG).
    strata : array-like, optional
        Cell label per row. Default: source x label (§2.9 headline).
    n_resamples : int
        B, default 10,000.
    level : float
        Interval level, default 0.95.
    n_jobs : int, optional
        Threads; default all available cores. Does not change the result.
    return_replicates : bool
        Keep the raw replicate arrays on the result.
    executor : Executor, optional
        A dask executor computes the resample blocks on its cluster; any
        other (or none) uses threads here. Every block carries its own child
        seed, so the replicates are identical whichever computed them.

    Returns
    -------
    HeadlineBootstrap

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 300)
    >>> s = np.clip(0.3 * y + rng.random(300) * 0.7, 0, 1)
    >>> src = np.where(np.arange(300) < 150, "a", "b")
    >>> res = bootstrap_headline(y, s, src, thresholds=[0.5], seed=1, n_resamples=500)
    >>> ci = res.at[0.5]["f1"]
    >>> bool(ci.low <= ci.estimate <= ci.high), ci.n_resamples
    (True, 500)
    """
    t = check_thresholds(thresholds)
    b = check_positive_int(n_resamples, name="n_resamples")
    lvl = check_level(level)
    order_statistic_ranks(b, lvl)  # refuse a B too small for the level up front
    ss_seed = to_seed_sequence(seed)
    jobs = _resolve_n_jobs(n_jobs)
    eng, names = _prepare(y, scores, sources, strata, t)

    # The point estimate is the same computation with every row drawn once.
    ones = np.ones((1, eng.n), dtype=np.int32)
    point = {k: float(v[0]) for k, v in eng.stats(ones).items()}
    reps = {k: np.empty(b, dtype=np.float64) for k in point}

    def collect(w: NDArray[np.int32], a: int, z: int) -> None:
        for k, v in eng.stats(w).items():
            reps[k][a:z] = v  # chunks write disjoint slices: thread-safe

    if executor is not None and executor.is_dask:
        blocks = eng.blocks(b, ss_seed)
        for a, z, stats in executor.map(_headline_block, blocks, shared={"engine": eng}):
            for k, v in stats.items():
                reps[k][a:z] = v
    else:
        eng.run(b, ss_seed, jobs, collect)

    at: dict[float, dict[str, ConfidenceInterval]] = {}
    for ti, thr in enumerate(t.tolist()):
        at[thr] = {
            m: _ci(point[f"{m}@{ti}"], reps[f"{m}@{ti}"], lvl)
            for m in ("f1", "precision", "recall", "fpr", "macro_f1", "macro_fpr")
        }
    has_pos = np.bincount(eng.col_src[eng.col_y == 1], minlength=len(names)) > 0
    has_neg = np.bincount(eng.col_src[eng.col_y == 0], minlength=len(names)) > 0
    return HeadlineBootstrap(
        thresholds=tuple(t.tolist()),
        auc=_ci(point["auc"], reps["auc"], lvl),
        at=at,
        level=lvl,
        n_resamples=b,
        strata="source x label" if strata is None else "custom",
        n_cells=len(eng.cell_bounds),
        macro_sources=tuple(n for n, h in zip(names, has_pos, strict=True) if h),
        macro_fpr_sources=tuple(n for n, h in zip(names, has_neg, strict=True) if h),
        replicates=reps if return_replicates else None,
    )


# --------------------------------------------------------------------------- per dataset


_metric_from_counts = count_metric


def _check_count_metric(metric: Any) -> str:
    if metric not in COUNT_METRICS:
        raise ConfigError(
            f"metric must be one of {', '.join(COUNT_METRICS)}, got {metric!r}"
            + ("; AUC needs row identity, use bootstrap_headline" if metric == "auc" else "")
        )
    return str(metric)


@dataclass(frozen=True, slots=True)
class DatasetInterval:
    """A per-dataset metric with nested percentile intervals (forest plot).

    Attributes
    ----------
    metric : str
        The metric (usually the dataset's primary metric).
    estimate : float
        Value on the dataset at the global threshold.
    intervals : dict of float -> (float, float)
        Level -> (low, high), e.g. 0.5, 0.8, 0.95, 0.99.
    n, n_pos, n_neg : int
        Rows, attacks, benign rows.
    small_n : bool
        ``n < small_n`` threshold (default 200): the CI is correspondingly wide.
    n_resamples, n_undefined : int
        B and the replicates where the metric was undefined.
    """

    metric: str
    estimate: float
    intervals: dict[float, tuple[float, float]]
    n: int
    n_pos: int
    n_neg: int
    small_n: bool
    n_resamples: int
    n_undefined: int

    def ci(self, level: float = 0.95) -> ConfidenceInterval:
        """The interval at ``level`` as a :class:`ConfidenceInterval`."""
        if level not in self.intervals:
            raise ConfigError(
                f"level {level!r} was not computed; available: {sorted(self.intervals)}"
            )
        lo, hi = self.intervals[level]
        return ConfidenceInterval(self.estimate, lo, hi, level, self.n_resamples, self.n_undefined)


def dataset_intervals(
    y: ArrayLike,
    scores: ArrayLike,
    *,
    threshold: float,
    metric: str,
    seed: int | np.random.SeedSequence | np.random.Generator,
    levels: Sequence[float] = DEFAULT_LEVELS,
    n_resamples: int = 10_000,
    small_n: int = SMALL_N,
) -> DatasetInterval:
    """Label-stratified bootstrap intervals of one dataset's count metric.

    With strata = label, a resample's TP is the number of its ``n_pos``
    attack draws that land on blocked attacks: exactly
    ``Binomial(n_pos, TP/n_pos)``; likewise ``FP ~ Binomial(n_neg, FP/n_neg)``,
    independent. Drawing those two counts is exact in distribution and needs
    no row indices.

    Examples
    --------
    >>> d = dataset_intervals([1] * 150 + [0] * 50, [0.9] * 120 + [0.1] * 80,
    ...                       threshold=0.5, metric="recall", seed=0, n_resamples=2000)
    >>> d.estimate, d.small_n, sorted(d.intervals)
    (0.8, False, [0.5, 0.8, 0.95, 0.99])
    """
    yy, ss = check_labels_scores(y, scores)
    m = _check_count_metric(metric)
    t = check_thresholds(threshold)
    if t.size != 1:
        raise ConfigError(f"threshold must be a single number, got {t.size} values")
    b = check_positive_int(n_resamples, name="n_resamples")
    lvls = [check_level(lv, name="levels") for lv in levels]
    for lv in lvls:
        order_statistic_ranks(b, lv)
    rng = np.random.Generator(np.random.PCG64(to_seed_sequence(seed)))
    blocked = ss >= t[0]
    n_pos = int(yy.sum())
    n_neg = int(yy.size - n_pos)
    tp = int(np.count_nonzero(blocked & (yy == 1)))
    fp = int(np.count_nonzero(blocked & (yy == 0)))
    tp_b = rng.binomial(n_pos, tp / n_pos, size=b) if n_pos else np.zeros(b, np.int64)
    fp_b = rng.binomial(n_neg, fp / n_neg, size=b) if n_neg else np.zeros(b, np.int64)
    reps = np.asarray(
        _metric_from_counts(m, tp_b, fp_b, n_neg - fp_b, n_pos - tp_b), dtype=np.float64
    )
    est = float(_metric_from_counts(m, tp, fp, n_neg - fp, n_pos - tp))
    intervals: dict[float, tuple[float, float]] = {}
    n_undef = 0
    for lv in lvls:
        lo, hi, n_undef = percentile_interval(reps, lv)
        intervals[lv] = (lo, hi)
    return DatasetInterval(
        metric=m,
        estimate=est,
        intervals=intervals,
        n=int(yy.size),
        n_pos=n_pos,
        n_neg=n_neg,
        small_n=yy.size < small_n,
        n_resamples=b,
        n_undefined=n_undef,
    )


def by_source_intervals(
    y: ArrayLike,
    scores: ArrayLike,
    sources: ArrayLike,
    *,
    threshold: float,
    seed: int | np.random.SeedSequence | np.random.Generator,
    primary_metrics: Mapping[str, str] | None = None,
    levels: Sequence[float] = DEFAULT_LEVELS,
    n_resamples: int = 10_000,
    small_n: int = SMALL_N,
) -> pd.DataFrame:
    """:func:`dataset_intervals` of each source's primary metric, one row per source.

    Each source draws from a child of ``seed`` keyed by the source's *name*
    (CRC-32 in the spawn key), so adding or removing a source never changes
    another source's interval. The table is what the forest plot draws.

    Returns
    -------
    pandas.DataFrame
        Index ``source``; columns ``metric, estimate, n, n_pos, n_neg, small_n,
        n_undefined`` and ``low_<pct>``/``high_<pct>`` per level (``low_95``...).
    """
    yy, ss = check_labels_scores(y, scores)
    src = check_sources(sources, yy.size)
    names = sorted(set(src.tolist()))
    root = to_seed_sequence(seed)
    rows = []
    for name in names:
        child = np.random.SeedSequence(
            entropy=root.entropy, spawn_key=(*root.spawn_key, zlib.crc32(name.encode()))
        )
        mask = src == name
        n_pos = int(yy[mask].sum())
        if primary_metrics is None:
            metric = _infer_primary(n_pos, int(mask.sum()) - n_pos)
        elif name not in primary_metrics:
            raise ConfigError(
                f"primary_metrics has no entry for source {name!r}; give every source one"
            )
        else:
            metric = _check_primary(primary_metrics[name], where=f"primary_metrics[{name!r}]")
        d = dataset_intervals(
            yy[mask],
            ss[mask],
            threshold=threshold,
            metric=metric.value,
            seed=child,
            levels=levels,
            n_resamples=n_resamples,
            small_n=small_n,
        )
        row: dict[str, Any] = {
            "source": name,
            "metric": d.metric,
            "estimate": d.estimate,
            "n": d.n,
            "n_pos": d.n_pos,
            "n_neg": d.n_neg,
            "small_n": d.small_n,
            "n_undefined": d.n_undefined,
        }
        for lv, (lo, hi) in d.intervals.items():
            pct = f"{lv * 100:g}"
            row[f"low_{pct}"] = lo
            row[f"high_{pct}"] = hi
        rows.append(row)
    return pd.DataFrame(rows).set_index("source")


# --------------------------------------------------------------------------- subsampling


def subsample_interval(
    y: ArrayLike,
    scores: ArrayLike,
    *,
    threshold: float,
    n: int,
    metric: str,
    seed: int | np.random.SeedSequence | np.random.Generator,
    n_resamples: int = 10_000,
    level: float = 0.95,
) -> ConfidenceInterval:
    """Sample-size-matched interval: the metric over subsamples of ``n`` rows.

    Draws ``n_resamples`` subsamples of size ``n`` *without* replacement (a
    competitor evaluated on ``n`` rows) and returns the percentile interval of
    the metric at the fixed ``threshold``. A subsample's confusion counts are
    exactly multivariate-hypergeometric over the four cells (TP, FN, FP, TN),
    so they are drawn directly. The estimate is the full-data value. The
    threshold is not re-picked per subsample.

    Examples
    --------
    >>> y = [1] * 500 + [0] * 500
    >>> s = [0.9] * 400 + [0.2] * 100 + [0.1] * 490 + [0.8] * 10
    >>> ci = subsample_interval(y, s, threshold=0.5, n=100, metric="recall", seed=0)
    >>> ci.estimate, ci.low < 0.8 < ci.high, ci.method
    (0.8, True, 'subsample')
    """
    yy, ss = check_labels_scores(y, scores)
    m = _check_count_metric(metric)
    b = check_positive_int(n_resamples, name="n_resamples")
    lvl = check_level(level)
    order_statistic_ranks(b, lvl)
    size = check_positive_int(n, name="n")
    if size > yy.size:
        raise ConfigError(
            f"n={size} exceeds the {yy.size} rows available; "
            "a sample-size-matched interval needs n <= N"
        )
    t = check_thresholds(threshold)
    if t.size != 1:
        raise ConfigError(f"threshold must be a single number, got {t.size} values")
    rng = np.random.Generator(np.random.PCG64(to_seed_sequence(seed)))
    blocked = ss >= t[0]
    pos = yy == 1
    tp = int(np.count_nonzero(blocked & pos))
    fn = int(np.count_nonzero(~blocked & pos))
    fp = int(np.count_nonzero(blocked & ~pos))
    tn = int(yy.size - tp - fn - fp)
    draws = rng.multivariate_hypergeometric([tp, fn, fp, tn], size, size=b)
    reps = np.asarray(
        _metric_from_counts(m, draws[:, 0], draws[:, 2], draws[:, 3], draws[:, 1]),
        dtype=np.float64,
    )
    est = float(_metric_from_counts(m, tp, fp, tn, fn))
    return _ci(est, reps, lvl, method="subsample")
