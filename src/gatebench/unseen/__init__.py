"""How a shipped model does on sets it never trained on: ``gatebench evaluate``.

The model is scored at its shipped threshold (never re-picked on the
evaluated rows) on registered sources or files, after the prompts its
training trace already holds are set aside, and the never-seen figures sit
beside the in-distribution ones from the run that chose the threshold.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gatebench import artifacts
from gatebench.artifacts import jsonable
from gatebench.config import output_directory
from gatebench.data.local import FileOptions
from gatebench.detectors import score_detector
from gatebench.errors import ConfigError, DataError
from gatebench.modeldir import LoadedModel, load_model, shipped_rule
from gatebench.per_language import by_language
from gatebench.per_position import by_position
from gatebench.served import ServeSettings
from gatebench.trace import Trace, TraceSpec, build_trace, row_positions
from gatebench.trace_info import refused_record
from gatebench.unseen.baseline import in_distribution
from gatebench.unseen.nearest import errors_lean_on
from gatebench.unseen.overlap import overlapping_prompts, training_spec, training_trace
from gatebench.unseen.rates import rates_at
from gatebench.unseen.result import ModelInfo, Overlap, UnseenResult

__all__ = ["UnseenResult", "evaluate_model", "model_sha256"]


def model_sha256(model_dir: Path) -> str:
    """One hash of every file in the model directory (relative path and bytes, in order)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in model_dir.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(model_dir)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _data_trace(
    chunking: tuple[int, int],
    sources: Sequence[str],
    *,
    caps: dict[str, int | None],
    files: FileOptions,
    seed: int,
    data_dir: Path | None,
    cache_dir: Path | None,
) -> Trace:
    """The evaluated sets as a trace, chunked as the model's training trace was; all scored."""
    size, overlap = chunking
    named = TraceSpec(
        sources=tuple(sources), files=files, seed=seed, chunk_chars=size, chunk_overlap=overlap
    )
    spec = TraceSpec(
        sources=named.sources,
        files=files,
        paths=named.paths,
        caps=caps,
        roles=dict.fromkeys(named.sources, "evaluation"),
        chunk_chars=size,
        chunk_overlap=overlap,
        seed=seed,
    )
    return build_trace(spec, data_dir=data_dir, cache_dir=cache_dir)


def _chunking(model: LoadedModel, model_dir: Path, keep_overlap: bool) -> tuple[int, int]:
    """The training trace's chunking; the serving default when it is unknown and unneeded."""
    try:
        spec = training_spec(model.meta, model_dir)
    except DataError:
        if not keep_overlap:
            raise
        settings = ServeSettings()
        spec = {"chunk_chars": settings.chunk_chars, "chunk_overlap": settings.chunk_overlap}
    return int(spec["chunk_chars"]), int(spec["chunk_overlap"])


def _score(model: LoadedModel, frame: pd.DataFrame) -> pd.DataFrame:
    """Score every chunk at its row's position and max-pool to prompts, as the run pools
    its OOF scores.

    A detector that reads positions reads a tool result or a document as one,
    as the shipped threshold was placed (``gatebench train`` scores its held-out
    sources at their rows' positions). ``driving`` is the text of each prompt's
    highest-scoring chunk (its first, on a tie); it is read by :func:`_nearest`
    and never written out.
    """
    positions = row_positions(frame)
    where = None if positions is None else [str(p) for p in positions]
    scores = np.asarray(
        score_detector(model.detector, frame["text"].tolist(), where), dtype=np.float64
    )
    rows = frame[["sample_id", "source", "label", "language", "position", "text"]].assign(
        score=scores
    )
    grouped = rows.groupby("sample_id", sort=True, dropna=False)
    pooled = grouped.agg(
        source=("source", "first"),
        label=("label", "first"),
        language=("language", "first"),
        position=("position", "first"),
        score=("score", "max"),
    )
    pooled["driving"] = rows.loc[grouped["score"].idxmax(), "text"].to_numpy()
    return pooled.reset_index()


def _nearest(
    model: LoadedModel, train: Trace | None, prompts: pd.DataFrame, threshold: float
) -> tuple[list[dict[str, object]], str | None]:
    """The training sources the never-seen errors sit next to, or why there are none."""
    if train is None:
        return [], "not computed: --keep-overlap skips rebuilding the training trace"
    if not callable(getattr(model.detector, "nearest_training", None)):
        return [], "not computed: only Gate keeps its training texts' vectors to search"
    flagged = prompts["score"].to_numpy() >= threshold
    label = prompts["label"].to_numpy()
    texts = prompts["driving"].to_numpy(dtype=object)
    false_alarms = [str(t) for t in texts[(label == 0) & flagged]]
    missed = [str(t) for t in texts[(label == 1) & ~flagged]]
    if not false_alarms and not missed:
        return [], "no false alarm and no missed attack to look up"
    try:
        return errors_lean_on(model.detector, train, false_alarms, missed), None
    except ValueError as exc:
        return [], f"not computed: {exc}"


def evaluate_model(
    model_dir: Path,
    sources: Sequence[str],
    *,
    out: Path,
    data_dir: Path | None = None,
    cache_dir: Path | None = None,
    caps: dict[str, int | None] | None = None,
    files: FileOptions | None = None,
    keep_overlap: bool = False,
    seed: int = 20260527,
    n_resamples: int = 2000,
) -> UnseenResult:
    """Score a model directory on ``sources``; write ``out/result.json``, ``oof.parquet``, manifest.

    Parameters
    ----------
    model_dir : Path
        From ``gatebench train``.
    sources : sequence of str
        Registered source names, presets, or paths to a user's files.
    out : Path
        Output directory (created).
    caps : dict, optional
        Rows kept per source (``None`` keeps all); default the cards' caps. A
        source capped in the training trace has rows the model never saw.
    files : FileOptions, optional
        How files named in ``sources`` are read (columns, label spellings).
    keep_overlap : bool
        Score prompts the training trace already holds instead of excluding them.
    seed, n_resamples
        Root seed and B of the intervals.

    Returns
    -------
    UnseenResult
        What ``out/result.json`` holds.
    """
    output_directory(out, "--out")
    t0 = time.perf_counter()
    model = load_model(model_dir)
    threshold = model.threshold
    timings: dict[str, float] = {}
    chunking = _chunking(model, model_dir, keep_overlap)
    data = _data_trace(
        chunking,
        sources,
        caps=caps or {},
        files=files or FileOptions(),
        seed=seed,
        data_dir=data_dir,
        cache_dir=cache_dir,
    )
    frame = data.frame
    timings["data"] = time.perf_counter() - t0
    excluded: dict[str, int] = {}
    train: Trace | None = None
    overlap = Overlap(checked=False, excluded=False, how="not checked (--keep-overlap)")
    if not keep_overlap:
        t1 = time.perf_counter()
        train = training_trace(model.meta, model_dir, data_dir=data_dir, cache_dir=cache_dir)
        seen = overlapping_prompts(train.frame, frame, int(train.info["spec"]["seed"]))
        hit = frame["sample_id"].astype(str).isin(seen)
        per = frame.loc[hit].drop_duplicates("sample_id")["source"].value_counts()
        excluded = {str(k): int(v) for k, v in sorted(per.items())}
        frame = frame.loc[~hit].reset_index(drop=True)
        overlap = Overlap(
            checked=True,
            excluded=True,
            prompts=len(seen),
            by_source=excluded,
            how="composite group (exact normalised text, MinHash cluster, parent or prompt id) "
            f"shared with the model's training trace {train.trace_id[:12]}",
        )
        timings["overlap"] = time.perf_counter() - t1
    if frame.empty:
        raise ConfigError(
            f"every prompt of {', '.join(sources)} is in the model's training trace; evaluate "
            "on other sets, or pass --keep-overlap to score them anyway"
        )
    t2 = time.perf_counter()
    prompts = _score(model, frame)
    timings["score"] = time.perf_counter() - t2
    y = prompts["label"].to_numpy(np.int64)
    s = prompts["score"].to_numpy(np.float64)
    src = prompts["source"].to_numpy(object)
    t3 = time.perf_counter()
    boot = {"seed": seed, "n_resamples": n_resamples}
    languages, few = by_language(prompts, threshold=threshold, **boot)
    positions, few_positions = by_position(prompts, threshold=threshold, **boot)
    pooled, by_source = rates_at(y, s, src, threshold, excluded=excluded, **boot)
    in_dist = in_distribution(model, threshold)
    timings["metrics"] = time.perf_counter() - t3
    t4 = time.perf_counter()
    nearest, nearest_note = _nearest(model, train, prompts, threshold)
    timings["nearest"] = time.perf_counter() - t4
    refused = refused_record(data.info["malformed_rows"])
    result = UnseenResult(
        model=ModelInfo(
            dir=str(model_dir),
            sha256=model_sha256(model_dir),
            detector=dict(model.meta["detector"]),
            threshold=threshold,
            target_fpr=model.meta.get("target_fpr"),
            trace_id=model.meta.get("trace_id"),
            rule=shipped_rule(model.meta),
        ),
        data_trace_id=data.trace_id,
        sources=sorted(set(src.tolist())),
        overlap=overlap,
        pooled=pooled,
        by_source=by_source,
        by_language=jsonable(languages),
        by_language_skipped=few,
        by_position=jsonable(positions),
        by_position_skipped=few_positions,
        in_distribution=in_dist,
        in_distribution_run=model.meta.get("evaluation_run"),
        nearest=jsonable(nearest),
        nearest_note=nearest_note,
        refused_rows=refused["rows"],
        refused=refused["first"],
        seed=seed,
        n_resamples=n_resamples,
    )
    timings["total"] = time.perf_counter() - t0
    result = result.model_copy(
        update={"timings_seconds": {k: round(v, 3) for k, v in timings.items()}}
    )
    out.mkdir(parents=True, exist_ok=True)
    prompts.drop(columns="driving").to_parquet(out / "oof.parquet", index=False)
    artifacts.write_json(
        out / "manifest.json",
        {
            "schema_version": result.schema_version,
            "environment": artifacts.environment(),
            "model_dir": str(model_dir),
            "model_sha256": result.model.sha256,
            "sources": list(sources),
            "caps": caps or {},
            "files": dataclasses.asdict(files or FileOptions()),
            "keep_overlap": keep_overlap,
            "data_trace": data.info,
        },
    )
    artifacts.write_json(out / "result.json", result.model_dump(mode="json"))
    return result
