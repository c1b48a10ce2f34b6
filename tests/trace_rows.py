"""One hand-made trace row, for tests that build small trace frames."""

from __future__ import annotations

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
