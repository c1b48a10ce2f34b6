"""Which rows of a file the model was trained on, found as ``gatebench evaluate`` finds them.

A threshold picked on texts the model was fitted on reads their false-alarm
rate lower than that of the traffic they stand for, and a recall read on
fitted attacks is higher than on new ones. The likeliest way to do so is to
train on a deployment's traffic file (a training source) and then tune on the
same file. So the rows are matched against the model's training trace, rebuilt
from the files its manifest records, by the trace's own composite key: exact
normalised text, MinHash near-duplicate cluster, with the LSH seed that trace
used. Each row is read as the trace reads a file (a conversation is the
contents of its scanned messages) and chunked as the trace was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from gatebench.bulk.io import PartitionReader
from gatebench.chunking import chunk_texts
from gatebench.conversation import ConversationError
from gatebench.data.local import conversation_text
from gatebench.trace import Trace
from gatebench.unseen.overlap import overlapping_prompts, training_trace

__all__ = ["trained_rows"]

#: How a row is matched, for the record.
HOW = "composite group (exact normalised text, MinHash cluster) shared with the training trace"


def _frame(path: Path, reading: Mapping[str, Any], size: int, overlap: int) -> pd.DataFrame:
    """The file's readable rows as trace-like chunk rows; ``sample_id`` holds the input row."""
    rows: list[tuple[str, str]] = []
    for part in PartitionReader(path, **reading):
        reasons = part.reasons()
        for i, text in enumerate(part.texts):
            row = part.start_row + i
            if i in part.conversations:
                try:
                    text, _ = conversation_text(part.conversations[i], f"{path}: row {row}")
                except ConversationError:
                    continue  # rejected by the scoring pass too, and counted there
            elif reasons[i] is not None or text is None:
                continue
            # A space cannot occur in a source name, so these ids meet no trace id.
            rows.extend((chunk, f"input row {row}") for chunk in chunk_texts(text, size, overlap))
    frame = pd.DataFrame(rows, columns=["text", "sample_id"])
    return frame.assign(parent_id=None)


def trained_rows(
    meta: Mapping[str, Any],
    model_dir: Path,
    paths: Sequence[Path],
    reading: Mapping[str, Any],
    *,
    data_dir: Path | None,
    cache_dir: Path | None,
    train: Trace | None = None,
) -> tuple[list[set[int]], dict[str, Any]]:
    """Per file, the 0-based input rows the model was trained on; and a record of the check.

    Parameters
    ----------
    meta : mapping
        The model directory's manifest.
    model_dir : Path
        The model directory, for messages.
    paths : sequence of Path
        ``.parquet`` or ``.jsonl`` files, read as ``gatebench score`` reads them.
    reading : mapping
        :class:`~gatebench.bulk.io.PartitionReader` options (columns, batch rows).
    data_dir, cache_dir : Path or None
        Where the training trace's sources are, and the trace cache.
    train : Trace, optional
        The training trace, already rebuilt (by :func:`training_trace`).

    Raises
    ------
    DataError
        The manifest records no training trace, or its files have changed; the
        message names ``--keep-overlap``.
    """
    if train is None:
        train = training_trace(meta, model_dir, data_dir=data_dir, cache_dir=cache_dir)
    seed = int(train.info["spec"]["seed"])
    chunking = train.info["chunking"]
    found = []
    for path in paths:
        frame = _frame(path, reading, int(chunking["chunk_chars"]), int(chunking["chunk_overlap"]))
        seen = overlapping_prompts(train.frame, frame, seed) if len(frame) else set()
        found.append({int(s.rpartition(" ")[2]) for s in seen})
    record = {
        "checked": True,
        "how": HOW,
        "trace_id": train.trace_id,
        "rows": len(found[0]) if found else 0,
        "first_rows": sorted(found[0])[:10] if found else [],
    }
    return found, record
