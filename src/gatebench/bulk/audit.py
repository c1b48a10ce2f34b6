"""Bulk audit: scores plus near-duplicate clusters and their score distributions.

Clustering a file in partitions gives exactly the clusters
:func:`gatebench.split.near_duplicate_clusters` gives on the whole file:

1. Workers compute, per partition, the ``text_hash`` of every row and the
   MinHash signature of each distinct normalised text (the project's
   :func:`~gatebench.split._minhash.signatures`).
2. The driver keeps a table ``text_hash → first signature row`` across
   partitions, so exact duplicates anywhere in the file share one signature
   row (as the whole-file routine collapses them), and appends each new
   signature to a file on disk (``num_perm`` × 4 bytes per distinct text).
3. One banding pass over that memory-mapped matrix with the project's
   :func:`~gatebench.split._minhash.cluster_signatures` proposes candidate
   pairs within *and* across partitions (every band bucket spans the whole
   file), verifies them, and labels the connected components.

Because steps 2-3 see the same distinct texts in the same order as the
whole-file routine, labels are identical, numbered by first appearance.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.typing import NDArray

from gatebench.bulk.score import PartitionResult, run_bulk, write_summary
from gatebench.conversation import ScanPolicy
from gatebench.parallel import Executor
from gatebench.seeding import child_seed
from gatebench.split._graph import canonical_labels
from gatebench.split._minhash import cluster_signatures
from gatebench.split.groups import LSHParams

__all__ = ["CLUSTER_COLUMNS", "audit_file", "lsh_params_for"]

#: Columns of ``clusters.parquet`` (one row per cluster of two or more rows).
CLUSTER_COLUMNS = (
    "cluster",
    "size",
    "distinct_texts",
    "first_row",
    "first_id",
    "score_mean",
    "score_min",
    "score_max",
    "score_std",
    "flagged",
    "flagged_share",
    "mixed_decisions",
)
_TOP = 10
_CLUSTER_SCHEMA = pa.schema(
    [
        ("cluster", pa.int64()),
        ("size", pa.int64()),
        ("distinct_texts", pa.int64()),
        ("first_row", pa.int64()),
        ("first_id", pa.string()),
        ("score_mean", pa.float64()),
        ("score_min", pa.float64()),
        ("score_max", pa.float64()),
        ("score_std", pa.float64()),
        ("flagged", pa.int64()),
        ("flagged_share", pa.float64()),
        ("mixed_decisions", pa.bool_()),
    ]
)


def lsh_params_for(seed: int) -> LSHParams:
    """The LSH settings ``gatebench run`` uses for root seed ``seed``."""
    return LSHParams(seed=child_seed(seed, "minhash"))


class _Collector:
    """Driver-side state: distinct-text table, signature file, per-row arrays."""

    def __init__(self, sig_path: Path, num_perm: int) -> None:
        self.sig_path = sig_path
        self.num_perm = num_perm
        self._fh: BinaryIO = sig_path.open("wb")
        # 128-bit prefix of the SHA-256 of the normalised text -> distinct-text id.
        self._index: dict[bytes, int] = {}
        self._n_distinct = 0
        self.codes: list[NDArray[np.int64]] = []
        self.scores: list[NDArray[np.float64]] = []
        self.flagged: list[NDArray[np.int8]] = []

    def __call__(self, result: PartitionResult) -> None:
        index = self._index
        sig, sig_hashes = result.signatures, result.signature_hashes
        if sig is None or sig_hashes is None:  # pragma: no cover - run_bulk passes lsh
            raise RuntimeError("audit partitions must carry signatures")
        new = np.zeros(len(sig_hashes), dtype=bool)
        for j, h in enumerate(sig_hashes):
            key = bytes.fromhex(h[:32])
            if key not in index:
                index[key] = len(index)
                new[j] = True
        if new.any():
            self._fh.write(np.ascontiguousarray(sig[new], dtype=np.uint32).tobytes())
        table = result.table
        self.codes.append(
            np.fromiter(
                (
                    -1 if h is None else index[bytes.fromhex(h[:32])]
                    for h in table.column("text_hash").to_pylist()
                ),
                dtype=np.int64,
                count=table.num_rows,
            )
        )
        self.scores.append(table.column("score").to_numpy(zero_copy_only=False).astype(float))
        flags = table.column("flagged")
        self.flagged.append(
            np.where(
                flags.is_null().to_numpy(zero_copy_only=False),
                -1,
                flags.fill_null(False).to_numpy(zero_copy_only=False),
            ).astype(np.int8)
        )

    @property
    def n_distinct(self) -> int:
        """Distinct texts seen (signature rows written)."""
        return self._n_distinct if self._fh.closed else len(self._index)

    def close(self) -> None:
        """Close the signature file and free the hash table before banding."""
        self._n_distinct = len(self._index)
        self._fh.close()
        self._index.clear()


def _cluster(
    collector: _Collector, codes: NDArray[np.int64], params: LSHParams
) -> tuple[NDArray[np.int64], dict[str, int]]:
    """Cluster label per row (-1 for rejected rows) and LSH pass counters."""
    collector.close()
    n = collector.n_distinct
    labels = np.full(codes.size, -1, dtype=np.int64)
    if n == 0:
        return labels, {"distinct_texts": 0, "candidate_pairs": 0, "similar_pairs": 0}
    sig = np.memmap(collector.sig_path, dtype=np.uint32, mode="r", shape=(n, params.num_perm))
    found = cluster_signatures(sig, num_bands=params.num_bands, threshold=params.threshold)
    del sig
    ok = codes >= 0
    labels[ok] = canonical_labels(found.labels[codes[ok]])
    return labels, {
        "distinct_texts": n,
        "candidate_pairs": found.n_candidate_pairs,
        "similar_pairs": found.n_similar_pairs,
    }


def _cluster_table(
    labels: NDArray[np.int64],
    codes: NDArray[np.int64],
    scores: NDArray[np.float64],
    flagged: NDArray[np.int8],
    scored: bool,
) -> pd.DataFrame:
    """Score distribution of every cluster with at least two rows, largest first."""
    rows = np.flatnonzero(labels >= 0)
    lab = labels[rows]
    sizes = np.bincount(lab) if lab.size else np.zeros(0, np.int64)
    keep = np.flatnonzero(sizes >= 2)
    if keep.size == 0:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in CLUSTER_COLUMNS})
    member = np.isin(lab, keep)
    rows, lab = rows[member], lab[member]
    order = np.argsort(lab, kind="stable")  # rows stay in input order within a cluster
    rows, lab = rows[order], lab[order]
    starts = np.flatnonzero(np.r_[True, lab[1:] != lab[:-1]])
    size = np.diff(np.r_[starts, lab.size])
    pair = np.unique(np.stack([lab, codes[rows]]), axis=1)
    distinct = np.bincount(pair[0], minlength=int(lab.max()) + 1)[lab[starts]]
    frame: dict[str, Any] = {
        "cluster": lab[starts],
        "size": size,
        "distinct_texts": distinct,
        "first_row": rows[starts],
        "first_id": None,
    }
    if scored:
        s, f = scores[rows], flagged[rows].astype(np.float64)
        mean = np.add.reduceat(s, starts) / size
        sq = np.add.reduceat((s - np.repeat(mean, size)) ** 2, starts) / size
        n_flagged = np.add.reduceat(f, starts).astype(np.int64)
        share = n_flagged / size
        frame.update(
            score_mean=mean,
            score_min=np.minimum.reduceat(s, starts),
            score_max=np.maximum.reduceat(s, starts),
            score_std=np.sqrt(sq),
            flagged=n_flagged,
            flagged_share=share,
            mixed_decisions=(share > 0) & (share < 1),
        )
    else:
        for col in CLUSTER_COLUMNS[5:]:
            frame[col] = None
    table = pd.DataFrame(frame, columns=list(CLUSTER_COLUMNS))
    return table.sort_values(
        ["size", "cluster"], ascending=[False, True], kind="stable"
    ).reset_index(drop=True)


def _ids_of_rows(scores_path: Path, wanted: NDArray[np.int64]) -> dict[int, str | None]:
    """Ids of a few rows, read back from the streamed output one batch at a time."""
    want = set(wanted.tolist())
    found: dict[int, str | None] = {}
    if not want:
        return found
    for batch in pq.ParquetFile(scores_path).iter_batches(columns=["row", "id"]):
        rows = batch.column("row").to_numpy()
        hit = np.flatnonzero(np.isin(rows, wanted))
        if hit.size:
            ids = batch.column("id").take(pa.array(hit)).to_pylist()
            found.update(zip(rows[hit].tolist(), ids, strict=True))
    return found


def audit_file(
    model_dir: Path | None,
    input_path: Path,
    out_dir: Path,
    *,
    text_field: str = "text",
    messages_field: str = "messages",
    id_field: str | None = None,
    position_field: str | None = None,
    assume_position: str = "user",
    batch_rows: int = 10_000,
    executor: Executor | None = None,
    policy: ScanPolicy | None = None,
    seed: int = 20260527,
    params: LSHParams | None = None,
) -> dict[str, Any]:
    """Score a file and cluster its near-duplicates; write the audit to ``out_dir``.

    Parameters
    ----------
    model_dir : Path or None
        Model directory; None clusters without scoring.
    input_path : Path
        ``.parquet`` or ``.jsonl`` input, streamed in partitions of ``batch_rows``.
    out_dir : Path
        Receives ``scores.parquet`` (as ``gatebench score`` writes it),
        ``row_clusters.parquet`` (``row, cluster, cluster_size``; null for
        rejected rows), ``clusters.parquet`` (clusters of two or more rows,
        largest first: size, distinct texts, first row/id, mean/min/max/std
        score, flagged count and share, whether decisions are mixed) and
        ``summary.json``.
    text_field, messages_field, id_field, position_field, assume_position, batch_rows,
    executor, policy
        As for :func:`gatebench.bulk.score.score_file`. A conversation row is
        clustered by its scanned messages as ``role: content`` lines
        (:func:`gatebench.bulk.conversations.render_scanned`), the text its
        ``text_hash`` is taken from.
    seed : int
        Root seed; the LSH seed is ``child_seed(seed, "minhash")``, as in
        ``gatebench run``, so the clusters match the run's grouping.
    params : LSHParams, optional
        Explicit LSH settings (overrides ``seed``).

    Returns
    -------
    dict
        The summary also written to ``out_dir/summary.json``.
    """
    t_start = time.perf_counter()
    params = params or lsh_params_for(seed)
    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    work = out_dir / ".audit-tmp"
    work.mkdir(exist_ok=True)
    try:
        collector = _Collector(work / "signatures.u32", params.num_perm)
        scores_path = out_dir / "scores.parquet"
        summary: dict[str, Any] = {
            "command": "audit",
            **run_bulk(
                model_dir,
                input_path,
                scores_path,
                text_field=text_field,
                messages_field=messages_field,
                id_field=id_field,
                position_field=position_field,
                assume_position=assume_position,
                batch_rows=batch_rows,
                executor=executor,
                policy=policy,
                lsh=params,
                on_result=collector,
            ),
        }
        t0 = time.perf_counter()
        codes = np.concatenate(collector.codes) if collector.codes else np.empty(0, np.int64)
        labels, lsh_counts = _cluster(collector, codes, params)
        cluster_s = time.perf_counter() - t0
    except BaseException:
        # A refused input leaves no half-made output folder behind to be mistaken for a result.
        if created:
            shutil.rmtree(out_dir, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    scores = np.concatenate(collector.scores) if collector.scores else np.empty(0)
    flagged = np.concatenate(collector.flagged) if collector.flagged else np.empty(0, np.int8)
    del collector
    ok = labels >= 0
    sizes = np.bincount(labels[ok]) if ok.any() else np.zeros(0, np.int64)
    row_size = np.where(ok, sizes[np.where(ok, labels, 0)] if sizes.size else 0, 0)
    pq.write_table(
        pa.table(
            {
                "row": np.arange(labels.size, dtype=np.int64),
                "cluster": pa.array(labels, pa.int64(), mask=~ok),
                "cluster_size": pa.array(row_size, pa.int64(), mask=~ok),
            }
        ),
        out_dir / "row_clusters.parquet",
    )
    table = _cluster_table(labels, codes, scores, flagged, model_dir is not None)
    ids = _ids_of_rows(scores_path, table["first_row"].to_numpy(dtype=np.int64))
    table["first_id"] = [ids.get(int(r)) for r in table["first_row"]]
    pq.write_table(
        pa.Table.from_pandas(table, schema=_CLUSTER_SCHEMA, preserve_index=False),
        out_dir / "clusters.parquet",
    )

    in_multi = int(table["size"].sum()) if len(table) else 0
    mixed = table[table["mixed_decisions"] == True]  # noqa: E712 (object column when unscored)
    summary.update(
        clustering={
            "lsh": params.as_dict(),
            "method": (
                "per-partition MinHash signatures, exact duplicates collapsed across "
                "partitions by text hash, one banding pass over all distinct texts; "
                "identical to gatebench.split.near_duplicate_clusters on the whole file"
            ),
            **lsh_counts,
            "clusters": int(sizes.size),
            "clusters_size_ge2": len(table),
            "rows_clustered": int(ok.sum()),
            "rows_in_clusters_size_ge2": in_multi,
            "share_rows_in_clusters_size_ge2": in_multi / int(ok.sum()) if ok.any() else None,
            "largest_cluster": int(sizes.max()) if sizes.size else 0,
            "clusters_with_mixed_decisions": len(mixed),
            "rows_in_clusters_with_mixed_decisions": int(mixed["size"].sum()) if len(mixed) else 0,
            "largest_clusters": [
                {k: _plain(v) for k, v in row.items()}
                for row in table.head(_TOP).to_dict(orient="records")
            ],
            "cluster_s": round(cluster_s, 3),
        },
        files={
            "scores": str(scores_path),
            "row_clusters": str(out_dir / "row_clusters.parquet"),
            "clusters": str(out_dir / "clusters.parquet"),
        },
    )
    summary["timing"]["total_s"] = round(time.perf_counter() - t_start, 3)
    write_summary(out_dir / "summary.json", summary)
    return summary


def _plain(value: Any) -> Any:
    """numpy scalars to Python for JSON."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and np.isnan(value):
        return None
    return value
