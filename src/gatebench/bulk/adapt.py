"""A model adapted to a deployment's benign traffic: trained on part of it, tuned on the rest.

A threshold re-picked on a deployment's benign traffic holds its false-alarm
rate, but where the model ranks that traffic above attacks on its topics it
does so by giving up recall. Training on the traffic changes the ranking
itself (benchmarks/RESULTS.md, "Training on your own benign traffic"). Done by
hand that takes a split, a ``gatebench train`` with every option of the first
model repeated, and a ``gatebench tune-threshold`` on the other part; each step
is a place to leak the tuning rows into the fit. Here the sample is split with
whole near-duplicate clusters on one side (:mod:`gatebench.bulk.traffic_split`),
the model's recipe is read from its manifest (detector, parameters, sources,
options, seed, how its threshold was chosen) and refitted with the training
part added as a training source, and the threshold is re-picked on the other
part (:func:`gatebench.bulk.retune.tune_threshold`). The first model is read
on the same part, so the record says what the adaptation changed.

The two parts are written beside the new model directory (``OUT.traffic/``):
the model's manifest records the training part's path, as it records every
file it was trained on, and a later overlap check reads it there.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gatebench import api
from gatebench.artifacts import write_json
from gatebench.bulk.io import file_digest
from gatebench.bulk.retune import recall_at, tune_threshold, unseen_scores
from gatebench.bulk.traffic_bound import bound_at, check_bound, min_prompts
from gatebench.bulk.traffic_split import SampleRows, read_sample, split_rows, write_rows
from gatebench.config import RunConfig, new_directory
from gatebench.conversation import ScanPolicy
from gatebench.errors import ConfigError
from gatebench.modeldir import MANIFEST, read_manifest
from gatebench.parallel import Executor
from gatebench.trace import Trace, TraceSpec
from gatebench.unseen.overlap import training_spec, training_trace

__all__ = ["ADAPT_DIR", "adapt", "source_name"]

#: Where the first model's readings go, inside the new model directory.
ADAPT_DIR = "adapted"
#: How the tuning part is read back: as :func:`~gatebench.bulk.traffic_split.read_sample`
#: writes its records.
_TUNE_READING = {"text_field": "text", "messages_field": "messages", "id_field": "id",
                 "position_field": "position"}  # fmt: skip


def _check(model_dir: Path, out: Path, split_dir: Path, train_share: float, draw: int) -> None:
    if not 0.0 < train_share < 1.0:
        raise ConfigError(
            f"--train-share {train_share!r}: give the share of the sample to train on, in "
            "(0, 1), e.g. 0.5"
        )
    if isinstance(draw, bool) or not isinstance(draw, int) or draw < 0:
        raise ConfigError(
            f"--split-draw {draw!r}: give a whole number >= 0 (0: the model's own split)"
        )
    if out.resolve() == model_dir.resolve():
        raise ConfigError(f"--out {out} is the model directory itself; name a new directory")
    new_directory(out, "--out")
    new_directory(split_dir, "--split-dir")


def source_name(out: Path) -> str:
    """The training part's source name: the new directory's name, then ``-traffic``."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", out.resolve().name).strip("-.") or "model"
    return f"{stem}-traffic"


def _training_rows(
    files: dict[str, Any], texts: list[str], positions: list[str], labels: list[str]
) -> list[dict[str, Any]]:
    """The training part as rows a trace reads with the first model's file options."""
    rows: list[dict[str, Any]] = []
    place = files["position_field"] or "position"
    for i, (text, position, label) in enumerate(zip(texts, positions, labels, strict=True)):
        row: dict[str, Any] = {files["text_field"]: text, place: position}
        if files["assume_label"] is None:
            row[files["label_field"]] = label
        if files["id_field"]:
            row[files["id_field"]] = i
        if files["group_field"]:
            row[files["group_field"]] = f"traffic-{i}"
        rows.append(row)
    return rows


def _recipe(meta: dict[str, Any], spec: dict[str, Any], train: Path, name: str,
            **run: Any) -> tuple[RunConfig, dict[str, Any]]:  # fmt: skip
    """The first model's recipe, with ``train`` added as a training source.

    Returns the run config and how the first model's threshold was chosen, as
    :func:`gatebench.api.train` options. ``run`` holds the options of this
    machine (data and cache directories, workers, where a headline run goes).
    """
    files = dict(spec["files"])
    # The file options are one for every file of a trace: the traffic file is read with them.
    if files["assume_label"] == "attack":
        raise ConfigError(
            "the model was trained with --assume-label attack, which would label the traffic "
            "as attacks too; give its attack files a label column and retrain it first"
        )
    if files["source_name"] is not None:
        raise ConfigError(
            f"the model was trained on a file named {files['source_name']!r} with "
            "--source-name, a name the trace would give the traffic file too; retrain it "
            "with the file renamed instead of --source-name"
        )
    # Reading the recorded spec registers its own files under their recorded names; the
    # traffic file's name is its stem.
    recorded = TraceSpec(**{**spec, "sources": tuple(spec["sources"])})
    op = meta.get("operating_point") or {}
    unseen = "mean_fpr" in op
    config = RunConfig(
        detector=meta["detector"]["name"], detector_params=meta["detector"].get("params", {}),
        sources=(*recorded.sources, str(train)), caps=spec.get("caps", {}),
        roles={**spec.get("roles", {}), name: "training"},
        **{k: spec[k] for k in ("embedded", "embedded_payloads", "twins", "persona_twins",
                                 "persona_halves", "quote_twins", "documents", "chunk_chars",
                                 "chunk_overlap", "skip_missing", "seed") if k in spec},
        **files,
        fpr=float(meta["target_fpr"]) if not unseen else RunConfig.model_fields["fpr"].default,
        folds=int(op.get("n_folds", RunConfig.model_fields["folds"].default)),
        passes=("strat",), diagnostics="none", bootstrap=200, **run,
    )  # fmt: skip
    if unseen:
        how = {"operating_point": "unseen", "unseen_fpr": float(op["target_fpr"]),
               "unseen_holdout": str(op["holdout"])}  # fmt: skip
    else:
        how = {"operating_point": "headline"}
    return config, how


def adapt(
    model_dir: Path,
    benign_path: Path,
    out: Path,
    *,
    train_share: float = 0.5,
    target_fpr: float = 0.01,
    confidence: float = 0.95,
    split_dir: Path | None = None,
    attacks_path: Path | None = None,
    train_attacks: bool = False,
    split_draw: int = 0,
    text_field: str = "text",
    messages_field: str = "messages",
    id_field: str | None = None,
    position_field: str | None = None,
    assume_position: str = "user",
    batch_rows: int = 10_000,
    executor: Executor | None = None,
    policy: ScanPolicy | None = None,
    n_jobs: int | None = None,
    data_dir: Path | None = None,
    cache_dir: Path = Path(".cache/gatebench"),
) -> dict[str, Any]:
    """Write ``out``: ``model_dir``'s recipe refitted with part of the sample, tuned on the rest.

    Parameters
    ----------
    model_dir : Path
        A model directory from ``gatebench train`` that records its training
        trace (read, never written).
    benign_path : Path
        ``.parquet`` or ``.jsonl`` file of benign texts or conversations.
    out : Path
        The new model directory; must not exist or be empty.
    train_share : float
        Share of the sample's usable rows to train on, in whole near-duplicate
        clusters; the rest pick the threshold.
    target_fpr, confidence : float
        As :func:`gatebench.bulk.retune.tune_threshold`, on the tuning part.
    split_dir : Path, optional
        Where the two parts are written; default ``OUT.traffic`` beside ``out``.
    attacks_path : Path, optional
        A file of attacks: recall of the first model at its threshold and of
        the new one at both of its thresholds, on the attacks not trained on.
    train_attacks : bool
        Split the attacks as the sample is split (``train_share``, whole
        clusters) and train on one part, labelled attack: a red team's
        attacks teach the refit their kind, and recall is read on the rest.
    split_draw : int
        Which seeded order the clusters are split in: 0 is the model's own;
        another number gives another split of the same clusters, to check
        that a gain holds on a second draw.
    text_field, messages_field, id_field, position_field, assume_position, batch_rows,
    executor, policy
        How the sample (and the attacks) are read and scored, as
        :func:`gatebench.bulk.score_file`.
    n_jobs, data_dir, cache_dir
        The refit's workers, where its sources are, and the trace cache.

    Returns
    -------
    dict
        ``{"adapted": ..., "traffic_threshold": ...}``, as written into the
        new manifest.

    Raises
    ------
    ConfigError
        A bad option, an occupied directory, or a tuning part too small for
        the bound (before any fitting; the message gives the rows needed).
    DataError
        The model records no training trace, or its files cannot be read.
    """
    split_dir = split_dir or out.with_name(out.name + ".traffic")
    _check(model_dir, out, split_dir, train_share, split_draw)
    check_bound(target_fpr, confidence)
    if train_attacks and attacks_path is None:
        raise ConfigError("--train-attacks trains on part of --attacks FILE; give the file")
    meta = read_manifest(model_dir)
    spec = training_spec(meta, model_dir)
    if train_attacks and spec["files"]["assume_label"] is not None:
        raise ConfigError(
            f"--train-attacks: the model read its files with --assume-label "
            f"{spec['files']['assume_label']}, so a traffic file cannot carry both labels; "
            "drop --train-attacks, or retrain the model with a label column in its files"
        )
    reading = {"text_field": text_field, "messages_field": messages_field, "id_field": id_field,
               "position_field": position_field, "assume_position": assume_position,
               "batch_rows": batch_rows}  # fmt: skip
    seed = int(spec["seed"])
    benign = _split(benign_path, reading, train_share, seed, "split", split_draw)
    _enough(benign, min_prompts(target_fpr, confidence), target_fpr, confidence)
    attacks = None
    if attacks_path is not None:
        attacks = _split(attacks_path, reading, train_share if train_attacks else 0.0, seed,
                         "attacks", split_draw)  # fmt: skip
        if not (~attacks.to_train).any():
            raise ConfigError(
                f"--attacks {attacks.path}: no usable attack is left to read recall on "
                f"({attacks.sample.rows_read:,} rows read); give more attacks or lower "
                "--train-share"
            )
    name = source_name(out)
    train_path, tune_path = split_dir / f"{name}.jsonl", split_dir / "tune.jsonl"
    held_path = split_dir / "attacks.jsonl"
    staging = out.with_name(out.name + ".trained")
    run_dir = out.with_name(out.name + ".run")
    config, how = _recipe(meta, spec, train_path, name, data_dir=data_dir, cache_dir=cache_dir,
                          n_jobs=n_jobs, out=run_dir)  # fmt: skip
    # The first model is read on the tuning part through its rebuilt trace: a trace that
    # cannot be rebuilt (files gone or changed) is refused here, before anything is written.
    first_trace = training_trace(meta, model_dir, data_dir=data_dir, cache_dir=cache_dir)
    split_dir.mkdir(parents=True, exist_ok=True)
    rows = benign.training_rows(spec["files"], "benign")
    rows += attacks.training_rows(spec["files"], "attack") if attacks is not None else []
    write_rows(train_path, rows)
    write_rows(tune_path, benign.held())
    if attacks is not None:
        write_rows(held_path, attacks.held())
    readings = out.with_name(out.name + ".first")
    for path in (staging, run_dir, readings):
        shutil.rmtree(path, ignore_errors=True)
    scoring: dict[str, Any] = {
        **_TUNE_READING, "batch_rows": batch_rows, "executor": executor, "policy": policy,
    }  # fmt: skip
    held = held_path if attacks is not None else None
    first = _first_model(model_dir, meta, first_trace, tune_path, held, readings, scoring,
                         confidence)  # fmt: skip
    # A first model fitted with prompts held out (for `bench latency`) is refitted so too.
    held_share = float((meta.get("holdout") or {}).get("fraction", 0.0))
    try:
        api.train(config, staging, holdout=held_share, **how)
        record = tune_threshold(
            staging, tune_path, out, target_fpr=target_fpr, confidence=confidence,
            attacks_path=held, data_dir=data_dir, cache_dir=cache_dir, **scoring,
        )  # fmt: skip
    except BaseException:
        shutil.rmtree(readings, ignore_errors=True)
        raise
    finally:
        for path in (staging, run_dir):
            shutil.rmtree(path, ignore_errors=True)
    readings.rename(out / ADAPT_DIR)
    adapted = {
        "from_model": str(model_dir.resolve()),
        **benign.record(),
        "train_share": train_share,
        "seed": seed,
        "split_draw": split_draw,
        "split": "whole near-duplicate clusters to one side, in a seeded random order",
        "train": {"path": str(train_path.resolve()), "source": name, "rows": len(rows)},
        "tune": {
            "path": str(tune_path.resolve()),
            "rows": benign.n_held,
            **file_digest(tune_path),
        },
        "refit_threshold": how,
        "first_model": first,
    }
    if attacks is not None:
        adapted["attacks"] = {
            **attacks.record(), "trained_on": bool(train_attacks),
            "held": {"path": str(held_path.resolve()), "rows": attacks.n_held},
        }  # fmt: skip
    new_meta = read_manifest(out)
    write_json(out / MANIFEST, {**new_meta, "adapted": adapted})
    return {"adapted": adapted, "traffic_threshold": record}


@dataclass
class _Parts:
    """A file's usable rows, and which of them go to the training part."""

    path: Path
    sample: SampleRows
    to_train: np.ndarray
    clusters: int

    @property
    def n_train(self) -> int:
        return int(self.to_train.sum())

    @property
    def n_held(self) -> int:
        return len(self.to_train) - self.n_train

    def held(self) -> list[dict[str, Any]]:
        """The rows kept out of the fit, as read (to be scored)."""
        return [r for r, keep in zip(self.sample.records, self.to_train, strict=True) if not keep]

    def training_rows(self, files: dict[str, Any], label: str) -> list[dict[str, Any]]:
        """The rows to fit on, as a trace reads them, labelled ``label``."""
        keep = self.to_train
        texts = [t for t, k in zip(self.sample.texts, keep, strict=True) if k]
        positions = [p for p, k in zip(self.sample.positions, keep, strict=True) if k]
        return _training_rows(files, texts, positions, [label] * len(texts))

    def record(self) -> dict[str, Any]:
        """What was read and how it was split, for the manifest."""
        return {
            "input": {"path": str(self.path.resolve()), **file_digest(self.path)},
            "rows_read": self.sample.rows_read,
            "rows_rejected": sum(self.sample.rejected.values()),
            "rejected_by_reason": dict(self.sample.rejected),
            "clusters": self.clusters,
            "rows_trained_on": self.n_train,
        }


def _split(
    path: Path, reading: dict[str, Any], share: float, seed: int, stream: str, draw: int
) -> _Parts:
    """Read ``path`` and split it (order ``draw``); ``share`` 0 keeps every row out of the fit."""
    sample = read_sample(path, reading)
    if share == 0.0:
        return _Parts(path, sample, np.zeros(len(sample.texts), dtype=bool), 0)
    to_train, clusters = split_rows(sample.texts, share, seed, stream, draw)
    return _Parts(path, sample, to_train, clusters)


def _enough(parts: _Parts, need: int, target_fpr: float, confidence: float) -> None:
    """Refuse, before any fitting, a split that leaves nothing to train on or too few to tune."""
    if parts.n_train == 0 or parts.n_held < need:
        s = parts.sample
        raise ConfigError(
            f"{parts.path}: {len(s.texts):,} usable benign rows "
            f"({sum(s.rejected.values()):,} of {s.rows_read:,} rejected) split into "
            f"{parts.n_train:,} to train on and {parts.n_held:,} to tune on; an FPR bound of "
            f"{target_fpr:g} at {confidence:g} confidence needs at least {need:,} to tune "
            "on: add benign rows, lower --train-share, raise --target-fpr or lower "
            "--confidence"
        )


def _first_model(
    model_dir: Path,
    meta: dict[str, Any],
    train: Trace,
    tune_path: Path,
    attacks_path: Path | None,
    where: Path,
    scoring: dict[str, Any],
    confidence: float,
) -> dict[str, Any]:
    """The first model on the tuning part (and the attacks) at its own threshold.

    ``train`` is its rebuilt training trace, which sets aside the rows it was
    trained on. The per-row scores are written to ``where``, which becomes the
    new model directory's ``adapted/``.
    """
    threshold = float(meta["threshold"])
    where.mkdir(parents=True)
    files = [(tune_path, where / "first-model-tune.parquet")]
    if attacks_path is not None:
        files.append((attacks_path, where / "first-model-attacks.parquet"))
    read = unseen_scores(model_dir, files, scoring, data_dir=None, cache_dir=None, train=train)
    scores, aside = read[0]
    first: dict[str, Any] = {
        "threshold": threshold,
        "tune_rows_trained_on": aside,
        "tune": bound_at(scores, threshold, confidence).as_dict(),
    }
    if attacks_path is not None:
        hits, trained = read[1]
        first["attacks"] = {**recall_at(hits, threshold), "rows_trained_on": trained}
    return first
