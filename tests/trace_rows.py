"""One hand-made trace row, for tests that build small trace frames."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from gatebench.text import text_hash


def trace_row(
    sid: str, text: str, label: int, role: str = "training", *, language: str = "en"
) -> dict[str, object]:
    """A single-chunk user-turn row of source ``sid``'s prefix, with no parent."""
    return {
        "row_id": f"{sid}#0",
        "sample_id": sid,
        "chunk": 0,
        "n_chunks": 1,
        "text": text,
        "label": label,
        "source": sid.split(":")[0],
        "family": "mixed",
        "parent_id": "",
        "language": language,
        "position": "user",
        "text_sha256": text_hash(text),
        "prompt_chars": len(text),
        "role": role,
    }


def assert_seeded(make: Callable[..., pd.DataFrame], frame: pd.DataFrame, n: int) -> None:
    """``make(frame, n=, seed=)`` gives the same rows for a seed, others for another, none for 0."""
    a = make(frame, n=n, seed=5)
    assert len(a) and a.equals(make(frame, n=n, seed=5))
    assert a.text.tolist() != make(frame, n=n, seed=6).text.tolist()
    assert make(frame, n=0, seed=5).empty
