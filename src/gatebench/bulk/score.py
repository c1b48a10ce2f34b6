"""Bulk scoring: a model directory over a Parquet or JSONL file, streamed.

The driver reads the input one partition at a time, sends each partition to a
worker (this process, local processes or a dask cluster), and appends the
results to the output Parquet file in input order. Workers load the model
directory once per process. Long texts are cut as the service cuts them
(:func:`gatebench.chunking.chunk_spans`) and max-pooled, so a row gets the score
``gatebench serve`` would give it. A conversation row is scanned as the
service scans one (:mod:`gatebench.conversation`): the messages of the
policy's roles, cut into windows, plus one window across each border of
neighbouring same-role messages, and the maximum over them all; its output row
also names the message and role that drove the score. Each window reaches the
detector with its position, as in the service: a text row's own (its
position field; a user turn without one), a conversation window its message's
role. Every input row has one
output row; rows that cannot be scored (null, empty, invalid Unicode, a bad
conversation, a conversation with nothing to scan) keep their place with a
``rejected`` reason and are counted in the summary.
"""

from __future__ import annotations

import functools
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from gatebench.bulk._executor import gatebench_version, open_pool
from gatebench.bulk.conversations import (
    conversation_summary,
    count_plan,
    plan_conversation,
    render_scanned,
)
from gatebench.bulk.io import (
    OUTPUT_SCHEMA,
    REJECT_REASONS,
    Partition,
    PartitionReader,
    ResultWriter,
    file_digest,
    summary_path,
)
from gatebench.bulk.tally import MAX_REJECTED_LISTED, Tally, timed
from gatebench.chunking import chunk_spans
from gatebench.conversation import (
    DEFAULT_SCAN_ROLES,
    ScanPlan,
    ScanPolicy,
    pool_scan,
    window_positions,
)
from gatebench.detectors import check_scores, score_detector
from gatebench.modeldir import MANIFEST, LoadedModel, load_model
from gatebench.parallel import Executor
from gatebench.served import ServeSettings
from gatebench.split._minhash import signatures
from gatebench.split.groups import LSHParams
from gatebench.text import normalise_text, text_hash
from gatebench.types import POSITIONS

__all__ = ["PartitionResult", "process_partition", "run_bulk", "score_file"]

#: Windows per ``detector.score`` call inside a partition; bounds the
#: featuriser's memory whatever ``--batch-rows`` is. Scores do not depend on it.
SCORE_BATCH = 1024

_SERVE = ServeSettings()


@dataclass
class PartitionResult:
    """What a worker sends back for one partition.

    Attributes
    ----------
    index : int
        Partition number.
    table : pyarrow.Table
        Output rows in :data:`gatebench.bulk.io.OUTPUT_SCHEMA`.
    rejected : list of dict
        ``row``, ``line`` (JSONL), ``id`` and ``reason`` of each rejected row,
        and ``error`` (what is wrong) for a rejected conversation.
    windowed : int
        Texts longer than one window (scored as the max over windows).
    seconds : float
        Worker time for the partition (scoring, hashing, signatures).
    signatures : ndarray of uint32, optional
        MinHash signatures of the partition's distinct accepted texts, when
        near-duplicate signatures were requested.
    signature_hashes : list of str, optional
        ``text_hash`` of each signature row.
    conversations : Counter
        Counts over the partition's conversation rows: ``rows``, ``accepted``
        (parsed and planned), ``messages_scanned``, ``messages_skipped_role``,
        ``messages_skipped_empty``, ``ignored_parts``, ``windows`` and
        ``border_windows`` (of the accepted ones).
    positions : Counter
        Accepted text rows per position (``user``, ``tool``, ``document``).
    """

    index: int
    table: pa.Table
    rejected: list[dict[str, Any]]
    windowed: int
    seconds: float
    signatures: NDArray[np.uint32] | None = None
    signature_hashes: list[str] | None = None
    conversations: Counter[str] = field(default_factory=Counter)
    positions: Counter[str] = field(default_factory=Counter)


@functools.lru_cache(maxsize=4)
def _cached_model(model_dir: str, stamp: float) -> LoadedModel:
    """One load per worker process (``stamp`` = manifest mtime, so a rewrite reloads)."""
    del stamp
    return load_model(model_dir)


def _model(model_dir: str) -> LoadedModel:
    try:
        stamp = (Path(model_dir) / MANIFEST).stat().st_mtime
    except OSError:
        # load_model says what a model directory is and how to make one.
        return load_model(model_dir)
    return _cached_model(model_dir, stamp)


def _score_windows(
    model: LoadedModel, windows: list[str], positions: list[str], score_batch: int
) -> NDArray[np.float64]:
    """Every window's score, ``score_batch`` windows per ``detector.score`` call.

    ``positions`` reach a detector that reads them; all user turns are sent as
    no positions, so any detector scores plain traffic exactly as before.
    """
    det = model.detector
    placed = any(p != "user" for p in positions)
    raw = np.empty(len(windows), dtype=np.float64)
    for start in range(0, len(windows), score_batch):
        chunk = windows[start : start + score_batch]
        where = positions[start : start + score_batch] if placed else None
        scores = score_detector(det, chunk, where)
        raw[start : start + len(chunk)] = check_scores(det.name, scores, len(chunk))
    return raw


def process_partition(
    part: Partition,
    *,
    model_dir: str | None,
    lsh: LSHParams | None = None,
    score_batch: int = SCORE_BATCH,
    scan_roles: Sequence[str] = DEFAULT_SCAN_ROLES,
    span_adjacent: bool = True,
) -> PartitionResult:
    """Score one partition (and optionally compute its MinHash signatures).

    Parameters
    ----------
    part : Partition
        Rows to process.
    model_dir : str or None
        Model directory; None skips scoring (near-duplicate audit only).
    lsh : LSHParams, optional
        When given, also return signatures of the distinct accepted texts
        (of a conversation: its :func:`render_scanned` text).
    score_batch : int
        Windows per ``detector.score`` call.
    scan_roles, span_adjacent
        The :class:`~gatebench.conversation.ScanPolicy` for conversation rows,
        as plain values so that any worker can build it.

    Returns
    -------
    PartitionResult
    """
    t0 = time.perf_counter()
    n = len(part)
    reasons = part.reasons()
    errors: dict[int, str] = {}
    plans: dict[int, ScanPlan] = {}
    counts: Counter[str] = Counter()
    if part.conversations:
        policy = ScanPolicy(tuple(scan_roles), span_adjacent)
        counts["rows"] = len(part.conversations)
        for i, value in part.conversations.items():
            plan, reason, error = plan_conversation(value, policy, part.messages_field)
            if plan is None:
                reasons[i] = reason
                errors[i] = str(error)
            else:
                plans[i] = plan
                count_plan(plan, counts)
    ok = [i for i, r in enumerate(reasons) if r is None]
    row_positions = part.text_positions()
    placed: Counter[str] = Counter(row_positions[i] for i in ok if i not in plans)
    # What identifies each accepted row: its text, or its conversation's scanned messages.
    ok_texts = [render_scanned(plans[i]) if i in plans else part.texts[i] or "" for i in ok]
    hashes: list[str | None] = [None] * n
    ok_hashes = [text_hash(t) for t in ok_texts]
    for i, h in zip(ok, ok_hashes, strict=True):
        hashes[i] = h

    score = np.full(n, np.nan)
    n_chunks = np.zeros(n, dtype=np.int32)
    flagged: list[bool | None] = [None] * n
    message: list[int | None] = [None] * n
    role: list[str | None] = [None] * n
    windowed = 0
    if model_dir is not None and ok:
        model = _model(model_dir)
        windows: list[str] = []
        where: list[str] = []
        counts_per_row = np.empty(len(ok), dtype=np.int64)
        for j, i in enumerate(ok):
            if i in plans:
                texts = [w.text for w in plans[i].windows]
                where += window_positions(plans[i])
            else:
                text = ok_texts[j]
                spans = chunk_spans(text, _SERVE.chunk_chars, _SERVE.chunk_overlap)
                texts = [text[a:b] for a, b in spans]
                where += [row_positions[i]] * len(spans)
                windowed += int(len(spans) > 1)
            windows += texts
            counts_per_row[j] = len(texts)
        raw = _score_windows(model, windows, where, score_batch)
        starts = np.concatenate(([0], np.cumsum(counts_per_row)[:-1]))
        pooled = np.maximum.reduceat(raw, starts)
        score[ok] = pooled
        n_chunks[ok] = counts_per_row
        for j, i in enumerate(ok):
            flagged[i] = bool(pooled[j] >= model.threshold)
            if i in plans:
                a, m = int(starts[j]), int(counts_per_row[j])
                driver = pool_scan(plans[i], raw[a : a + m], ["single"] * m, None)["driver"]
                message[i], role[i] = driver["message"], driver["role"]
    scored = model_dir is not None
    valid = np.array([r is None for r in reasons], dtype=bool)
    unscored = ~valid if scored else np.ones(n, bool)
    table = pa.table(
        {
            "row": pa.array(np.arange(part.start_row, part.start_row + n, dtype=np.int64)),
            "id": pa.array(part.ids, pa.string()),
            "text_hash": pa.array(hashes, pa.string()),
            "score": pa.array(score, pa.float64(), mask=unscored),
            "flagged": pa.array(flagged, pa.bool_()),
            "n_chunks": pa.array(n_chunks, pa.int32(), mask=unscored),
            "message": pa.array(message, pa.int32()),
            "role": pa.array(role, pa.string()),
            "rejected": pa.array(reasons, pa.string()),
        },
        schema=OUTPUT_SCHEMA,
    )
    rejected = [
        {
            "row": part.start_row + i,
            **({"line": part.lines[i]} if part.lines is not None else {}),
            "id": part.ids[i],
            "reason": r,
            **({"error": errors[i]} if i in errors else {}),
        }
        for i, r in enumerate(reasons)
        if r is not None
    ]
    result = PartitionResult(
        part.index, table, rejected, windowed, 0.0, conversations=counts, positions=placed
    )
    if lsh is not None:
        first: dict[str, int] = {}
        for j, h in enumerate(ok_hashes):
            first.setdefault(h, j)
        result.signatures = signatures(
            [normalise_text(ok_texts[j]) for j in first.values()],
            shingle_size=lsh.shingle_size,
            num_perm=lsh.num_perm,
            seed=lsh.seed,
        )
        result.signature_hashes = list(first)
    result.seconds = time.perf_counter() - t0
    return result


def worker_version() -> str:
    """The gatebench version, as each dask worker reports it before the first partition.

    Defined here, beside :func:`process_partition`, so that running it on a
    worker imports this module there (see :func:`~gatebench.bulk._executor.open_pool`).
    """
    return gatebench_version()


def run_bulk(
    model_dir: Path | None,
    input_path: Path,
    out: Path,
    *,
    text_field: str = "text",
    messages_field: str = "messages",
    id_field: str | None = None,
    position_field: str | None = None,
    assume_position: str = "user",
    batch_rows: int = 10_000,
    executor: Executor | None = None,
    policy: ScanPolicy | None = None,
    lsh: LSHParams | None = None,
    on_result: Callable[[PartitionResult], None] | None = None,
    max_in_flight: int | None = None,
) -> dict[str, Any]:
    """Stream ``input_path`` through the workers and write per-row results to ``out``.

    The engine behind :func:`score_file` and :func:`gatebench.bulk.audit.audit_file`.

    Parameters
    ----------
    model_dir : Path or None
        Model directory; None writes hashes and rejections only.
    input_path : Path
        ``.parquet`` or ``.jsonl`` input.
    out : Path
        Output Parquet file (written as ``OUT.partial``, renamed when complete).
    text_field, messages_field, id_field : str
        Input column/key names; ``id_field`` defaults to ``id`` when present.
    position_field : str, optional
        A text row's position column/key; defaults to ``position`` when present.
    batch_rows : int
        Rows per partition.
    executor : gatebench.parallel.Executor, optional
        Where partitions run (default: this process); see
        :func:`gatebench.bulk._executor.open_pool`.
    policy : ScanPolicy, optional
        Which messages of a conversation row are scanned (default: user, tool
        and document, with border windows).
    lsh : LSHParams, optional
        Also compute MinHash signatures per partition.
    on_result : callable, optional
        Called with each :class:`PartitionResult`, in input order.
    max_in_flight : int, optional
        Partitions submitted and not yet written; default twice the workers.

    Returns
    -------
    dict
        The run summary (without the output-specific parts callers add).
    """
    t_start = time.perf_counter()
    policy = policy or ScanPolicy()
    model_meta: dict[str, Any] | None = None
    model_key: str | None = None
    if model_dir is not None:
        model_key = str(Path(model_dir).resolve())
        loaded = _model(model_key)  # fail before any worker starts; cached for `local`
        model_meta = {
            "dir": model_key,
            "detector": loaded.meta.get("detector"),
            "threshold": loaded.threshold,
            "target_fpr": loaded.meta.get("target_fpr"),
            "trace_id": loaded.meta.get("trace_id"),
        }
    reader = PartitionReader(
        input_path,
        text_field=text_field,
        messages_field=messages_field,
        id_field=id_field,
        position_field=position_field,
        assume_position=assume_position,
        batch_rows=batch_rows,
    )
    tally = Tally()
    writer = ResultWriter(out)
    try:
        t_pool = time.perf_counter()
        with open_pool(executor or Executor(), worker_version=worker_version) as pool:
            startup_s = time.perf_counter() - t_pool
            results = pool.imap(
                process_partition,
                timed(reader, tally),
                max_in_flight=max_in_flight,
                model_dir=model_key,
                lsh=lsh,
                scan_roles=policy.roles,
                span_adjacent=policy.span_adjacent,
            )
            for result in results:
                t0 = time.perf_counter()
                writer.write(result.table)
                tally.write_s += time.perf_counter() - t0
                tally.add(result)
                if on_result is not None:
                    on_result(result)
            where = pool.description
            workers = pool.workers
            wait_s = pool.wait_s
    except BaseException:
        writer.abort()
        raise
    writer.close()
    wall = time.perf_counter() - t_start
    seconds = np.asarray(tally.partition_seconds or [0.0])
    return {
        "gatebench_version": gatebench_version(),
        "input": {
            "path": str(input_path),
            "format": reader.format,
            **file_digest(input_path),
            "text_field": text_field,
            "messages_field": messages_field,
            "id_field": id_field,
            "position_field": position_field,
            "assume_position": assume_position,
            "positions_read_from": reader.position_column,
        },
        "model": model_meta,
        "output": str(out),
        "rows_read": tally.rows,
        "rows_scored": tally.scored if model_dir is not None else 0,
        "rows_rejected": sum(tally.reasons.values()),
        "rejected_by_reason": {r: tally.reasons.get(r, 0) for r in REJECT_REASONS},
        "reject_reasons": REJECT_REASONS,
        "rejected_rows": tally.rejected,
        "rejected_rows_listed": f"first {MAX_REJECTED_LISTED}; all are in the output",
        "blank_lines_skipped": reader.blank_lines,
        "flagged": tally.flagged if model_dir is not None else None,
        "flagged_share": (
            tally.flagged / tally.scored if model_dir is not None and tally.scored else None
        ),
        "windowed_texts": tally.windowed,
        "text_positions": {p: tally.positions.get(p, 0) for p in POSITIONS},
        "conversations": conversation_summary(tally.conversations, scored=model_dir is not None),
        "scan_policy": {"roles": list(policy.roles), "span_adjacent": policy.span_adjacent},
        "chunking": {"chunk_chars": _SERVE.chunk_chars, "chunk_overlap": _SERVE.chunk_overlap},
        "partitions": tally.partitions,
        "batch_rows": batch_rows,
        "backend": (executor or Executor()).backend,
        "workers": workers,
        "executor": where,
        "timing": {
            "wall_s": round(wall, 3),
            "startup_s": round(startup_s, 3),
            "rows_per_s": round(tally.rows / wall, 1) if wall > 0 else None,
            "read_s": round(tally.read_s, 3),
            "write_s": round(tally.write_s, 3),
            "wait_s": round(wait_s, 3),
            "driver_busy_s": round(wall - startup_s - wait_s, 3),
            "partition_s_total": round(float(seconds.sum()), 3),
            "partition_s_median": round(float(np.median(seconds)), 4),
            "partition_s_max": round(float(seconds.max()), 4),
        },
    }


def score_file(
    model_dir: Path,
    input_path: Path,
    out: Path,
    *,
    text_field: str = "text",
    messages_field: str = "messages",
    id_field: str | None = None,
    position_field: str | None = None,
    assume_position: str = "user",
    batch_rows: int = 10_000,
    executor: Executor | None = None,
    policy: ScanPolicy | None = None,
) -> dict[str, Any]:
    """Score every row of a Parquet/JSONL file with a model directory.

    Writes ``out`` (columns ``row, id, text_hash, score, flagged, n_chunks,
    message, role, rejected``; one row per input row, input order) and
    ``OUT.summary.json`` beside it, and returns the summary. A row is a text
    (the text key or column) or a conversation (the messages key or column,
    where there is no text); a conversation row's ``n_chunks`` counts every
    window scanned, and ``message`` and ``role`` name the message that drove
    its score (null for a text row). A text row's position (``user``, ``tool``
    or ``document``) reaches a detector that reads positions, as in the service.

    Parameters
    ----------
    model_dir : Path
        A model directory from ``gatebench train``.
    input_path : Path
        ``.parquet`` or ``.jsonl`` file; read in partitions of ``batch_rows``.
    out : Path
        Output Parquet file.
    text_field, messages_field, id_field : str
        Input column/key names; ``id_field`` defaults to ``id`` when present.
    position_field : str, optional
        A text row's position column/key; defaults to ``position`` when
        present. Null or absent: a user turn.
    batch_rows : int
        Rows per partition (memory per partition, and the unit of work).
    executor : gatebench.parallel.Executor, optional
        ``local``: this process, or ``n_jobs`` processes; ``dask``: the
        executor's cluster. Default: this process. The output is identical
        whichever runs it.
    policy : ScanPolicy, optional
        Which messages of a conversation are scanned (default: user, tool and
        document, with border windows); recorded in the summary.

    Returns
    -------
    dict
        The summary also written to ``OUT.summary.json``.

    Examples
    --------
    >>> score_file(Path("model"), Path("traffic.parquet"), Path("scores.parquet"))  # doctest: +SKIP
    """
    summary = {
        "command": "score",
        **run_bulk(
            model_dir,
            input_path,
            out,
            text_field=text_field,
            messages_field=messages_field,
            id_field=id_field,
            position_field=position_field,
            assume_position=assume_position,
            batch_rows=batch_rows,
            executor=executor,
            policy=policy,
        ),
    }
    write_summary(summary_path(out), summary)
    return summary


def write_summary(path: Path, summary: dict[str, Any]) -> None:
    """Write a summary as indented JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=2, default=str) + "\n")
