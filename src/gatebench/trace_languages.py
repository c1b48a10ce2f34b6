"""The language of every prompt: filled in where a loader gives none, and kept current in caches.

Languages are derived from the rows, so they do not enter the trace id; a
cached trace labelled by another identifier version is rebuilt under the same
id instead. Whole prompts are rebuilt from their chunk rows here because
detection reads a prompt once, not chunk by chunk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from gatebench.chunking import join_chunks
from gatebench.language import UNDETERMINED, detect_languages, detector_version

__all__ = [
    "cached_languages_current",
    "count_given_languages",
    "fill_languages",
    "prompts_from_chunks",
]


def prompts_from_chunks(frame: pd.DataFrame, overlap: int) -> list[str]:
    """Whole prompts from a trace frame's overlapping chunk rows, ordered by sample id.

    Each prompt is its chunks joined by :func:`gatebench.chunking.join_chunks`.
    """
    frame = frame.sort_values(["sample_id", "chunk"], kind="stable")
    return [
        join_chunks(chunks.tolist(), overlap)
        for _, chunks in frame.groupby("sample_id", sort=True)["text"]
    ]


def fill_languages(frame: pd.DataFrame, overlap: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Detect the language of every prompt whose loader gave none; count given vs detected.

    Detection reads the whole prompt (its chunks joined), once per prompt, and
    every chunk row of the prompt gets the code. Returns the frame and the
    ``languages`` entry of the trace info: the identifier's version, prompts
    whose language the loader gave, prompts detected (and of those,
    undetermined), and prompts per language.
    """
    prompts = frame.drop_duplicates("sample_id")
    missing = sorted(set(prompts.loc[prompts["language"].isna(), "sample_id"]))
    found: dict[str, str] = {}
    if missing:
        rows = frame[frame["sample_id"].isin(set(missing))]
        # prompts_from_chunks returns prompts in sample-id order, as sorted() does.
        found = dict(
            zip(missing, detect_languages(prompts_from_chunks(rows, overlap)), strict=True)
        )
        frame = frame.assign(language=frame["language"].fillna(frame["sample_id"].map(found)))
    counts = frame.drop_duplicates("sample_id")["language"].value_counts()
    info = {
        "detector": detector_version(),
        "given": len(prompts) - len(missing),
        "detected": len(missing),
        "undetermined": sum(code == UNDETERMINED for code in found.values()),
        "prompts": {str(k): int(v) for k, v in counts.sort_index().items()},
    }
    return frame, info


def count_given_languages(info: dict[str, Any], rows: pd.DataFrame) -> dict[str, Any]:
    """``info`` (from :func:`fill_languages`) with the prompts of ``rows`` added as given.

    For rows constructed after detection, whose language came with them.
    """
    prompts = dict(info["prompts"])
    for code, n in rows.drop_duplicates("sample_id")["language"].value_counts().items():
        prompts[str(code)] = prompts.get(str(code), 0) + int(n)
    added = int(rows["sample_id"].nunique())
    return {**info, "given": info["given"] + added, "prompts": dict(sorted(prompts.items()))}


def cached_languages_current(folder: Path) -> bool:
    """A cached trace exists and its languages come from this identifier and rules.

    The trace id hashes what decides the rows, and languages are derived from
    the rows, so a cache labelled by another version keeps its id and is rebuilt.
    """
    try:
        info = json.loads((folder / "trace_info.json").read_text())
    except (OSError, ValueError):
        return False
    recorded = info.get("languages") if isinstance(info, dict) else None
    return (
        (folder / "trace.parquet").is_file()
        and isinstance(recorded, dict)
        and recorded.get("detector") == detector_version()
    )
