"""A sample of traffic split in two: a part to train on and a part to measure on.

Training on a deployment's benign traffic improves how the model ranks that
traffic; the threshold must then be picked on traffic the model did not fit,
or its false-alarm rate reads low. Near-duplicates are the way a split leaks:
a template sent a thousand times with a different name in it would sit on both
sides. So whole near-duplicate clusters (MinHash, as the trace groups rows)
go to one side, in a seeded random order, until the training side holds its
share. Rows that cannot be read are counted by reason, as ``gatebench score``
counts them, and go to neither side.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gatebench.bulk.conversations import plan_conversation
from gatebench.bulk.io import PartitionReader
from gatebench.conversation import ScanPolicy
from gatebench.data.local import conversation_text
from gatebench.seeding import child_seed
from gatebench.split.groups import LSHParams, group_keys

__all__ = ["SampleRows", "read_sample", "split_rows", "write_rows"]


@dataclass
class SampleRows:
    """The usable rows of a sample: each as read, and as a trace reads it (text, position)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    positions: list[str] = field(default_factory=list)
    input_rows: list[int] = field(default_factory=list)
    rows_read: int = 0
    rejected: Counter[str] = field(default_factory=Counter)


def read_sample(path: Path, reading: Mapping[str, Any]) -> SampleRows:
    """Read ``path`` as ``gatebench score`` reads it; keep each usable row two ways.

    ``records`` are the rows to score: a conversation keeps its messages, a
    text row its text and position, and each holds its input row number as
    ``id``, so a written file points back to the sample. ``texts`` and
    ``positions`` are what a trace holds for the row: for a conversation, its
    scanned messages joined, at the most indirect of their positions.
    """
    out = SampleRows()
    reader = PartitionReader(path, **reading)
    for part in reader:
        reasons = part.reasons()
        positions = part.text_positions()
        for i, text in enumerate(part.texts):
            row = part.start_row + i
            record: dict[str, Any] = {"id": row}
            if i in part.conversations:
                where = f"{path}: row {row}"
                # Rejected as scoring rejects it, under the policy the trace reads with.
                _, reason, _ = plan_conversation(part.conversations[i], ScanPolicy(), where)
                if reason is not None:
                    out.rejected[reason] += 1
                    continue
                text, position = conversation_text(part.conversations[i], where)
                record["messages"] = part.conversations[i]
            elif reasons[i] is not None or text is None:
                out.rejected[reasons[i] or "null"] += 1
                continue
            else:
                position = positions[i]
                record["text"], record["position"] = text, position
            out.records.append(record)
            out.texts.append(text)
            out.positions.append(position)
            out.input_rows.append(row)
    out.rows_read = reader.rows
    return out


def split_rows(
    texts: list[str], share: float, seed: int, stream: str = "split", draw: int = 0
) -> tuple[np.ndarray, int]:
    """Which rows go to the training side (a boolean mask), and how many clusters there were.

    ``seed`` is the model's trace seed: the clusters are the trace's composite
    groups (exact normalised text, MinHash with the trace's LSH seed), so no
    tuning row shares a group with a training row when the model is refitted.
    Whole clusters move together, in an order drawn from ``seed`` (the child
    ``stream``, one per file split), until the training side holds at least
    ``share`` of the rows. ``draw`` 0 is the model's own order; any other
    number draws another order of the same clusters, so a gain can be checked
    on a second split.
    """
    ids = list(range(len(texts)))
    params = LSHParams(seed=child_seed(seed, "minhash"))
    cluster = group_keys(texts, ids, None, params).groups
    n_clusters = int(cluster.max()) + 1 if len(cluster) else 0
    path = (stream,) if draw == 0 else (stream, draw)
    order = np.random.default_rng(child_seed(seed, "adapt", *path)).permutation(n_clusters)
    sizes = np.bincount(cluster, minlength=n_clusters)[order]
    # A cluster joins the training side while the rows before it fall short of the share.
    before = np.cumsum(sizes) - sizes
    chosen = np.zeros(n_clusters, dtype=bool)
    chosen[order[before < share * len(texts)]] = True
    return chosen[cluster], n_clusters


def write_rows(path: Path, records: list[dict[str, Any]]) -> None:
    """Write ``records`` as JSON lines (UTF-8, characters as they are)."""
    with path.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
