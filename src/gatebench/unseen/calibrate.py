"""An operating point chosen on sources the model never saw, for shipping.

The headline threshold is picked on out-of-fold scores from models that saw
every source of the trace. A deployed model meets sources it never saw, whose
benign text scores higher: a threshold set for 1% FPR on seen sources flags
several times that on new ones. This pass holds whole sources out instead,
max-pools the held-out scores to prompts, and ships the lowest threshold at
which the *mean over held-out benign sources* of the FPR is at most the
target. The source is the unit because a deployment meets new sources, not
new rows: a pooled FPR would let the largest benign set decide.

Which sources may be held out (``holdout``): ``all`` of them, training corpora
included, or only the ``evaluation`` sources (the corpora then stay in every
fold's training, as in leave-one-source-out). A training corpus is a source
like any other to a deployed model: the security questions, persona prompts
and real requests it meets come from sources it never saw, and the corpora
are where the trace holds those kinds. Rows the trace constructs (benign
twins, embedded injections) are never held out: they are not a source.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedGroupKFold

from gatebench.config import UNSEEN_FPR, UNSEEN_HOLDOUT
from gatebench.constructed import CONSTRUCTED_SOURCES, built_from, hosted_by
from gatebench.cv import FoldTask, fit_fold
from gatebench.detectors import DetectorSpec
from gatebench.detectors.protocol import check_scores, score_detector
from gatebench.errors import ConfigError
from gatebench.parallel import Executor
from gatebench.seeding import child_seed
from gatebench.split.splitters import TRAINING_ONLY
from gatebench.trace import positions_at, row_positions, scored_rows

__all__ = [
    "HOLDOUTS",
    "MIN_BENIGN",
    "SourcePoint",
    "check_holdout",
    "check_target",
    "lowest_threshold",
    "prompt_scores",
    "source_folds",
    "source_point",
    "unseen_operating_point",
]

PASS_NAME = "sources"
#: A held-out source with fewer benign prompts is reported, not averaged: one row of
#: eight would move the mean as much as a whole large set.
MIN_BENIGN = 20
#: Which sources the pass may hold out whole (see the module docstring).
HOLDOUTS = ("all", "evaluation")


def check_target(target_fpr: float) -> float:
    """``target_fpr`` if it is a usable bound, else a ConfigError naming the option."""
    if not 0.0 < target_fpr < 1.0:
        raise ConfigError(
            f"--unseen-fpr {target_fpr!r}: give the FPR bound on never-seen sources "
            "in (0, 1), e.g. 0.03"
        )
    return float(target_fpr)


def check_holdout(holdout: str) -> str:
    """``holdout`` if it is one of :data:`HOLDOUTS`, else a ConfigError naming the option."""
    if holdout not in HOLDOUTS:
        raise ConfigError(
            f"--unseen-holdout {holdout!r}: choose {' or '.join(HOLDOUTS)} (which sources the "
            "unseen operating point may hold out whole)"
        )
    return holdout


def holdable_rows(frame: pd.DataFrame, holdout: str) -> np.ndarray:
    """True for the rows whose source the pass may hold out (``holdout`` of :data:`HOLDOUTS`)."""
    if check_holdout(holdout) == "evaluation":
        return scored_rows(frame)
    return ~frame["source"].isin(CONSTRUCTED_SOURCES).to_numpy()


def source_folds(
    frame: pd.DataFrame, n_splits: int, seed: int, holdout: str = "evaluation"
) -> np.ndarray:
    """Fold id per row, each source the pass may hold out (``holdout``) whole in one fold.

    The other rows get ``TRAINING_ONLY``: fitted on in every fold, scored in
    none. ``n_splits`` is capped at the number of sources held out.
    """
    scored = holdable_rows(frame, holdout)
    sources = frame["source"].astype(str).to_numpy()
    names = sorted(set(sources[scored].tolist()))
    if len(names) < 2:
        kind = "evaluation sources" if holdout == "evaluation" else "sources"
        raise ConfigError(
            f"the unseen operating point holds whole {kind} out, but the trace has "
            f"{len(names)} ({', '.join(names) or 'none'}); add sources or pass "
            "--operating-point headline"
        )
    k = min(int(n_splits), len(names))
    splitter = StratifiedGroupKFold(k, shuffle=True, random_state=seed)
    labels = frame["label"].to_numpy(dtype=np.int64)[scored]
    folds = np.full(len(frame), TRAINING_ONLY, dtype=np.int64)
    rows = np.flatnonzero(scored)
    for fold, (_, test) in enumerate(splitter.split(rows, labels, groups=sources[scored])):
        folds[rows[test]] = fold
    return folds


def _tasks(frame: pd.DataFrame, folds: np.ndarray, spec: DetectorSpec, seed: int) -> list[FoldTask]:
    """One task per fold; rows built from a held-out source never reach its training."""
    sources = frame["source"].astype(str).to_numpy()
    origins = built_from(frame)
    tasks = []
    for fold in range(int(folds.max()) + 1):
        test = np.flatnonzero(folds == fold)
        held = hosted_by(origins, np.unique(sources[test]))
        train = np.flatnonzero((folds != fold) & ~held)
        tasks.append(
            FoldTask(
                pass_name=PASS_NAME,
                fold=fold,
                train_idx=train,
                test_idx=test,
                next_idx=np.empty(0, dtype=np.int64),  # no train-vs-OOF scores here
                spec=spec,
                seed=child_seed(seed, "cv", PASS_NAME, fold),
            )
        )
    return tasks


def _held_out_scores(
    task: FoldTask,
    texts: np.ndarray,
    labels: np.ndarray,
    sources: np.ndarray,
    positions: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Fit one fold as the CV passes do and score its held-out rows."""
    fitted = fit_fold(task, texts, labels, sources, positions)
    test = task.test_idx
    scores = score_detector(fitted.detector, list(texts[test]), positions_at(positions, test))
    return task.test_idx, check_scores(task.spec.name, scores, len(task.test_idx))


def prompt_scores(frame: pd.DataFrame, rows: np.ndarray, scores: np.ndarray) -> pd.DataFrame:
    """Scores of trace ``rows`` max-pooled to prompts: ``source``, ``label``, ``score``.

    Indexed by ``sample_id``; a chunked prompt takes its highest chunk score.
    """
    part = frame.iloc[rows][["sample_id", "source", "label"]].assign(score=scores)
    pooled: pd.DataFrame = part.groupby("sample_id", sort=True).agg(
        source=("source", "first"), label=("label", "first"), score=("score", "max")
    )
    return pooled


@dataclass(frozen=True)
class SourcePoint:
    """Never-seen rates at one threshold, per held-out source and averaged over sources."""

    threshold: float
    mean_fpr: float | None
    pooled_fpr: float
    mean_recall: float | None
    pooled_recall: float | None
    per_source: dict[str, dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def source_point(prompts: pd.DataFrame, threshold: float) -> SourcePoint:
    """Rates of prompts (``source``, ``label``, ``score``) flagged at ``score >= threshold``."""
    flagged = prompts["score"].to_numpy() >= threshold
    y = prompts["label"].to_numpy(dtype=np.int64)
    per: dict[str, dict[str, Any]] = {}
    for name, idx in prompts.groupby("source", sort=True).indices.items():
        ys, fs = y[idx], flagged[idx]
        n_b, n_a = int((ys == 0).sum()), int((ys == 1).sum())
        per[str(name)] = {
            "n_benign": n_b,
            "fpr": float(fs[ys == 0].mean()) if n_b else None,
            "averaged": n_b >= MIN_BENIGN,
            "n_attack": n_a,
            "recall": float(fs[ys == 1].mean()) if n_a else None,
        }
    fprs = [v["fpr"] for v in per.values() if v["averaged"]]
    recalls = [v["recall"] for v in per.values() if v["recall"] is not None]
    return SourcePoint(
        threshold=float(threshold),
        mean_fpr=float(np.mean(fprs)) if fprs else None,
        pooled_fpr=float(flagged[y == 0].mean()),
        mean_recall=float(np.mean(recalls)) if recalls else None,
        pooled_recall=float(flagged[y == 1].mean()) if recalls else None,
        per_source=per,
    )


def lowest_threshold(prompts: pd.DataFrame, target_fpr: float) -> float:
    """The lowest score at which the mean FPR over held-out benign sources is <= ``target_fpr``.

    Only sources with at least ``MIN_BENIGN`` benign prompts are averaged. Mean
    FPR only falls as the threshold rises, so the lowest such threshold flags
    the most attacks the bound allows. Above every benign score it is 0.
    """
    benign = prompts[prompts["label"] == 0]
    sizes = benign.groupby("source")["score"].transform("size")
    benign = benign[sizes >= MIN_BENIGN]
    if benign.empty:
        raise ConfigError(
            f"no held-out source has {MIN_BENIGN} benign prompts, so no FPR on never-seen "
            "text can be measured; add benign sources or pass --operating-point headline"
        )
    candidates = np.unique(prompts["score"].to_numpy(dtype=np.float64))
    mean_fpr = np.zeros(len(candidates))
    groups = benign.groupby("source").indices.values()
    scores = benign["score"].to_numpy(dtype=np.float64)
    for idx in groups:
        s = np.sort(scores[idx])
        mean_fpr += (len(s) - np.searchsorted(s, candidates, side="left")) / len(s)
    mean_fpr /= len(groups)
    ok = np.flatnonzero(mean_fpr <= target_fpr + 1e-12)
    if ok.size:
        return float(candidates[ok[0]])
    return float(np.nextafter(candidates[-1], np.inf))


def unseen_operating_point(
    frame: pd.DataFrame,
    spec: DetectorSpec,
    *,
    seed: int,
    n_splits: int,
    target_fpr: float = UNSEEN_FPR,
    holdout: str = UNSEEN_HOLDOUT,
    executor: Executor | None = None,
) -> dict[str, Any]:
    """Fit with whole sources held out and choose the shipped threshold.

    Parameters
    ----------
    frame : DataFrame
        The trace frame the shipped model fits on.
    spec : DetectorSpec
        The detector, as shipped.
    seed : int
        Root seed (fold assignment and every fold's seeds).
    n_splits : int
        Folds over the sources held out (at most one per source).
    target_fpr : float
        Bound on the mean FPR over the held-out benign sources, in (0, 1).
    holdout : {"all", "evaluation"}
        Which sources may be held out: every source, or the evaluation ones.
    executor : Executor, optional
        Where the folds run.

    Returns
    -------
    dict
        ``rule``, ``holdout``, ``target_fpr``, ``threshold``, ``n_folds``, the never-seen
        rates at that threshold (:class:`SourcePoint`) and each fold's held-out
        sources.
    """
    check_target(target_fpr)
    folds = source_folds(frame, n_splits, child_seed(seed, "folds", PASS_NAME), holdout)
    tasks = _tasks(frame, folds, spec, seed)
    shared = {
        "texts": frame["text"].to_numpy(dtype=object),
        "labels": frame["label"].to_numpy(dtype=np.int64),
        "sources": frame["source"].to_numpy(dtype=object),
        "positions": row_positions(frame),
    }
    done = list((executor or Executor()).map(_held_out_scores, tasks, shared=shared))
    rows, scores = (np.concatenate(part) for part in zip(*done, strict=True))
    prompts = prompt_scores(frame, rows, scores)
    threshold = lowest_threshold(prompts, target_fpr)
    held = {
        str(t.fold): sorted(set(frame["source"].to_numpy()[t.test_idx].tolist())) for t in tasks
    }
    return {
        "rule": "mean FPR over never-seen benign sources <= target",
        "holdout": holdout,
        "target_fpr": float(target_fpr),
        "n_folds": len(tasks),
        "held_out": held,
        **source_point(prompts, threshold).as_dict(),
    }
