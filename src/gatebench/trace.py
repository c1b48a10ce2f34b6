"""Trace assembly: union the sources, cap, collapse duplicates, chunk, hash, cache.

The trace id is a content hash over every input that can change the rows:
the bytes of each loader's files, the loader versions, the effective caps, the
chunking settings and the seed (caps and constructed samples are seeded). It is
computed before any row is parsed, so a cached trace is found without loading.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gatebench.augment import EMBEDDED_PAYLOADS, EMBEDDED_SOURCE, embedded_injections
from gatebench.chunking import chunk_texts
from gatebench.data import get_loader
from gatebench.data.loaders import Loader, LoadResult
from gatebench.data.local import FileOptions
from gatebench.data.presets import DEFAULT_SOURCES, PAPER_SOURCES, TRAINING_SOURCES
from gatebench.data.resolve import data_dir_from_env, resolve_files, resolve_root
from gatebench.data.sources import expand_sources
from gatebench.errors import ConfigError, DataError, SourceMissingError
from gatebench.persona import (
    PERSONA_DESCRIPTION,
    PERSONA_HALVES,
    PERSONA_SOURCE,
    persona_pairs,
)
from gatebench.quotes import QUOTES_DESCRIPTION, QUOTES_SOURCE, quote_twins
from gatebench.seeding import child_seed, child_sequence
from gatebench.split import GroupResult, LSHParams, group_keys
from gatebench.text import text_hash
from gatebench.trace_info import (
    composition,
    constructed_source_counts,
    loaded_source_counts,
    recount_training,
    spec_record,
    trace_info,
)
from gatebench.trace_languages import (
    cached_languages_current,
    count_given_languages,
    fill_languages,
    prompts_from_chunks,
)
from gatebench.twins import TWINS_DESCRIPTION, TWINS_SOURCE, benign_twins
from gatebench.types import DATA_POSITIONS, Position, Role, Sample

__all__ = [
    "DEFAULT_SOURCES",
    "DOCUMENTS_LEFT_OUT",
    "PAPER_SOURCES",
    "TRACE_FORMAT",
    "TRAINING_SOURCES",
    "Trace",
    "TraceSpec",
    "build_trace",
    "composite_groups",
    "fill_languages",
    "load_trace",
    "positions_at",
    "prompts_from_chunks",
    "row_positions",
    "scored_rows",
    "shares_group_with",
]

#: Why a training corpus's documents are missing from a trace built without ``documents``.
DOCUMENTS_LEFT_OUT = "benign documents (the trace's documents option is off)"

# 2: rows carry a role; training rows that share a group with an evaluation row are dropped.
# 3: rows carry a position (user turn, tool result, document).
TRACE_FORMAT = 3

COLUMNS = [
    "row_id",
    "sample_id",
    "chunk",
    "n_chunks",
    "text",
    "label",
    "source",
    "family",
    "parent_id",
    "language",
    "position",
    "text_sha256",
    "prompt_chars",
    "role",
]


@dataclass(frozen=True)
class TraceSpec:
    """Everything that decides which rows a trace holds.

    Parameters
    ----------
    sources : tuple of str
        Registered source names, preset names (``default``, ``paper``, ``all``) and
        paths to a user's files (:mod:`gatebench.data.sources`); held as source names.
    caps : dict
        Per-source cap overrides; a value of ``None`` lifts the card's default cap.
    chunk_chars : int
        Window length for chunking long inputs, in characters.
    chunk_overlap : int
        Characters shared by consecutive windows, so an instruction cut at a
        window edge still appears whole in one window.
    seed : int
        Root seed for caps and constructed samples.
    skip_missing : bool
        Build from the available sources and record the missing ones, instead of failing.
    roles : dict
        Per-source role overrides (``evaluation`` or ``training``); a source
        not named keeps its card's role.
    embedded : int
        Constructed training rows with a training-corpus attack embedded in a
        benign training document (:mod:`gatebench.augment`); 0 (the default)
        for none. Measured by LODO they lowered recall on injections inside
        tool outputs (see benchmarks/RESULTS.md), so they are opt-in.
    embedded_payloads : str
        What those rows embed: ``attacks`` (the default, training-corpus
        attacks), ``instructions`` (short benign training-corpus requests,
        planted mid-document) or ``mixed`` (half each).
    twins : int
        Constructed benign training rows: English training-corpus prompts with
        learned trigger words inserted (:mod:`gatebench.twins`); 0 for none.
        The default, 3,000, is the count measured by LODO: with the content
        features and the uncapped corpora they rank never-seen text better.
    persona_twins : int
        Constructed pairs of training rows: one persona frame from a benign
        training prompt, before a benign request and before a training attack
        (:mod:`gatebench.persona`); 0 (the default) for none. Measured by
        LODO and with training corpora held out, they left never-seen benign
        prompts that open with a persona flagged as often or more
        (benchmarks/RESULTS.md), so they are opt-in.
    persona_halves : str
        Which rows of each persona pair are built: ``both`` (the default) or
        ``benign`` (the frame before a benign request only).
    quote_twins : int
        Constructed benign training rows: a short English training attack
        quoted inside a benign question about it (:mod:`gatebench.quotes`); 0
        (the default) for none. Measured by LODO they lowered the harm
        benchmarks' ranking, and the shipped model gained less recall than two
        draws differ by (benchmarks/RESULTS.md), so they are opt-in.
    documents : bool
        Keep the training corpora's benign documents (rows at a tool or
        document position: worked solutions, threat reports, completed
        functions). Off by default: without positions a detector reads them as
        prompts, and measured by LODO they cost user-turn recall at a given
        FPR (benchmarks/RESULTS.md); Gate's data guard learns from them. Left
        out, they are counted per source under :data:`DOCUMENTS_LEFT_OUT`.
    """

    sources: tuple[str, ...] = DEFAULT_SOURCES
    caps: dict[str, int | None] = field(default_factory=dict)
    chunk_chars: int = 4000
    chunk_overlap: int = 400
    seed: int = 0
    skip_missing: bool = False
    roles: dict[str, str] = field(default_factory=dict)
    embedded: int = 0
    embedded_payloads: str = "attacks"
    twins: int = 3000
    persona_twins: int = 0
    persona_halves: str = "both"
    quote_twins: int = 0
    documents: bool = False
    files: FileOptions = field(default_factory=FileOptions)
    paths: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.files, Mapping):
            object.__setattr__(self, "files", FileOptions(**self.files))
        names, paths = expand_sources(self.sources, self.files, self.paths)
        object.__setattr__(self, "sources", names)
        object.__setattr__(self, "paths", paths)
        for name in [*self.caps, *self.roles]:
            get_loader(name)  # raises with a did-you-mean for typos
        for name, role in self.roles.items():
            if role not in set(Role):
                raise ConfigError(
                    f"role {role!r} for source {name!r} is not one of "
                    f"{[str(r) for r in Role]}; use e.g. --role {name}=training"
                )
        for name, cap in self.caps.items():
            if cap is not None and cap < 1:
                raise ConfigError(f"cap for {name!r} is {cap}; use a positive row count or none")
        if self.embedded < 0:
            raise ConfigError(f"embedded={self.embedded} must be 0 (none) or a positive count")
        if self.twins < 0:
            raise ConfigError(f"twins={self.twins} must be 0 (none) or a positive count")
        if self.persona_twins < 0:
            raise ConfigError(
                f"persona_twins={self.persona_twins} must be 0 (none) or a positive count of pairs"
            )
        if self.quote_twins < 0:
            raise ConfigError(
                f"quote_twins={self.quote_twins} must be 0 (none) or a positive count"
            )
        if self.persona_halves not in PERSONA_HALVES:
            raise ConfigError(
                f"persona_halves={self.persona_halves!r}; choose one of "
                f"{', '.join(PERSONA_HALVES)}, e.g. --persona-halves benign"
            )
        if self.embedded_payloads not in EMBEDDED_PAYLOADS:
            raise ConfigError(
                f"embedded_payloads={self.embedded_payloads!r}; choose one of "
                f"{', '.join(EMBEDDED_PAYLOADS)}, e.g. --embedded-payloads instructions"
            )
        if self.chunk_chars < 64:
            raise ConfigError(f"chunk_chars={self.chunk_chars} is too small; use at least 64")
        if not 0 <= self.chunk_overlap < self.chunk_chars // 2:
            raise ConfigError(
                f"chunk_overlap={self.chunk_overlap} must be in [0, chunk_chars/2) "
                f"= [0, {self.chunk_chars // 2})"
            )

    def cap_for(self, loader: Loader) -> int | None:
        """The effective cap of one source: the override, else the card's default."""
        name = loader.card.name
        return self.caps.get(name, loader.card.default_cap)

    def role_for(self, loader: Loader) -> Role:
        """The effective role of one source: the override, else the card's role."""
        return Role(self.roles.get(loader.card.name, loader.card.role))


@dataclass
class Trace:
    """The assembled trace: one row per chunk, plus its provenance and reports."""

    frame: pd.DataFrame
    info: dict[str, Any]

    @property
    def trace_id(self) -> str:
        return str(self.info["trace_id"])

    def composition(self) -> pd.DataFrame:
        """Prompts by source, family, role and label (chunks not counted twice)."""
        return composition(self.frame)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _source_fingerprint(loader: Loader, root: Path) -> dict[str, Any]:
    files = resolve_files(loader.card, root)
    return {
        "name": loader.card.name,
        "loader_version": loader.card.version,
        "revision": loader.card.revision,
        "files": [[str(p.relative_to(root)), _sha256_file(p)] for p in files],
    }


def trace_id_for(fingerprints: list[dict[str, Any]], spec: TraceSpec) -> str:
    """Content hash of the inputs that determine a trace's rows."""
    payload = {
        "format": TRACE_FORMAT,
        "sources": fingerprints,
        "caps": {fp["name"]: spec.cap_for(get_loader(fp["name"])) for fp in fingerprints},
        "roles": {fp["name"]: str(spec.role_for(get_loader(fp["name"]))) for fp in fingerprints},
        "chunk_chars": spec.chunk_chars,
        "chunk_overlap": spec.chunk_overlap,
        "seed": spec.seed,
        "embedded": spec.embedded,
    }
    if spec.twins:
        # Only when there are twins, so the ids of earlier traces stay valid.
        payload["twins"] = spec.twins
    if spec.persona_twins:
        payload["persona_twins"] = spec.persona_twins
        if spec.persona_halves != "both":
            payload["persona_halves"] = spec.persona_halves
    if spec.quote_twins:
        payload["quote_twins"] = spec.quote_twins
    if spec.documents:
        payload["documents"] = True
    if spec.embedded and spec.embedded_payloads != "attacks":
        # Only when it changes the rows, so the ids of earlier traces stay valid.
        payload["embedded_payloads"] = spec.embedded_payloads
    if spec.embedded:
        # Embedded rows' ids name their payload's source: a cached trace from before
        # must not be found. Only when there are such rows, so other ids stay valid.
        payload["embedded_ids"] = "payload-source"
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def _without_documents(result: LoadResult) -> LoadResult:
    """``result`` without its rows at a tool or document position, counted as left out."""
    kept = [s for s in result.samples if s.position not in DATA_POSITIONS]
    if len(kept) == len(result.samples):
        return result
    excluded = {**result.excluded, DOCUMENTS_LEFT_OUT: len(result.samples) - len(kept)}
    return LoadResult(samples=kept, malformed=result.malformed, excluded=excluded)


def _collapse_exact(samples: list[Sample]) -> tuple[list[Sample], int, list[dict[str, Any]]]:
    """Keep the first of each normalised-text duplicate within one source."""
    first: dict[str, Sample] = {}
    conflicts: list[dict[str, Any]] = []
    for s in samples:
        key = text_hash(s.text)
        kept = first.setdefault(key, s)
        if kept is not s and kept.label != s.label:
            conflicts.append(
                {
                    "kept": kept.sample_id,
                    "dropped": s.sample_id,
                    "kept_label": kept.label,
                    "dropped_label": s.label,
                }
            )
    unique = list(first.values())
    return unique, len(samples) - len(unique), conflicts


def _apply_cap(samples: list[Sample], cap: int | None, seq: np.random.SeedSequence) -> list[Sample]:
    """Seeded, label-stratified subsample to ``cap`` rows, kept in loader order."""
    if cap is None or len(samples) <= cap:
        return samples
    labels = np.array([s.label for s in samples])
    rng = np.random.default_rng(seq)
    keep: list[int] = []
    classes, counts = np.unique(labels, return_counts=True)
    # Largest-remainder allocation keeps the label mix and sums exactly to cap.
    quotas = counts * cap / len(samples)
    alloc = np.floor(quotas).astype(int)
    for i in np.argsort(-(quotas - alloc), kind="stable")[: cap - alloc.sum()]:
        alloc[i] += 1
    for cls, k in zip(classes, alloc, strict=True):
        idx = np.flatnonzero(labels == cls)
        keep.extend(rng.choice(idx, size=int(k), replace=False).tolist())
    return [samples[i] for i in sorted(keep)]


def row_positions(frame: pd.DataFrame) -> np.ndarray | None:
    """Each row's position, for detectors that read it; None where any is unknown.

    A trace written before positions were recorded has none, and a detector
    told nothing treats every text as a user turn, which is what it was
    evaluated as then: its scores stay what they were.
    """
    if "position" not in frame or frame["position"].isna().any():
        return None
    return frame["position"].to_numpy(dtype=object)


def positions_at(positions: np.ndarray | None, rows: np.ndarray) -> list[str] | None:
    """The positions of ``rows``, as a detector receives them (None: not known)."""
    return None if positions is None else [str(p) for p in positions[rows]]


def _position(sample: Sample) -> str:
    """The sample's position as stored: a :class:`Position` value, a user turn when None.

    Checked here as well as in :class:`~gatebench.data.loaders.RowSink`: a
    plug-in loader may build its samples without a sink.
    """
    try:
        return str(Position.parse(sample.position, f"source {sample.source!r}, {sample.sample_id}"))
    except ValueError as exc:
        raise DataError(str(exc)) from None


def _rows(samples: list[Sample], family: str, role: Role, spec: TraceSpec) -> list[dict[str, Any]]:
    rows = []
    for s in samples:
        position = _position(s)
        chunks = chunk_texts(s.text, spec.chunk_chars, spec.chunk_overlap)
        for i, chunk in enumerate(chunks):
            rows.append(
                {
                    "row_id": f"{s.sample_id}#{i}",
                    "sample_id": s.sample_id,
                    "chunk": i,
                    "n_chunks": len(chunks),
                    "text": chunk,
                    "label": s.label,
                    "source": s.source,
                    "family": family,
                    "parent_id": s.parent_id,
                    "language": s.language,
                    "position": position,
                    "text_sha256": text_hash(chunk),
                    "prompt_chars": len(s.text),
                    "role": str(role),
                }
            )
    return rows


def composite_groups(frame: pd.DataFrame, seed: int) -> GroupResult:
    """Composite group keys of a trace frame (parent ∪ prompt ∪ exact text ∪ MinHash cluster).

    A constructed row's parent id equals its parent's sample id, so the two
    share one namespace: rows without a parent use their own prompt id. The
    LSH seed is a named child of the root seed, so the folds and the
    training-overlap filter see the same clusters.
    """
    parent = frame["parent_id"].where(frame["parent_id"].notna(), frame["sample_id"])
    params = LSHParams(seed=child_seed(seed, "minhash"))
    return group_keys(frame["text"].tolist(), frame["sample_id"].tolist(), parent.tolist(), params)


def scored_rows(frame: pd.DataFrame) -> np.ndarray:
    """True for the rows that are scored: every row except training-corpus rows.

    A frame without a ``role`` column (a synthetic frame, an older trace) is all scored.
    """
    if "role" not in frame:
        return np.ones(len(frame), dtype=bool)
    return (frame["role"] != str(Role.TRAINING)).to_numpy()


def shares_group_with(groups: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    """True for every row whose composite group holds at least one ``anchors`` row."""
    touched = np.zeros(int(groups.max()) + 1, dtype=bool)
    touched[groups[anchors]] = True
    return touched[groups]


def _drop_training_overlap(frame: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, dict[str, int]]:
    """Drop training prompts that share a composite group with any evaluation row.

    Otherwise an evaluated text (or its near-duplicate, or a translation of
    it) would sit in every fold's training split and the scores of its
    evaluation twin would be in-sample. Returns the kept rows and the number
    of prompts dropped per training source.
    """
    training = ~scored_rows(frame)
    if not training.any() or training.all():
        return frame, {}
    drop = training & shares_group_with(composite_groups(frame, seed).groups, ~training)
    dropped = frame.loc[drop].drop_duplicates("sample_id")["source"].value_counts()
    kept = frame.loc[~drop].reset_index(drop=True)
    return kept, {str(k): int(v) for k, v in sorted(dropped.items())}


def build_trace(
    spec: TraceSpec | None = None,
    *,
    data_dir: Path | str | None = None,
    cache_dir: Path | str | None = None,
    allow_hub: bool = True,
) -> Trace:
    """Assemble the trace described by ``spec``.

    Parameters
    ----------
    spec : TraceSpec, optional
        Sources, caps, chunking and seed; the default trace when omitted.
    data_dir : path, optional
        The mirror; defaults to ``$GATEBENCH_DATA``.
    cache_dir : path, optional
        Where ``trace-<id>.parquet`` and its info are cached; no cache when omitted.
    allow_hub : bool
        Fall back to the Hugging Face hub for sources missing from the mirror.

    Returns
    -------
    Trace
        Rows (one per chunk) and ``info``: trace id, per-source counts, skipped
        sources, malformed rows, duplicate and conflict reports, licence flags.
    """
    spec = spec or TraceSpec()
    mirror = data_dir_from_env(data_dir)
    roots: dict[str, Path] = {}
    skipped: dict[str, str] = {}
    for name in spec.sources:
        loader = get_loader(name)
        try:
            roots[name] = resolve_root(loader.card, mirror, allow_hub=allow_hub)
        except SourceMissingError as exc:
            if not spec.skip_missing:
                raise
            skipped[name] = str(exc)
    if not roots:
        raise DataError(
            f"no source of {list(spec.sources)} is available (data dir: {mirror}); "
            "set GATEBENCH_DATA to the benchmark mirror"
        )
    fingerprints = [_source_fingerprint(get_loader(n), r) for n, r in roots.items()]
    trace_id = trace_id_for(fingerprints, spec)
    cache = Path(cache_dir) / f"trace-{trace_id[:16]}" if cache_dir else None
    if cache is not None and cached_languages_current(cache):
        cached = load_trace(cache)
        # The id covers the files' bytes, not where they lie: a trace cached from the same
        # files elsewhere records this spec, so a later rebuild reads the files here.
        cached.info["spec"] = spec_record(spec)
        return cached

    rows: list[dict[str, Any]] = []
    per_source: dict[str, dict[str, Any]] = {}
    malformed: list[dict[str, Any]] = []
    within_conflicts: list[dict[str, Any]] = []
    for name, root in roots.items():
        loader = get_loader(name)
        result = loader.load(root, seed=spec.seed)
        if not result.samples:
            files = ", ".join(str(p.relative_to(root)) for p in resolve_files(loader.card, root))
            raise DataError(
                f"source {name!r} gave 0 usable rows from {root} ({files}; "
                f"{len(result.malformed)} malformed, "
                f"{sum(result.excluded.values())} left out by design): the files are empty, "
                "header-only or unreadable. Re-fetch them at the pinned revision, or drop the "
                "source from --sources."
            )
        malformed.extend(m.as_dict() for m in result.malformed)
        role = spec.role_for(loader)
        if role == Role.TRAINING and not spec.documents:
            result = _without_documents(result)
        unique, n_dup, conflicts = _collapse_exact(result.samples)
        within_conflicts.extend({"source": name, **c} for c in conflicts)
        cap = spec.cap_for(loader)
        kept = _apply_cap(unique, cap, child_sequence(spec.seed, "cap", name))
        family = str(loader.card.family)
        per_source[name] = loaded_source_counts(
            result,
            kept,
            n_unique=len(unique),
            n_duplicates=n_dup,
            cap=cap,
            role=role,
            family=family,
        )
        rows.extend(_rows(kept, family, role, spec))
    frame, overlap = _drop_training_overlap(pd.DataFrame(rows, columns=COLUMNS), spec.seed)
    embedded = embedded_injections(
        frame, n=spec.embedded, seed=spec.seed, payloads=spec.embedded_payloads
    )
    if len(embedded):
        frame = pd.concat([frame, embedded], ignore_index=True)
        per_source[EMBEDDED_SOURCE] = constructed_source_counts(
            spec.embedded, embedded, EMBEDDED_PAYLOADS[spec.embedded_payloads]
        )
    recount_training(per_source, frame, overlap)
    frame, languages = fill_languages(frame, spec.chunk_overlap)
    # After language detection: twins are built from English hosts and keep their language.
    twins = benign_twins(frame, n=spec.twins, seed=spec.seed)
    if len(twins):
        frame = pd.concat([frame, twins], ignore_index=True)
        per_source[TWINS_SOURCE] = constructed_source_counts(spec.twins, twins, TWINS_DESCRIPTION)
        languages = count_given_languages(languages, twins)
    pairs = persona_pairs(frame, n=spec.persona_twins, seed=spec.seed, halves=spec.persona_halves)
    # From the same rows as the pairs: no constructed row hosts another.
    quoted = quote_twins(frame, n=spec.quote_twins, seed=spec.seed)
    if len(pairs):
        frame = pd.concat([frame, pairs], ignore_index=True)
        per_source[PERSONA_SOURCE] = constructed_source_counts(
            spec.persona_twins * PERSONA_HALVES[spec.persona_halves],
            pairs,
            PERSONA_DESCRIPTION,
        )
        languages = count_given_languages(languages, pairs)
    if len(quoted):
        frame = pd.concat([frame, quoted], ignore_index=True)
        per_source[QUOTES_SOURCE] = constructed_source_counts(
            spec.quote_twins, quoted, QUOTES_DESCRIPTION
        )
        languages = count_given_languages(languages, quoted)
    frame["label"] = frame["label"].astype("int8")
    frame["chunk"] = frame["chunk"].astype("int32")
    frame["n_chunks"] = frame["n_chunks"].astype("int32")
    info = trace_info(
        frame,
        spec,
        trace_id=trace_id,
        trace_format=TRACE_FORMAT,
        fingerprints=fingerprints,
        per_source=per_source,
        skipped=skipped,
        malformed=malformed,
        within_conflicts=within_conflicts,
        licence_flags={
            n: get_loader(n).card.licence_flag for n in roots if get_loader(n).card.licence_flag
        },
        overlap=overlap,
    )
    info["languages"] = languages
    trace = Trace(frame, info)
    if cache is not None:
        save_trace(trace, cache)
    return trace


def save_trace(trace: Trace, folder: Path) -> None:
    """Write ``trace.parquet`` and ``trace_info.json`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    trace.frame.to_parquet(folder / "trace.parquet", index=False)
    (folder / "trace_info.json").write_text(json.dumps(trace.info, indent=2, sort_keys=True))


def load_trace(folder: Path | str) -> Trace:
    """Read a trace written by :func:`save_trace` (or a run directory's copy)."""
    folder = Path(folder)
    try:
        frame = pd.read_parquet(folder / "trace.parquet")
        info = json.loads((folder / "trace_info.json").read_text())
    except (OSError, ValueError) as exc:
        raise DataError(
            f"{folder} does not hold a readable trace (trace.parquet + trace_info.json): {exc}. "
            "Rebuild it with `gatebench trace build`."
        ) from exc
    if "role" not in frame:
        frame["role"] = str(Role.EVALUATION)
    if "position" not in frame:
        # Written before positions were recorded (format < 3). Only a rebuild can say
        # which rows sat in a tool result or a document, so the position stays
        # unknown and per-position results leave these rows out, as per-language
        # results leave out prompts without a language.
        frame["position"] = None
    if "languages" not in info:
        # Written before languages were detected: every missing language is the
        # loader's None, so filling it now is what a rebuild would do.
        frame, info["languages"] = fill_languages(frame, int(info["chunking"]["chunk_overlap"]))
    return Trace(frame, info)
