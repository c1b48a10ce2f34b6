"""Constructed training rows: injections embedded in benign training documents.

Attacks in the evaluation sources mostly arrive as the whole text; a gate in
front of an agent also meets them inside an email, a report or a tool result,
where the instruction is a few sentences in a long benign document. Nothing
in the training corpora looks like that, so a model learns "long benign
document = benign". These rows teach the opposite: a benign training
document with a training-corpus attack inserted at a random sentence
boundary is an attack. Every constructed row is recorded at the position
``document``: the payload now sits inside one, whatever the host was.

Only training-corpus rows are used, hosts and payloads alike, after the
trace has dropped training rows that share a group with an evaluation row,
so no evaluated text (or near-copy) can reach a constructed row. Each row's
parent is its host document, so a host and its injected copy always share
a cross-validation group. The draw is seeded by a named child of the trace
seed: the same trace gives the same rows.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from gatebench.seeding import child_sequence
from gatebench.text import text_hash
from gatebench.types import Position

__all__ = ["EMBEDDED_SOURCE", "embedded_injections"]

EMBEDDED_SOURCE = "embedded-injections"
MIN_HOST_CHARS = 200
MAX_HOST_CHARS = 3400
MAX_PAYLOAD_CHARS = 600
# Ways a payload joins its host: a paragraph break, a line break, or mid-paragraph.
_JOINS = ("\n\n", "\n", " ")
_BOUNDARY_RE = re.compile(r"(?<=[.!?])\s+|\n+")


def _boundaries(text: str) -> list[int]:
    """Offsets where a sentence or line ends, plus the start and the end."""
    return sorted({0, len(text), *(m.start() for m in _BOUNDARY_RE.finditer(text))})


def embedded_injections(frame: pd.DataFrame, *, n: int, seed: int) -> pd.DataFrame:
    """Up to ``n`` constructed attack rows, in the trace frame's columns (role ``training``).

    Parameters
    ----------
    frame : DataFrame
        The trace frame after the training-overlap filter.
    n : int
        Rows to construct; fewer when the training corpora hold no host or payload.
    seed : int
        Trace root seed.

    Returns
    -------
    DataFrame
        One single-chunk row per constructed document (empty when ``n`` is 0).
    """
    columns = list(frame.columns)
    training = frame[(frame["role"] == "training") & (frame["n_chunks"] == 1)]
    lengths = training["text"].str.len()
    hosts = training[
        (training["label"] == 0) & lengths.between(MIN_HOST_CHARS, MAX_HOST_CHARS)
    ].reset_index(drop=True)
    payloads = training[(training["label"] == 1) & (lengths <= MAX_PAYLOAD_CHARS)].reset_index(
        drop=True
    )
    if n <= 0 or hosts.empty or payloads.empty:
        return pd.DataFrame(columns=columns)
    rng = np.random.default_rng(child_sequence(seed, "augment", EMBEDDED_SOURCE))
    host_idx = rng.integers(0, len(hosts), size=n)
    payload_idx = rng.integers(0, len(payloads), size=n)
    joins = rng.integers(0, len(_JOINS), size=n)
    rows: list[dict[str, Any]] = []
    for i in range(n):
        host, payload = hosts.iloc[host_idx[i]], payloads.iloc[payload_idx[i]]
        cuts = _boundaries(host["text"])
        at = cuts[int(rng.integers(0, len(cuts)))]
        join = _JOINS[joins[i]]
        text = host["text"][:at].rstrip() + join + payload["text"].strip() + join
        text = (text + host["text"][at:].lstrip()).strip()
        sample_id = f"{EMBEDDED_SOURCE}:{i}"
        rows.append(
            {
                "row_id": f"{sample_id}#0",
                "sample_id": sample_id,
                "chunk": 0,
                "n_chunks": 1,
                "text": text,
                "label": 1,
                "source": EMBEDDED_SOURCE,
                "family": "all_attack",
                # The host's group key, so a host and its injected copy never split.
                "parent_id": host["parent_id"] if host["parent_id"] else host["sample_id"],
                "language": host["language"],
                # The payload now sits inside a document, whatever the host was.
                "position": str(Position.DOCUMENT),
                "text_sha256": text_hash(text),
                "prompt_chars": len(text),
                "role": "training",
            }
        )
    out = pd.DataFrame(rows, columns=columns)
    return out.drop_duplicates("text_sha256").reset_index(drop=True)
