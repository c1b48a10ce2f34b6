"""Cross-validation: a fresh detector per fold, inner validation, OOF scores.

Within each outer fold the training rows are split stratified 85/15. The
detector fits on the inner-train part (iterative learners early-stop on the
inner-valid part), the fold threshold is picked on the inner-valid scores, and
the model then scores the held-out fold. The same model also scores the
inner-train rows of the *next* fold, which gives every row a "train score"
from a model that fitted on it at the cost of one extra fold of scoring; the
per-fold train-vs-OOF gap is computed from those.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gatebench.detectors import (
    Detector,
    DetectorSpec,
    check_scores,
    fit_detector,
    make_detector,
    score_detector,
)
from gatebench.errors import ConfigError, DetectorError
from gatebench.parallel import Executor
from gatebench.progress import Progress
from gatebench.seeding import child_seed
from gatebench.split import PASSES, GroupResult, assign_folds
from gatebench.split.splitters import inner_split
from gatebench.threshold import fold_threshold
from gatebench.trace import composite_groups, positions_at, row_positions, scored_rows

__all__ = [
    "PASSES",
    "CrossValidation",
    "FittedFold",
    "FoldResult",
    "FoldTask",
    "check_two_classes",
    "cross_validate",
    "fit_fold",
    "pool_to_prompts",
    "run_cv",
]

VALID_FRACTION = 0.15
# Bumped whenever FoldResult's fields change, so old checkpoints are not reused.
CHECKPOINT_FORMAT = 2


@dataclass(frozen=True)
class FoldTask:
    """One (pass, fold) unit: which rows train, which are scored, and its seeds."""

    pass_name: str
    fold: int
    train_idx: np.ndarray
    test_idx: np.ndarray
    next_idx: np.ndarray
    spec: DetectorSpec
    seed: int


@dataclass
class FoldResult:
    """Scores and bookkeeping of one fold, checkpointed to disk when it finishes."""

    pass_name: str
    fold: int
    test_idx: np.ndarray
    test_scores: np.ndarray
    train_idx: np.ndarray
    train_scores: np.ndarray
    threshold: float
    n_inner_train: int
    n_inner_valid: int
    valid_f1: float
    fit_seconds: float
    score_seconds: float
    latency_ms: np.ndarray


LATENCY_SAMPLE = 200


def _single_text_latency(
    detector: Detector, texts: list[str], seed: int, positions: list[str] | None = None
) -> np.ndarray:
    """Milliseconds for ``score([text])`` on a seeded sample: the per-request cost.

    Batch throughput hides per-call overhead, which is what a request pays.
    Each text is scored at its own position, as the fold's scores were.
    """
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(texts), size=min(LATENCY_SAMPLE, len(texts)), replace=False)
    out = np.empty(len(picks))
    for i, j in enumerate(picks):
        t0 = time.perf_counter()
        score_detector(detector, [texts[j]], None if positions is None else [positions[j]])
        out[i] = (time.perf_counter() - t0) * 1000.0
    return out


@dataclass
class FittedFold:
    """A fresh detector fitted on one fold's inner-train rows, with its fold threshold."""

    detector: Detector
    task: FoldTask
    threshold: float
    valid_f1: float
    fit_seconds: float
    n_inner_train: int
    inner_train_idx: np.ndarray
    valid_labels: np.ndarray
    valid_scores: np.ndarray


def fit_fold(
    task: FoldTask,
    texts: np.ndarray,
    labels: np.ndarray,
    sources: np.ndarray | None = None,
    positions: np.ndarray | None = None,
) -> FittedFold:
    """Fit a fresh detector on one fold and pick its threshold on the inner-valid rows.

    The one place a fold model is built: the evaluation (:func:`run_fold`) and
    every diagnostic refit call it, so a refit is the run's model by
    construction (same inner split seed, detector seed and rows). ``sources``
    (one per trace row) reaches only a detector whose ``fit`` takes them
    (:func:`~gatebench.detectors.fit_detector`); so do ``positions``, which
    also reach the detector's ``score`` wherever a fold's rows are scored.
    """
    y_train = labels[task.train_idx]
    inner_tr, inner_va = inner_split(
        y_train, valid_fraction=VALID_FRACTION, seed=child_seed(task.seed, "inner")
    )
    it, iv = task.train_idx[inner_tr], task.train_idx[inner_va]
    detector = make_detector(task.spec, seed=child_seed(task.seed, "detector"))
    t0 = time.perf_counter()
    try:
        fit_detector(
            detector,
            list(texts[it]),
            labels[it],
            valid=(list(texts[iv]), labels[iv]),
            sources=None if sources is None else list(sources[it]),
            positions=positions_at(positions, it),
            valid_positions=positions_at(positions, iv),
            valid_sources=None if sources is None else list(sources[iv]),
        )
    except (TypeError, ValueError) as exc:
        # A bad parameter value surfaces only when the detector fits, inside a
        # worker; say which detector, parameters and fold instead of a traceback.
        raise DetectorError(
            f"detector {task.spec.name!r} with parameters {task.spec.params} failed to fit "
            f"({task.pass_name} fold {task.fold}): {type(exc).__name__}: {exc}. "
            "Check the --param values."
        ) from exc
    fit_seconds = time.perf_counter() - t0
    p_valid = check_scores(
        task.spec.name,
        score_detector(detector, list(texts[iv]), positions_at(positions, iv)),
        len(iv),
    )
    theta, valid_f1 = fold_threshold(labels[iv], p_valid)
    return FittedFold(
        detector=detector,
        task=task,
        threshold=float(theta),
        valid_f1=float(valid_f1),
        fit_seconds=fit_seconds,
        n_inner_train=len(it),
        inner_train_idx=it,
        valid_labels=labels[iv],
        valid_scores=p_valid,
    )


def run_fold(
    task: FoldTask,
    texts: np.ndarray,
    labels: np.ndarray,
    sources: np.ndarray | None = None,
    positions: np.ndarray | None = None,
) -> FoldResult:
    """Fit a fresh detector on one fold and score its held-out rows."""
    fitted_fold = fit_fold(task, texts, labels, sources, positions)
    detector, it = fitted_fold.detector, fitted_fold.inner_train_idx
    t0 = time.perf_counter()
    test = task.test_idx
    test_scores = check_scores(
        task.spec.name,
        score_detector(detector, list(texts[test]), positions_at(positions, test)),
        len(test),
    )
    score_seconds = time.perf_counter() - t0
    # Only rows the model actually fitted on count as training rows.
    fitted = np.intersect1d(task.next_idx, it, assume_unique=True)
    train_scores = check_scores(
        task.spec.name,
        score_detector(detector, list(texts[fitted]), positions_at(positions, fitted)),
        len(fitted),
    )
    # One fold per pass measures per-request latency; more would only cost time.
    latency = (
        _single_text_latency(
            detector,
            list(texts[test]),
            child_seed(task.seed, "latency"),
            positions_at(positions, test),
        )
        if task.fold == 0
        else np.empty(0)
    )
    return FoldResult(
        pass_name=task.pass_name,
        fold=task.fold,
        test_idx=task.test_idx,
        test_scores=test_scores,
        train_idx=fitted,
        train_scores=train_scores,
        threshold=fitted_fold.threshold,
        n_inner_train=fitted_fold.n_inner_train,
        n_inner_valid=len(fitted_fold.valid_labels),
        valid_f1=fitted_fold.valid_f1,
        fit_seconds=fitted_fold.fit_seconds,
        score_seconds=score_seconds,
        latency_ms=latency,
    )


def make_tasks(
    pass_name: str, folds: np.ndarray, labels: np.ndarray, spec: DetectorSpec, *, seed: int
) -> list[FoldTask]:
    """Build the fold tasks of one pass from a fold-id-per-row array."""
    k = int(folds.max()) + 1
    tasks = []
    for fold in range(k):
        test = np.flatnonzero(folds == fold)
        if labels[test].sum() == 0:
            raise ConfigError(
                f"pass {pass_name!r} fold {fold} has no positive rows; "
                "use fewer folds (--folds) or a trace with more attacks"
            )
        tasks.append(
            FoldTask(
                pass_name=pass_name,
                fold=fold,
                train_idx=np.flatnonzero(folds != fold),
                test_idx=test,
                next_idx=np.flatnonzero(folds == (fold + 1) % k),
                spec=spec,
                seed=child_seed(seed, "cv", pass_name, fold),
            )
        )
    return tasks


def _checkpoint_key(task: FoldTask, context: str) -> str:
    blob = json.dumps(
        {
            "format": CHECKPOINT_FORMAT,
            "context": context,
            "spec": task.spec.as_dict(),
            "seed": task.seed,
            "test": hashlib.sha256(task.test_idx.tobytes()).hexdigest(),
            "train": hashlib.sha256(task.train_idx.tobytes()).hexdigest(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _save_checkpoint(path: Path, result: FoldResult) -> None:
    arrays = {k: v for k, v in asdict(result).items() if isinstance(v, np.ndarray)}
    scalars = {k: v for k, v in asdict(result).items() if not isinstance(v, np.ndarray)}
    tmp = path.with_suffix(".tmp.npz")
    arrays["meta"] = np.array(json.dumps(scalars))
    np.savez(tmp, **arrays)  # type: ignore[arg-type]
    tmp.replace(path)  # atomic: an interrupted write never looks finished


def _load_checkpoint(path: Path) -> FoldResult:
    with np.load(path) as data:
        scalars = json.loads(str(data["meta"]))
        arrays = {k: data[k] for k in data.files if k != "meta"}
    return FoldResult(**scalars, **arrays)


def run_cv(
    texts: np.ndarray,
    labels: np.ndarray,
    tasks: list[FoldTask],
    *,
    sources: np.ndarray | None = None,
    positions: np.ndarray | None = None,
    checkpoint_dir: Path | None = None,
    context: str = "",
    executor: Executor | None = None,
    on_done: Callable[[FoldResult, bool], None] | None = None,
) -> list[FoldResult]:
    """Run every fold task, resuming finished folds from ``checkpoint_dir``.

    Parameters
    ----------
    texts, labels : ndarray
        One entry per trace row (chunk).
    tasks : list of FoldTask
        From :func:`make_tasks`, for one or more passes.
    sources : ndarray, optional
        One source name per trace row, for detectors whose ``fit`` takes them.
    positions : ndarray, optional
        One position per trace row (user, tool, document), for detectors whose
        ``fit`` and ``score`` take them.
    checkpoint_dir : Path, optional
        Finished folds are saved here and reused when their key (trace,
        detector spec, seed, fold membership) matches.
    context : str
        Extra key material, e.g. the trace id.
    executor : Executor, optional
        Where the folds run (default: local worker processes).
    on_done : callable, optional
        Called with each result and whether it came from a checkpoint.

    Returns
    -------
    list of FoldResult
        Sorted by pass then fold, whatever order they finished in.
    """
    done: list[FoldResult] = []
    todo: list[FoldTask] = []
    paths: dict[tuple[str, int], Path] = {}
    for task in tasks:
        if checkpoint_dir is not None:
            checkpoint_dir.mkdir(parents=True, exist_ok=True)
            key = _checkpoint_key(task, context)
            path = checkpoint_dir / f"{task.pass_name}-{task.fold}-{key}.npz"
            paths[(task.pass_name, task.fold)] = path
            if path.is_file():
                result = _load_checkpoint(path)
                done.append(result)
                if on_done:
                    on_done(result, True)
                continue
        todo.append(task)
    shared = {"texts": texts, "labels": labels, "sources": sources, "positions": positions}
    for result in (executor or Executor()).map(run_fold, todo, shared=shared):
        if checkpoint_dir is not None:
            _save_checkpoint(paths[(result.pass_name, result.fold)], result)
        done.append(result)
        if on_done:
            on_done(result, False)
    return sorted(done, key=lambda r: (r.pass_name, r.fold))


def chunk_table(frame: pd.DataFrame, results: list[FoldResult]) -> pd.DataFrame:
    """Per-(pass, chunk row) OOF table: fold, ids, label, score, fold threshold, train score.

    Only evaluation rows appear: rows whose ``role`` is ``training`` are left out.
    """
    parts = []
    # Training-corpus rows are fitted on in every fold and scored in none.
    scored = scored_rows(frame)
    for pass_name in sorted({r.pass_name for r in results}):
        n = len(frame)
        fold = np.full(n, -1, dtype=np.int32)
        score = np.full(n, np.nan)
        theta = np.full(n, np.nan)
        train = np.full(n, np.nan)
        for r in (r for r in results if r.pass_name == pass_name):
            fold[r.test_idx] = r.fold
            score[r.test_idx] = r.test_scores
            theta[r.test_idx] = r.threshold
            train[r.train_idx] = r.train_scores
        cols = ["row_id", "sample_id", "chunk", "parent_id", "source", "label"]
        # The text hash lets adapters' failure ledgers join rows; frames built
        # outside build_trace (tests, scripts) may lack it.
        cols += ["text_sha256"] if "text_sha256" in frame else []
        part = frame[cols].copy()
        part.insert(0, "pass", pass_name)
        part["fold"], part["score"], part["fold_threshold"] = fold, score, theta
        part["train_score"] = train
        parts.append(part[scored])
    return pd.concat(parts, ignore_index=True)


def pool_to_prompts(chunks: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """Max-pool chunk scores to one row per (pass, prompt) (paper §2.4).

    The prompt takes the fold and fold threshold of its highest-scoring chunk;
    the train score is the max over the chunks that have one.
    """
    order = chunks.sort_values(
        ["pass", "sample_id", "score", "chunk"],
        ascending=[True, True, False, True],
        kind="mergesort",
    )
    top = order.drop_duplicates(["pass", "sample_id"], keep="first")
    train = chunks.groupby(["pass", "sample_id"], sort=False)["train_score"].max()
    meta = frame.drop_duplicates("sample_id").set_index("sample_id")[
        ["family", "n_chunks", "prompt_chars", "language", "position"]
    ]
    out = top.drop(columns=["row_id", "chunk", "train_score"]).join(train, on=["pass", "sample_id"])
    out = out.join(meta, on="sample_id")
    return out.sort_values(["pass", "sample_id"], kind="mergesort").reset_index(drop=True)


@dataclass(frozen=True)
class CrossValidation:
    """One cross-validation of a detector on a trace frame, every pass, pooled.

    Attributes
    ----------
    groups : GroupResult
        Composite group keys (the grouped pass keeps each group in one fold).
    folds : dict of str -> ndarray
        Fold id per row, per pass (-1 for training-corpus rows).
    results : list of FoldResult
        Every fold of every pass, sorted by pass then fold.
    chunks : DataFrame
        Per-(pass, chunk) OOF rows (:func:`chunk_table`).
    prompts : DataFrame
        Per-(pass, prompt) OOF rows after max pooling (:func:`pool_to_prompts`).
    labels : ndarray
        Per-row labels.
    texts : ndarray
        Per-row texts, as the fold workers received them.
    """

    groups: GroupResult
    folds: dict[str, np.ndarray]
    results: list[FoldResult]
    chunks: pd.DataFrame
    prompts: pd.DataFrame
    labels: np.ndarray
    texts: np.ndarray


def cross_validate(
    frame: pd.DataFrame,
    detector: DetectorSpec,
    *,
    seed: int,
    n_splits: int = 5,
    passes: tuple[str, ...] = PASSES,
    folds: dict[str, np.ndarray] | None = None,
    groups: GroupResult | None = None,
    executor: Executor | None = None,
    checkpoint_dir: Path | None = None,
    context: str = "",
    progress: Progress | None = None,
) -> CrossValidation:
    """Groups, folds, a fresh detector per fold, pooling: the evaluation's one CV path.

    ``gatebench run``, the diagnostics' context builder and the checks that
    cross-validate another detector on the run's folds all call this, so
    their folds, seeds and pooling cannot drift apart.

    Parameters
    ----------
    frame : DataFrame
        Trace frame, one row per chunk (``text``, ``label``, ``source``,
        ``sample_id``, ``role``, ...).
    detector : DetectorSpec
        The detector to fit per fold.
    seed : int
        Root seed; groups, folds and fold models use named children of it.
    n_splits : int
        K of every pass.
    passes : tuple of str
        ``strat`` always runs; ``sgk`` when named.
    folds : dict, optional
        Fold id per row per pass, instead of the splitters (a diagnostic
        re-using the run's folds, or a test planting a split).
    groups : GroupResult, optional
        The frame's composite groups when already computed.
    executor : Executor, optional
        Where the folds run.
    checkpoint_dir, context
        Fold checkpoints and their extra key material (see :func:`run_cv`).
    progress : Progress, optional
        Reports the groups step and each finished fold.
    """
    progress = progress or Progress()
    labels = frame["label"].to_numpy(dtype=np.int64)
    check_two_classes(frame)
    if groups is None:
        with progress.step("groups"):
            groups = composite_groups(frame, seed)
    if folds is None:
        folds = assign_folds(
            labels,
            groups.groups,
            scored=scored_rows(frame),
            passes=tuple(p for p in PASSES if p == "strat" or p in passes),
            n_splits=n_splits,
            seeds={p: child_seed(seed, "folds", p) for p in PASSES},
        )
    tasks = [
        t for name, f in folds.items() for t in make_tasks(name, f, labels, detector, seed=seed)
    ]
    texts = frame["text"].to_numpy(dtype=object)
    with progress.folds(len(tasks)) as on_done:
        results = run_cv(
            texts,
            labels,
            tasks,
            sources=frame["source"].to_numpy(dtype=object),
            positions=row_positions(frame),
            checkpoint_dir=checkpoint_dir,
            context=context,
            executor=executor,
            on_done=on_done,
        )
    chunks = chunk_table(frame, results)
    return CrossValidation(
        groups=groups,
        folds=folds,
        results=results,
        chunks=chunks,
        prompts=pool_to_prompts(chunks, frame),
        labels=labels,
        texts=texts,
    )


def check_two_classes(frame: pd.DataFrame) -> None:
    """Refuse a trace whose scored rows lack a class: F1 and FPR need both."""
    present = set(frame["label"].to_numpy()[scored_rows(frame)].tolist())
    if present != {0, 1}:
        only, missing = ("attack", "benign") if present == {1} else ("benign", "attack")
        raise ConfigError(
            f"the trace has only {only} rows (label {1 if only == 'attack' else 0}); "
            f"add sources with {missing} rows (--sources) so that F1 and FPR are defined"
        )
