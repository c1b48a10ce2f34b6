"""A model directory's threshold re-picked on a sample of the deployment's own benign traffic.

A shipped threshold is chosen on benign sources the model never saw, and the
FPR it gives differs from one such source to the next: the next source, a
deployment's traffic, may be flagged at several times the target. The one set
that tells what a deployment's FPR will be is a sample of that deployment's
benign traffic (prompts a reviewer cleared, or a period with no known
attack). Its labels are not needed beyond "benign". The sample is scored
exactly as ``gatebench score`` and ``serve`` score (windows, positions,
conversations), and the new threshold is the lowest whose FPR has an upper
confidence bound at most the target on it (:mod:`gatebench.bulk.traffic_bound`).

The result is a new model directory: the same fitted state, the new threshold,
and a ``traffic_threshold`` record of what chose it (the sample's digest,
rows read, scored and rejected, the bound at the previous and the new
threshold). The sample's per-row scores stay beside it as evidence. The input
model directory is never changed. Rows the model was trained on (a traffic
file given to ``gatebench train`` and then to this command) are set aside
before the threshold is picked, and counted (:mod:`gatebench.bulk.seen`):
their scores are those of fitted texts. Attacks left in the sample raise the
threshold: the FPR bound then still holds, at a cost in recall that only
attacks measure (``attacks_path``, or ``gatebench evaluate NEW_DIR ...``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from scipy.stats import binomtest

from gatebench.artifacts import write_json
from gatebench.bulk.score import run_bulk, write_summary
from gatebench.bulk.seen import trained_rows
from gatebench.bulk.traffic_bound import (
    allowed_flags,
    bound_at,
    check_bound,
    min_prompts,
    traffic_bound,
)
from gatebench.config import new_directory
from gatebench.conversation import ScanPolicy
from gatebench.errors import ConfigError
from gatebench.modeldir import MANIFEST, read_manifest, shipped_fpr
from gatebench.parallel import Executor
from gatebench.trace import Trace

__all__ = ["ATTACKS_FILE", "SCORES_FILE", "recall_at", "tune_threshold", "unseen_scores"]

#: The sample's per-row scores, inside the new model directory.
SCORES_FILE = "traffic-threshold/scores.parquet"
#: The labelled attacks' per-row scores, where ``attacks_path`` is given.
ATTACKS_FILE = "traffic-threshold/attacks.parquet"
#: The options that say how a file is read (the rest say how it is scored).
_READING = (
    "text_field",
    "messages_field",
    "id_field",
    "position_field",
    "assume_position",
    "batch_rows",
)


def _check(model_dir: Path, out: Path, target_fpr: float, confidence: float) -> None:
    check_bound(target_fpr, confidence)
    if out.resolve() == model_dir.resolve():
        raise ConfigError(
            f"--out {out} is the model directory itself; the input model is never changed: "
            "name a new directory"
        )
    new_directory(out, "--out")


def tune_threshold(
    model_dir: Path,
    benign_path: Path,
    out: Path,
    *,
    target_fpr: float = 0.01,
    confidence: float = 0.95,
    text_field: str = "text",
    messages_field: str = "messages",
    id_field: str | None = None,
    position_field: str | None = None,
    assume_position: str = "user",
    batch_rows: int = 10_000,
    executor: Executor | None = None,
    policy: ScanPolicy | None = None,
    attacks_path: Path | None = None,
    keep_overlap: bool = False,
    data_dir: Path | None = None,
    cache_dir: Path | None = None,
) -> dict[str, Any]:
    """Write ``out``: ``model_dir`` with its threshold re-picked on the benign sample.

    Parameters
    ----------
    model_dir : Path
        A model directory from ``gatebench train`` (read, never written).
    benign_path : Path
        ``.parquet`` or ``.jsonl`` file of benign texts or conversations, read
        as ``gatebench score`` reads its input.
    out : Path
        The new model directory; must not exist or be empty.
    target_fpr, confidence : float
        The upper ``confidence`` bound of the FPR on the sample's traffic must
        be at most ``target_fpr``.
    text_field, messages_field, id_field, position_field, assume_position, batch_rows,
    executor, policy
        As :func:`gatebench.bulk.score_file`.
    attacks_path : Path, optional
        A file of attacks (your red team's, or a public set), read like the
        sample: the record then gives the recall at the previous and the new
        threshold, with 95% Wilson intervals. It does not move the threshold.
    keep_overlap : bool
        Use every row. By default the rows of the sample (and of the attacks)
        that the model's training trace holds are set aside and counted.
    data_dir, cache_dir : Path, optional
        Where the training trace's sources are (for the overlap check), and
        the trace cache.

    Returns
    -------
    dict
        The ``traffic_threshold`` record written into the new manifest.

    Raises
    ------
    ConfigError
        A bad option, an occupied ``out``, or a sample too small for the bound
        (the message gives the rows needed).
    DataError
        The overlap check cannot run: the model records no training trace, or
        its files changed (the message names ``--keep-overlap``).
    """
    _check(model_dir, out, target_fpr, confidence)
    # The manifest alone: the workers load the detector, once each.
    meta = read_manifest(model_dir)
    reading = {
        "text_field": text_field, "messages_field": messages_field, "id_field": id_field,
        "position_field": position_field, "assume_position": assume_position,
        "batch_rows": batch_rows,
    }  # fmt: skip
    # Before any scoring: a model without a rebuildable trace fails here, not after minutes.
    files = [benign_path] if attacks_path is None else [benign_path, attacks_path]
    aside, overlap = _set_aside(meta, model_dir, files, reading, keep_overlap, data_dir, cache_dir)
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(
        model_dir, partial, ignore=shutil.ignore_patterns(Path(SCORES_FILE).parent.name)
    )
    options = {**reading, "executor": executor, "policy": policy}
    try:
        record = _tune(
            model_dir, meta, partial, benign_path, target_fpr, confidence, options, aside[0]
        )
        record["overlap"] = overlap
        if attacks_path is not None:
            record["attacks"] = _recalls(
                model_dir, attacks_path, partial, record, options, aside[-1]
            )
        new_meta = {**meta, "threshold": record["chosen"]["threshold"], "target_fpr": target_fpr}
        write_json(partial / MANIFEST, {**new_meta, "traffic_threshold": record})
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if out.exists():
        out.rmdir()
    partial.rename(out)
    return record


def _set_aside(
    meta: dict[str, Any],
    model_dir: Path,
    files: list[Path],
    reading: dict[str, Any],
    keep_overlap: bool,
    data_dir: Path | None,
    cache_dir: Path | None,
) -> tuple[list[set[int]], dict[str, Any]]:
    """Per file, the input rows the model was trained on; and the check's record."""
    if keep_overlap:
        return [set() for _ in files], {"checked": False, "how": "not checked (--keep-overlap)"}
    return trained_rows(meta, model_dir, files, reading, data_dir=data_dir, cache_dir=cache_dir)


def unseen_scores(
    model_dir: Path,
    files: list[tuple[Path, Path]],
    options: dict[str, Any],
    *,
    data_dir: Path | None,
    cache_dir: Path | None,
    train: Trace | None = None,
) -> list[tuple[np.ndarray, int]]:
    """Per ``(input, output)`` file: scores of the rows neither rejected nor trained on, and
    the rows set aside as trained on.

    ``options`` are :func:`~gatebench.bulk.score.run_bulk`'s reading and
    executor options; each file's per-row scores go to its output path. The
    model's training trace is rebuilt once for all the files (or ``train``,
    already rebuilt, is used).
    """
    reading = {k: options[k] for k in _READING if k in options}
    aside, _ = trained_rows(
        read_manifest(model_dir), model_dir, [path for path, _ in files], reading,
        data_dir=data_dir, cache_dir=cache_dir, train=train,
    )  # fmt: skip
    return [
        (_scored(model_dir, path, out, options, rows)[0], len(rows))
        for (path, out), rows in zip(files, aside, strict=True)
    ]


def _tune(
    model_dir: Path,
    meta: dict[str, Any],
    partial: Path,
    benign_path: Path,
    target_fpr: float,
    confidence: float,
    options: dict[str, Any],
    aside: set[int],
) -> dict[str, Any]:
    """Score the sample into ``partial`` and pick the threshold: the record, unwritten."""
    scores, summary = _scored(model_dir, benign_path, partial / SCORES_FILE, options, aside)
    if allowed_flags(len(scores), target_fpr, confidence) < 0:
        raise ConfigError(
            f"{benign_path}: {len(scores):,} benign prompts to pick on "
            f"({summary['rows_rejected']:,} of {summary['rows_read']:,} rows rejected, "
            f"{len(aside):,} set aside as trained on); "
            f"an FPR bound of {target_fpr:g} at {confidence:g} confidence needs at least "
            f"{min_prompts(target_fpr, confidence):,}: add benign prompts the model was not "
            "trained on, raise --target-fpr or lower --confidence"
        )
    chosen = traffic_bound(scores, target_fpr, confidence)
    previous = bound_at(scores, float(meta["threshold"]), confidence)
    record = {
        "rule": "lowest threshold whose one-sided exact upper bound of the FPR is <= target",
        "target_fpr": target_fpr,
        "confidence": confidence,
        "input": summary["input"],
        "rows_read": summary["rows_read"],
        "rows_scored": summary["rows_scored"],
        "rows_rejected": summary["rows_rejected"],
        "rejected_by_reason": summary["rejected_by_reason"],
        "rows_trained_on": len(aside),
        "rows_used": len(scores),
        "scan_policy": summary["scan_policy"],
        "scores": SCORES_FILE,
        "previous": {
            **previous.as_dict(),
            "target_fpr": meta.get("target_fpr"),
            "tuned": "traffic_threshold" in meta,
            "shipped_fpr": shipped_fpr(meta),
        },
        "chosen": chosen.as_dict(),
        "gatebench_version": summary["gatebench_version"],
    }
    return record


def _scored(
    model_dir: Path, path: Path, out: Path, options: dict[str, Any], aside: set[int]
) -> tuple[np.ndarray, dict[str, Any]]:
    """The scores of ``path``'s rows neither rejected nor set aside, and the bulk summary."""
    summary = run_bulk(model_dir, path, out, **options)
    write_summary(out.with_suffix(".summary.json"), {"command": "tune-threshold", **summary})
    table = pq.read_table(out, columns=["row", "score", "rejected"])
    kept = np.asarray(table.column("rejected").is_null())
    if aside:
        kept &= ~np.isin(table.column("row").to_numpy(), np.fromiter(aside, np.int64))
    scores = table.column("score").to_numpy(zero_copy_only=False)[kept].astype(np.float64)
    return scores, summary


def recall_at(scores: np.ndarray, threshold: float) -> dict[str, Any]:
    """Attacks caught at ``threshold``, of ``scores``, with a 95% Wilson interval."""
    k, n = int((scores >= threshold).sum()), len(scores)
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return {"threshold": threshold, "caught": k, "n": n, "recall": k / n,
            "low": float(ci.low), "high": float(ci.high)}  # fmt: skip


def _recalls(
    model_dir: Path,
    path: Path,
    partial: Path,
    record: dict[str, Any],
    options: dict[str, Any],
    aside: set[int],
) -> dict[str, Any]:
    """Recall on the labelled attacks at the previous and the chosen threshold."""
    scores, summary = _scored(model_dir, path, partial / ATTACKS_FILE, options, aside)
    if not len(scores):
        raise ConfigError(
            f"--attacks {path}: none of its {summary['rows_read']:,} rows could be used "
            f"({summary['rejected_by_reason']}, {len(aside):,} trained on); give a file of "
            "attack texts or conversations the model was not trained on"
        )
    return {
        "input": summary["input"],
        "rows_read": summary["rows_read"],
        "rows_scored": summary["rows_scored"],
        "rows_rejected": summary["rows_rejected"],
        "rows_trained_on": len(aside),
        "scores": ATTACKS_FILE,
        "previous": recall_at(scores, record["previous"]["threshold"]),
        "chosen": recall_at(scores, record["chosen"]["threshold"]),
    }
