"""The whole pipeline, top to bottom. ``cli`` and ``serve`` call only this and the registries."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gatebench.config import RunConfig, not_a_directory
from gatebench.data import DATASETS, get_loader
from gatebench.data.resolve import data_dir_from_env, resolve_root
from gatebench.errors import SourceMissingError
from gatebench.modeldir import HOLDOUT_FILE, load_model, save_model
from gatebench.progress import Progress
from gatebench.seeding import child_seed
from gatebench.served import ServedModel, ServeSettings
from gatebench.trace import Trace, TraceSpec, build_trace, prompts_from_chunks, save_trace

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "build_trace_from_options",
    "detect",
    "evaluate",
    "list_sources",
    "served_model",
    "show_source",
    "train",
]


def _card_dict(name: str) -> dict[str, Any]:
    card = get_loader(name).card
    out = asdict(card)
    out["family"] = str(card.family)
    out["role"] = str(card.role)
    out["primary_metric"] = str(card.primary_metric)
    return out


def list_sources(*, data_dir: Path | str | None = None) -> list[dict[str, Any]]:
    """Every registered source with its card, availability and rows by label.

    Available sources are loaded (before caps) to count their rows; hub-only
    sources are never downloaded here.
    """
    mirror = data_dir_from_env(data_dir)
    rows = []
    for name in DATASETS.names():
        card = get_loader(name).card
        row = {k: v for k, v in _card_dict(name).items() if k != "files"}
        row.update(available=False, attack=None, benign=None, malformed=None, root=None)
        row["origin"] = DATASETS.origin(name)
        try:
            root = resolve_root(card, mirror, allow_hub=False)
        except SourceMissingError as exc:
            row["missing"] = str(exc)
        else:
            result = get_loader(name).load(root, seed=0)
            labels = Counter(s.label for s in result.samples)
            row.update(
                available=True,
                attack=labels[1],
                benign=labels[0],
                malformed=len(result.malformed),
                root=str(root),
            )
        rows.append(row)
    return rows


def show_source(name: str, *, data_dir: Path | str | None = None) -> dict[str, Any]:
    """One source's card, location, counts and a few example rows of each label."""
    loader = get_loader(name)
    info: dict[str, Any] = {
        "card": _card_dict(name),
        "root": None,
        "missing": "",
        "counts": {},
        "malformed": 0,
        "examples": [],
    }
    try:
        root = resolve_root(loader.card, data_dir_from_env(data_dir), allow_hub=False)
    except SourceMissingError as exc:
        info["missing"] = str(exc)
        return info
    result = loader.load(root, seed=0)
    info["root"] = str(root)
    info["counts"] = {
        "attack": sum(s.label for s in result.samples),
        "benign": sum(1 - s.label for s in result.samples),
    }
    info["malformed"] = len(result.malformed)
    for label in (1, 0):
        picks = [s for s in result.samples if s.label == label][:3]
        info["examples"].extend(
            {"label": s.label, "text": s.text, "id": s.sample_id} for s in picks
        )
    return info


def build_trace_from_options(
    *,
    sources: list[str] | None = None,
    caps: dict[str, int | None] | None = None,
    roles: dict[str, str] | None = None,
    skip_missing: bool = False,
    data_dir: Path | str | None = None,
    seed: int | None = None,
    chunk_chars: int = 4000,
    chunk_overlap: int = 400,
    out: Path | None = None,
    cache_dir: Path | None = None,
) -> Trace:
    """Build a trace from CLI-style options; optionally also write it to ``out``."""
    spec = TraceSpec(
        sources=tuple(sources) if sources else ("default",),
        caps=caps or {},
        roles=roles or {},
        chunk_chars=chunk_chars,
        chunk_overlap=chunk_overlap,
        seed=RunConfig().seed if seed is None else seed,
        skip_missing=skip_missing,
    )
    trace = build_trace(spec, data_dir=data_dir, cache_dir=cache_dir)
    if out is not None:
        save_trace(trace, out)
    return trace


def evaluate(config: RunConfig, *, progress: Progress | None = None) -> Path:
    """Run a whole evaluation and write its run directory.

    Steps: build (or load) the trace; compute composite group keys; assign the
    StratifiedKFold and StratifiedGroupKFold folds; fit and score a fresh
    detector per fold (checkpointed); max-pool chunks to prompts; choose the
    operating point and compute every metric, interval and calibration table;
    write the manifest, OOF table, folds and result.

    Returns
    -------
    Path
        The run directory.
    """
    import numpy as np

    from gatebench import artifacts, cv, summary
    from gatebench.detectors import DetectorSpec, make_detector
    from gatebench.diagnostics import DiagnosticContext, run_diagnostics
    from gatebench.split import assign_folds, fold_label_marginals
    from gatebench.trace import composite_groups, load_trace, scored_rows

    progress = progress or Progress()
    detector = DetectorSpec(config.detector, dict(config.detector_params))
    # A misspelt detector or parameter fails here, before the trace is built
    # and before a run directory is created.
    make_detector(detector, seed=config.seed)
    spec = _trace_spec(config)
    with progress.step("trace"):
        trace = (
            load_trace(config.trace_dir)
            if config.trace_dir
            else build_trace(spec, data_dir=config.data_dir, cache_dir=config.cache_dir)
        )
    frame = trace.frame
    labels = frame["label"].to_numpy(dtype=np.int64)
    scored = scored_rows(frame)
    _check_two_classes(labels[scored])
    run_dir = config.out or artifacts.new_run_dir(config.runs_dir, trace.trace_id, detector.name)
    run_dir.mkdir(parents=True, exist_ok=True)

    with progress.step("groups"):
        groups = composite_groups(frame, config.seed)
    folds = assign_folds(
        labels,
        groups.groups,
        scored=scored,
        passes=tuple(p for p in ("strat", "sgk") if p == "strat" or p in config.passes),
        n_splits=config.folds,
        seeds={p: child_seed(config.seed, "folds", p) for p in ("strat", "sgk")},
    )
    tasks = [
        t
        for name, f in folds.items()
        for t in cv.make_tasks(name, f, labels, detector, seed=config.seed)
    ]
    texts = frame["text"].to_numpy(dtype=object)
    with progress.folds(len(tasks)) as on_done, _audit_dir(run_dir / "audit"):
        results = cv.run_cv(
            texts,
            labels,
            tasks,
            checkpoint_dir=run_dir / "checkpoints",
            context=trace.trace_id,
            backend=config.backend,
            n_jobs=config.n_jobs,
            scheduler=config.scheduler,
            on_done=on_done,
        )
    chunks = cv.chunk_table(frame, results)
    prompts = cv.pool_to_prompts(chunks, frame)
    primary = {
        n: str(get_loader(n).card.primary_metric) for n in frame.loc[scored, "source"].unique()
    }
    with progress.step("metrics"):
        numbers = summary.summarise(
            prompts,
            results,
            labels,
            primary_metrics=primary,
            fpr=config.fpr,
            seed=config.seed,
            n_resamples=config.bootstrap,
            backend=config.backend,
            scheduler=config.scheduler,
        )

    with progress.step("diagnostics"):
        diagnostics = run_diagnostics(
            DiagnosticContext(
                frame=frame,
                prompts=prompts,
                chunks=chunks,
                results=results,
                groups=groups,
                labels=labels,
                detector=detector,
                folds=folds,
                seed=config.seed,
                fpr=config.fpr,
                theta_op=float(numbers["operating_point"]["threshold"]),
                numbers=numbers,
                primary_metrics=primary,
                backend=config.backend,
                n_jobs=config.n_jobs,
                scheduler=config.scheduler,
                n_resamples=config.bootstrap,
                trace_id=trace.trace_id,
            ),
            tier=config.diagnostics,
        )

    artifacts.write_oof(run_dir, prompts, chunks)
    artifacts.write_json(run_dir / "trace_info.json", trace.info)
    artifacts.write_json(
        run_dir / "folds.json",
        {
            name: {
                "n_splits": config.folds,
                "marginals": fold_label_marginals(labels, f),
                "folds": numbers["fold_thresholds"][name]["folds"],
            }
            for name, f in folds.items()
        },
    )
    manifest = {
        "schema_version": artifacts.SCHEMA_VERSION,
        "environment": artifacts.environment(),
        "config": config.model_dump(mode="json"),
        "detector": detector.as_dict(),
        "trace": {
            k: trace.info[k]
            for k in (
                "trace_id",
                "spec",
                "sources",
                "per_source",
                "skipped_sources",
                "licence_flags",
                "chunking",
                "n_rows",
                "n_prompts",
                "labels",
                "roles",
            )
            if k in trace.info
        },
        "malformed_rows": len(trace.info["malformed_rows"]),
        "seeds": {
            "root": config.seed,
            "derivation": "numpy SeedSequence(root, spawn_key=crc32(name path))",
        },
        "lsh": groups.params.as_dict(),
        "timings_seconds": progress.timings,
    }
    artifacts.write_json(run_dir / "manifest.json", manifest)
    result = {
        "schema_version": artifacts.SCHEMA_VERSION,
        "run_dir": run_dir.name,
        "trace": {
            "trace_id": trace.trace_id,
            "n_prompts": trace.info["n_prompts"],
            "n_rows": trace.info["n_rows"],
            "labels": trace.info["labels"],
            "roles": trace.info.get("roles", {}),
            "composition": trace.composition().to_dict(orient="records"),
            "duplicates": trace.info["duplicates"],
            "skipped_sources": trace.info["skipped_sources"],
            "licence_flags": trace.info["licence_flags"],
        },
        "detector": detector.as_dict(),
        "config": {
            "fpr": config.fpr,
            "seed": config.seed,
            "folds": config.folds,
            "bootstrap": config.bootstrap,
            "passes": list(config.passes),
        },
        "groups": groups.stats.as_dict(),
        **numbers,
        "diagnostics": [d.as_dict() for d in diagnostics],
        "comparisons": {},
    }
    artifacts.write_json(run_dir / "result.json", result)
    # Comparisons read the run directory, so they come after the first write.
    with progress.step("comparisons"):
        result["comparisons"] = _comparisons(run_dir)
    artifacts.write_json(run_dir / "result.json", result)
    return run_dir


def _comparisons(run_dir: Path) -> dict[str, Any]:
    from gatebench.compare import build_comparisons
    from gatebench.errors import GatebenchError

    try:
        return dict(build_comparisons(run_dir))
    except GatebenchError as exc:
        # A missing published table must not sink an evaluation; say why instead.
        return {"error": str(exc)}


@contextmanager
def _audit_dir(path: Path) -> Iterator[None]:
    """Point third-party adapters' failure ledger at the run unless the user chose one."""
    key = "GATEBENCH_AUDIT_DIR"
    if os.environ.get(key):
        yield
        return
    os.environ[key] = str(path)
    try:
        yield
    finally:
        os.environ.pop(key, None)


def _check_two_classes(labels: Any) -> None:
    from gatebench.errors import ConfigError

    present = set(labels.tolist())
    if present != {0, 1}:
        only = "attack" if present == {1} else "benign"
        missing = "benign" if only == "attack" else "attack"
        raise ConfigError(
            f"the trace has only {only} rows (label {1 if only == 'attack' else 0}); "
            f"add sources with {missing} rows (--sources) so that F1 and FPR are defined"
        )


def train(
    config: RunConfig, model_dir: Path, *, run_dir: Path | None = None, holdout: float = 0.0
) -> Path:
    """Fit the configured detector on the whole trace and write a model directory.

    The shipped threshold is the headline operating point chosen on OOF scores:
    taken from ``run_dir`` when given (its trace must match), else from a fresh
    StratifiedKFold evaluation run first. The final model then fits on the
    whole trace with the same 85/15 inner split the folds use.

    With ``holdout`` > 0 a seeded, label-stratified share of the prompts (all
    of a prompt's chunks together) is kept out of the fit and written whole to
    ``MODEL_DIR/holdout.jsonl``: texts the shipped model never saw, which
    ``gatebench bench latency`` then times by default. A model timed on its own
    training texts routes a different share of them to the deferred stage
    than it routes unseen traffic.
    """
    import numpy as np

    from gatebench.artifacts import read_result
    from gatebench.detectors import DetectorSpec, make_detector
    from gatebench.errors import ConfigError
    from gatebench.split import inner_split

    try:
        not_a_directory(model_dir)
    except ValueError as exc:
        raise ConfigError(f"MODEL_DIR: {exc}") from None
    if run_dir is None:
        fast = config.model_copy(update={"passes": ("strat",), "diagnostics": "none"})
        run_dir = evaluate(fast)
    result = read_result(run_dir)
    if result["detector"]["name"] != config.detector:
        raise ConfigError(
            f"--run {run_dir} evaluated {result['detector']['name']!r}, not {config.detector!r}; "
            "pass a run of the same detector or omit --run"
        )
    trace = build_trace(_trace_spec(config), data_dir=config.data_dir, cache_dir=config.cache_dir)
    if trace.trace_id != result["trace"]["trace_id"]:
        raise ConfigError(
            f"--run {run_dir} used trace {result['trace']['trace_id'][:12]}…, but these options "
            f"give {trace.trace_id[:12]}…; use the same sources, caps, chunking and seed"
        )
    frame, held = split_holdout(trace.frame, holdout, child_seed(config.seed, "final", "holdout"))
    labels = frame["label"].to_numpy(dtype=np.int64)
    texts = frame["text"].tolist()
    tr, va = inner_split(
        labels, valid_fraction=0.15, seed=child_seed(config.seed, "final", "inner")
    )
    spec = DetectorSpec(config.detector, dict(config.detector_params))
    detector = make_detector(spec, seed=child_seed(config.seed, "final", "detector"))
    detector.fit([texts[i] for i in tr], labels[tr], valid=([texts[i] for i in va], labels[va]))
    op = result["operating_point"]
    extra: dict[str, Any] = {"operating_point": op, "evaluation_run": str(run_dir)}
    if held is not None:
        overlap = int(trace.info["chunking"]["chunk_overlap"])
        extra["holdout"] = _write_holdout(model_dir, held, overlap, holdout)
    return save_model(
        detector,
        model_dir,
        spec=spec,
        threshold=op["threshold"],
        target_fpr=op["target_fpr"],
        trace_id=trace.trace_id,
        extra=extra,
    )


def split_holdout(
    frame: pd.DataFrame, fraction: float, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """``(rows to fit, held-out rows)``: a label-stratified share of whole prompts held out.

    Only evaluation prompts are held out; training-corpus rows always stay with
    the rows to fit.

    Parameters
    ----------
    frame : DataFrame
        A trace frame (``sample_id``, ``label``, one row per chunk); all of a
        prompt's chunks land on the same side.
    fraction : float
        Share of each label's prompts held out, in [0, 1); 0 holds out nothing.
    seed : int
        Seed of the draw.

    Returns
    -------
    (DataFrame, DataFrame or None)
        The rows to fit and the held-out rows (None when ``fraction`` is 0).
    """
    import numpy as np

    from gatebench.errors import ConfigError
    from gatebench.trace import scored_rows

    if not 0.0 <= fraction < 1.0:
        raise ConfigError(
            f"--holdout {fraction!r}: give the share of prompts to keep out, in [0, 1), e.g. 0.2"
        )
    if fraction == 0.0:
        return frame, None
    # Only evaluation prompts are held out: training corpora are fitted on, never scored.
    prompts = frame[scored_rows(frame)].groupby("sample_id", sort=True)["label"].first()
    rng = np.random.default_rng(seed)
    held: list[Any] = []
    for _, ids in prompts.groupby(prompts, sort=True):
        k = round(fraction * len(ids))
        held += rng.choice(ids.index.to_numpy(), size=k, replace=False).tolist()
    mask = frame["sample_id"].isin(set(held)).to_numpy()
    if mask.all() or not mask.any():
        raise ConfigError(
            f"--holdout {fraction}: leaves {'nothing to fit' if mask.all() else 'nothing held out'}"
            f" on this trace of {len(prompts)} prompts; choose a share between them"
        )
    return frame[~mask], frame[mask]


def _write_holdout(
    model_dir: Path, held: pd.DataFrame, overlap: int, fraction: float
) -> dict[str, Any]:
    """Write the held-out prompts, rebuilt whole from their chunks, as JSONL."""
    model_dir.mkdir(parents=True, exist_ok=True)
    firsts = held.sort_values(["sample_id", "chunk"]).groupby("sample_id", sort=True).first()
    texts = prompts_from_chunks(held, overlap)
    with (model_dir / HOLDOUT_FILE).open("w", encoding="utf-8") as fh:
        for (sid, row), text in zip(firsts.iterrows(), texts, strict=True):
            rec = {"sample_id": sid, "source": row["source"], "label": int(row["label"])}
            fh.write(json.dumps({**rec, "text": text}, ensure_ascii=False) + "\n")
    return {"fraction": fraction, "prompts": len(texts), "file": HOLDOUT_FILE}


def _trace_spec(config: RunConfig) -> TraceSpec:
    return TraceSpec(
        sources=config.sources,
        caps=config.caps,
        chunk_chars=config.chunk_chars,
        chunk_overlap=config.chunk_overlap,
        seed=config.seed,
        skip_missing=config.skip_missing,
        roles=dict(config.roles),
        embedded=config.embedded,
    )


def served_model(model_dir: Path, settings: ServeSettings | None = None) -> ServedModel:
    """Load a model directory as a :class:`gatebench.serve.ServedModel` (chunking included)."""
    loaded = load_model(model_dir)
    info = {
        "model_version": str(
            loaded.meta.get("environment", {}).get("packages", {}).get("gatebench")
        ),
        "trace_id": loaded.meta.get("trace_id"),
        "target_fpr": loaded.meta.get("target_fpr"),
        "detector_spec": loaded.meta.get("detector"),
        "heads": list(getattr(loaded.detector, "head_names", []) or []),
    }
    return ServedModel(loaded.detector, loaded.threshold, info, settings or ServeSettings())


def detect(model_dir: Path, texts: list[str]) -> list[dict[str, Any]]:
    """Score texts with a model directory: score, decision, stage, driving chunk, timings."""
    return list(served_model(model_dir).score_details(texts))
