"""A trace's info: what ``trace_info.json`` records beside the rows.

:func:`gatebench.trace.build_trace` decides which rows a trace holds; this
module describes the rows it chose: counts per source and role, the
cross-source duplicate and label-conflict report, the chunking, and the
composition table. Kept apart so that assembling a trace and accounting for
it can be read (and changed) one at a time; everything here is computed from
the finished frame and the counts the assembly hands over, and changes no row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import pandas as pd

from gatebench.types import Family, Role

if TYPE_CHECKING:
    from gatebench.data.loaders import LoadResult
    from gatebench.trace import TraceSpec
    from gatebench.types import Sample

__all__ = [
    "composition",
    "constructed_source_counts",
    "cross_source_report",
    "loaded_source_counts",
    "recount_training",
    "refused_note",
    "refused_record",
    "role_summary",
    "spec_record",
    "trace_info",
]


def composition(frame: pd.DataFrame) -> pd.DataFrame:
    """Prompts by source, family, role and label (chunks not counted twice)."""
    prompts = frame.drop_duplicates("sample_id")
    if "role" not in prompts:
        prompts = prompts.assign(role=str(Role.EVALUATION))
    table = prompts.pivot_table(
        index=["source", "family", "role"],
        columns="label",
        values="sample_id",
        aggfunc="count",
        fill_value=0,
    ).rename(columns={0: "benign", 1: "attack"})
    for col in ("benign", "attack"):
        if col not in table:
            table[col] = 0
    table = table[["attack", "benign"]]
    table["total"] = table["attack"] + table["benign"]
    return table.reset_index()


def loaded_source_counts(
    result: LoadResult,
    kept: list[Sample],
    *,
    n_unique: int,
    n_duplicates: int,
    cap: int | None,
    role: Role,
    family: str,
) -> dict[str, Any]:
    """The per-source entry of one loaded source: rows read, refused, collapsed, capped, kept.

    ``n_unique`` rows were left after collapsing ``n_duplicates`` exact
    duplicates; ``kept`` are those the cap kept.
    """
    labels = Counter(s.label for s in kept)
    return {
        "role": str(role),
        "loaded": len(result.samples),
        "malformed": len(result.malformed),
        "excluded_by_loader": dict(sorted(result.excluded.items())),
        "exact_duplicates_collapsed": n_duplicates,
        "cap": cap,
        "dropped_by_cap": n_unique - len(kept),
        "attack": labels[1],
        "benign": labels[0],
        "family": family,
    }


def constructed_source_counts(
    requested: int, made: pd.DataFrame, description: str
) -> dict[str, Any]:
    """The per-source entry of the constructed training rows ``made``.

    ``requested - len(made)`` draws gave a text already constructed and were collapsed.
    """
    attack = int((made["label"] == 1).sum())
    benign = len(made) - attack
    family = (
        Family.BALANCED if attack and benign else Family.ALL_ATTACK if attack else Family.ALL_BENIGN
    )
    return {
        "role": str(Role.TRAINING),
        "constructed": description,
        "loaded": requested,
        "malformed": 0,
        "excluded_by_loader": {},
        "exact_duplicates_collapsed": requested - len(made),
        "cap": None,
        "dropped_by_cap": 0,
        "attack": attack,
        "benign": benign,
        "family": str(family),
    }


def recount_training(
    per_source: dict[str, dict[str, Any]], frame: pd.DataFrame, overlap: dict[str, int]
) -> None:
    """Recount the training sources' prompts in ``per_source`` after the overlap filter.

    Counts after the filter, so they add up to the trace's rows; ``overlap``
    is the number of prompts the filter dropped per training source.
    """
    prompt_labels = frame.drop_duplicates("sample_id").groupby("source")["label"]
    attacks, totals = prompt_labels.sum(), prompt_labels.size()
    for name, stats in per_source.items():
        if stats["role"] == str(Role.TRAINING):
            stats["dropped_overlapping_evaluation"] = overlap.get(name, 0)
            stats["attack"] = int(attacks.get(name, 0))
            stats["benign"] = int(totals.get(name, 0)) - stats["attack"]


def role_summary(frame: pd.DataFrame, overlap: dict[str, int]) -> dict[str, Any]:
    """Sources, prompts and labels per role, and the training prompts the overlap filter dropped."""
    prompts = frame.drop_duplicates("sample_id")
    out: dict[str, Any] = {}
    for role in Role:
        part = prompts[prompts["role"] == str(role)]
        out[str(role)] = {
            "sources": sorted(set(part["source"].tolist())),
            "prompts": len(part),
            "attack": int(part["label"].sum()),
            "benign": int((part["label"] == 0).sum()),
        }
    out[str(Role.TRAINING)]["dropped_overlapping_evaluation"] = sum(overlap.values())
    return out


def cross_source_report(frame: pd.DataFrame) -> dict[str, Any]:
    """Prompts whose text appears in more than one source, and those whose labels disagree."""
    prompts = frame[frame["chunk"] == 0]
    spread = prompts.groupby("text_sha256").agg(
        sources=("source", lambda s: sorted(set(s))),
        labels=("label", lambda s: sorted(set(s))),
        ids=("sample_id", list),
        text=("text", "first"),
    )
    multi = spread[spread["sources"].map(len) > 1]
    conflicts = multi[multi["labels"].map(len) > 1]
    return {
        "cross_source_duplicate_groups": len(multi),
        "cross_source_duplicate_rows": int(multi["ids"].map(len).sum()),
        "label_conflict_groups": len(conflicts),
        "label_conflicts": [
            {"sha256": h, "sources": r.sources, "sample_ids": r.ids, "text": r.text[:300]}
            for h, r in conflicts.iterrows()
        ],
    }


def spec_record(spec: TraceSpec) -> dict[str, Any]:
    """A trace spec as plain data, as a trace's info records it."""
    return {**asdict(spec), "sources": list(spec.sources)}


def trace_info(
    frame: pd.DataFrame,
    spec: TraceSpec,
    *,
    trace_id: str,
    trace_format: int,
    fingerprints: list[dict[str, Any]],
    per_source: dict[str, dict[str, Any]],
    skipped: dict[str, str],
    malformed: list[dict[str, Any]],
    within_conflicts: list[dict[str, Any]],
    licence_flags: dict[str, Any],
    overlap: dict[str, int],
) -> dict[str, Any]:
    """The info of the finished trace ``frame``: provenance, counts and reports.

    Parameters
    ----------
    frame : DataFrame
        The trace's rows, as stored.
    spec : TraceSpec
        What the trace was built from, recorded as plain data.
    trace_id, trace_format : str, int
        The content hash and the trace format version.
    fingerprints : list of dict
        Per-source files and versions the trace id was computed from.
    per_source : dict
        Per-source counts (loaded, malformed, collapsed, capped, labels).
    skipped, malformed, within_conflicts : dict, list, list
        Missing sources, malformed input rows, label conflicts inside a source.
    licence_flags : dict
        Sources whose licence needs attention, with the reason.
    overlap : dict
        Training prompts the overlap filter dropped, per source.
    """
    return {
        "trace_id": trace_id,
        "format": trace_format,
        "spec": spec_record(spec),
        "sources": fingerprints,
        "per_source": per_source,
        "skipped_sources": skipped,
        "malformed_rows": malformed,
        "within_source_label_conflicts": within_conflicts,
        "duplicates": cross_source_report(frame),
        "chunking": {
            "chunk_chars": spec.chunk_chars,
            "chunk_overlap": spec.chunk_overlap,
            "prompts": int(frame["sample_id"].nunique()),
            "rows": len(frame),
            "chunked_prompts": int(frame.loc[frame["chunk"] == 1, "sample_id"].nunique()),
        },
        "licence_flags": licence_flags,
        "n_rows": len(frame),
        "n_prompts": int(frame["sample_id"].nunique()),
        "labels": {
            "attack": int(frame.drop_duplicates("sample_id")["label"].sum()),
            "benign": int((frame.drop_duplicates("sample_id")["label"] == 0).sum()),
        },
        "roles": role_summary(frame, overlap),
    }


#: Refused rows a console line or a report's summary names; the artifacts list them all.
REFUSED_NAMED = 3
#: Refused rows an artifact that is not the trace's own report keeps (with the count).
REFUSED_KEPT = 20


def refused_note(
    malformed: Sequence[Mapping[str, Any]], where: str, total: int | None = None
) -> str | None:
    """One line on the input rows a load refused, for a console or a report's first screen.

    A refused row (no text, a position the loader does not know, an id seen
    before) is left out of every number; recording it only in an artifact
    leaves a user reading numbers over fewer rows than the file holds without
    knowing it.

    Parameters
    ----------
    malformed : sequence of mapping
        The trace info's ``malformed_rows``: ``source``, ``file``, ``line``, ``reason``.
    where : str
        The artifact that lists every one of them.
    total : int, optional
        How many rows were refused, when ``malformed`` holds only the first ones.

    Returns
    -------
    str or None
        How many, the first :data:`REFUSED_NAMED` with their file, line and
        reason, and where the rest are; None when no row was refused.

    Examples
    --------
    >>> row = {"source": "a", "file": "a.jsonl", "line": 3, "reason": "no text"}
    >>> print(refused_note([row], "x.json"))
    1 input row refused and left out of every number: a.jsonl:3: no text. All are listed in x.json.
    """
    n = len(malformed) if total is None else total
    if not n:
        return None
    shown = malformed[:REFUSED_NAMED]
    named = "; ".join(f"{m['file']}:{m['line']}: {m['reason']}" for m in shown)
    first = f" (the first {len(shown)})" if n > len(shown) else ""
    rows = "row" if n == 1 else "rows"
    return (
        f"{n:,} input {rows} refused and left out of every number{first}: {named}. "
        f"All are listed in {where}."
    )


def refused_record(malformed: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How many input rows were refused, and the first :data:`REFUSED_KEPT` of them.

    For the artifacts that do not carry the whole trace info (a model
    directory's manifest), so that the refusal travels with what was built.
    """
    return {"rows": len(malformed), "first": [dict(m) for m in malformed[:REFUSED_KEPT]]}
