"""Every headline metric of a block of resamples, from its row weights.

Every metric is derived from the *same* weights, so the CI twins are
consistent:

* count metrics at each threshold: sums of weights over the rows above the
  threshold in each (cell, source, label) segment, whose rows are stored
  contiguously and sorted by score, so each sum is one slice;
* macro F1 and macro FPR: per-source F1 and FPR from those segment sums,
  averaged over the sources with attacks (F1) or with benign rows (FPR); both
  sets are fixed across resamples under source x label strata;
* AUC: rank-based with ties 1/2; the benign weights in global score order are
  cumulated once, read at every attack row's position, and dotted with the
  attack weights: O(N) per resample.

The weights themselves are drawn by
:class:`~gatebench.metrics.bootstrap.resampler.StratifiedResampler`; this
module adds the column layout those sums need and the sums.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gatebench.metrics.bootstrap.resampler import Block, StratifiedResampler
from gatebench.metrics.scores import f1_score, fpr_rate, precision_score, recall_score

__all__ = ["HeadlineReplicates", "headline_block"]


class HeadlineReplicates(StratifiedResampler):
    """A stratified resampler that also computes the headline statistics of its weights.

    Parameters
    ----------
    yy, ss, src, n_sources, cells
        As for :class:`StratifiedResampler`.
    thresholds : ndarray
        The thresholds the count metrics are evaluated at.
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
        super().__init__(yy, ss, src, n_sources, cells)
        n = self.n
        self.thresholds = thresholds
        col_cell = cells[self.order]
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
        bound = n_pos * n_neg if self.label_pure else n * n // 4
        self.dot_dtype = np.int32 if bound < 2**31 else np.int64
        p = self.pos_cols
        self.pos_slice = (
            slice(int(p[0]), int(p[-1]) + 1) if p.size and p[-1] - p[0] + 1 == p.size else None
        )
        self.auc_defined = bool(self.pos_cols.size and self.neg_cols_asc.size)

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


def headline_block(
    block: Block, *, engine: HeadlineReplicates
) -> tuple[int, int, dict[str, NDArray[np.float64]]]:
    """Statistics of one resample block: the unit a cluster backend ships to a worker."""
    return block[0], block[1], engine.stats(engine.block_weights(block))


def _rowsum(x: NDArray[np.int32]) -> NDArray[np.int32]:
    # int32 accumulation is exact (a resample has fewer than 2**31 rows) and SIMD-fast.
    out: NDArray[np.int32] = np.add.reduce(x, axis=1, dtype=np.int32)
    return out


def _nanmean_rows(x: NDArray[np.float64]) -> NDArray[np.float64]:
    ok = ~np.isnan(x)
    cnt = ok.sum(axis=1)
    tot = np.where(ok, x, 0.0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)
