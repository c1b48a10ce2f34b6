"""The whole pipeline, top to bottom, as ``gatebench run`` and ``gatebench train`` run it.

``evaluate`` reads as the methodology does: trace, cross-validation, one operating point
and every metric, diagnostics, the run's files. ``train`` fits the model that ships.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gatebench import artifacts, cv, record, summary
from gatebench.config import UNSEEN_FPR, UNSEEN_HOLDOUT, RunConfig, output_directory
from gatebench.conversation import Conversation, ScanPolicy
from gatebench.detectors import DetectorSpec, fit_detector, make_detector
from gatebench.detectors.adapters._audit import audit_dir
from gatebench.errors import ConfigError, GatebenchError
from gatebench.holdout import split_holdout, write_holdout
from gatebench.modeldir import save_model
from gatebench.parallel import Executor
from gatebench.progress import Progress
from gatebench.result import EvaluationResult
from gatebench.rundata import HEADLINE_PASS, RunData
from gatebench.seeding import child_seed
from gatebench.served import served_model
from gatebench.split import inner_split
from gatebench.trace import (
    Trace,
    TraceSpec,
    build_trace,
    load_trace,
    positions_at,
    row_positions,
    save_trace,
)
from gatebench.trace_info import refused_record
from gatebench.types import Family
from gatebench.unseen.calibrate import check_holdout, check_target, unseen_operating_point

__all__ = ["OPERATING_POINTS", "build_trace_from_options", "detect", "evaluate", "train"]

#: Where ``train`` takes the shipped threshold from (the first is the default without a run).
OPERATING_POINTS = ("unseen", "headline")


def evaluate(
    config: RunConfig, *, progress: Progress | None = None, executor: Executor | None = None
) -> Path:
    """Run a whole evaluation and return its run directory (see :mod:`gatebench.artifacts`)."""
    from gatebench.compare import build_comparisons
    from gatebench.diagnostics import DiagnosticContext, run_diagnostics

    progress, executor = progress or Progress(), executor or config.executor()
    detector = DetectorSpec(config.detector, dict(config.detector_params))
    make_detector(detector, seed=config.seed)  # a misspelt name fails before any work
    with progress.step("trace"):
        trace = (
            load_trace(config.trace_dir)
            if config.trace_dir
            else _build(config, cache_dir=config.cache_dir)
        )
    frame = trace.frame
    cv.check_two_classes(frame)  # before the run directory exists
    run_dir = config.out or artifacts.new_run_dir(config.runs_dir, trace.trace_id, detector.name)
    run_dir.mkdir(parents=True, exist_ok=True)
    with audit_dir(run_dir / "audit"):
        run = cv.cross_validate(
            frame, detector, seed=config.seed, n_splits=config.folds, passes=config.passes,
            executor=executor, checkpoint_dir=run_dir / "checkpoints",
            context=trace.trace_id, progress=progress,
        )  # fmt: skip
    # From the trace's family column, which the cards filled in: a trace from `trace build
    # --out` may hold a user's file, whose card exists only in the process that read it.
    family = frame.drop_duplicates("source").set_index("source")["family"]
    primary = {n: str(Family(family[n]).primary_metric) for n in run.prompts["source"].unique()}
    with progress.step("metrics"):
        numbers = summary.summarise(
            run.prompts, run.results, run.labels, primary_metrics=primary, fpr=config.fpr,
            seed=config.seed, n_resamples=config.bootstrap, executor=executor,
        )  # fmt: skip
    with progress.step("diagnostics"):
        context = DiagnosticContext.of(
            frame, run, numbers, detector=detector, seed=config.seed, fpr=config.fpr,
            primary_metrics=primary, executor=executor, n_resamples=config.bootstrap,
            trace_id=trace.trace_id,
        )  # fmt: skip
        diagnostics = [d.as_dict() for d in run_diagnostics(context, tier=config.diagnostics)]
    evaluation = record.Evaluation(config, detector, trace, run, numbers)
    record.write_run_files(run_dir, evaluation, progress.timings)
    result = record.evaluation_result(run_dir, evaluation, diagnostics)
    with progress.step("comparisons"):
        head = run.prompts[run.prompts["pass"] == HEADLINE_PASS].reset_index(drop=True)
        try:
            comparisons = build_comparisons(RunData(run_dir, result, headline_oof=head))
        except GatebenchError as exc:  # a missing published table must not sink a run
            comparisons = {"error": str(exc)}
    result = result.model_copy(update={"comparisons": artifacts.jsonable(comparisons)})
    artifacts.write_json(run_dir / "result.json", result.to_json())
    return run_dir


def train(
    config: RunConfig,
    model_dir: Path,
    *,
    run_dir: Path | None = None,
    holdout: float = 0.0,
    operating_point: str | None = None,
    unseen_fpr: float = UNSEEN_FPR,
    unseen_holdout: str = UNSEEN_HOLDOUT,
) -> Path:
    """Fit on the whole trace (less a ``holdout`` share) and write a model directory.

    ``operating_point`` says where the shipped threshold comes from:

    - ``"unseen"`` (the default without ``run_dir``): folds that hold whole
      sources out (``unseen_holdout``: every source, or only the evaluation
      ones), at mean FPR over those sources' benign rows <= ``unseen_fpr``
      (:mod:`gatebench.unseen.calibrate`). A deployed model meets sources it
      never saw, and there the headline point flags several times its target.
    - ``"headline"`` (the default with ``run_dir``): the headline operating
      point of ``run_dir`` (same trace), else of a fresh StratifiedKFold
      evaluation.

    The final fit uses the folds' 85/15 inner split either way.
    """
    output_directory(model_dir, "MODEL_DIR")
    point = operating_point or ("headline" if run_dir is not None else "unseen")
    if point not in OPERATING_POINTS:
        raise ConfigError(
            f"--operating-point {point!r} is unknown; use one of {', '.join(OPERATING_POINTS)}"
        )
    if point == "unseen" and run_dir is not None:
        raise ConfigError(
            f"--run {run_dir} gives the headline operating point, but --operating-point is "
            "'unseen'; drop --run, or pass --operating-point headline"
        )
    if point == "unseen":
        check_target(unseen_fpr)  # before any fitting
        check_holdout(unseen_holdout)
    result, run_dir = _headline_run(config, run_dir) if point == "headline" else (None, None)
    trace = _build(config, cache_dir=config.cache_dir)
    if result is not None and trace.trace_id != result.trace.trace_id:
        raise ConfigError(
            f"--run {run_dir} used trace {result.trace.trace_id[:12]}…, but these options "
            f"give {trace.trace_id[:12]}…; use the same sources, caps, chunking and seed"
        )
    frame, held = split_holdout(trace.frame, holdout, child_seed(config.seed, "final", "holdout"))
    spec = DetectorSpec(config.detector, dict(config.detector_params))
    extra: dict[str, Any]
    if result is None:
        op = unseen_operating_point(
            frame, spec, seed=config.seed, n_splits=config.folds, target_fpr=unseen_fpr,
            holdout=unseen_holdout, executor=config.executor(),
        )  # fmt: skip
        extra = {"operating_point": op}
    else:
        op = result.operating_point.model_dump(mode="json")
        extra = {"operating_point": op, "evaluation_run": str(Path(str(run_dir)).resolve())}
    labels, texts = frame["label"].to_numpy(dtype=np.int64), frame["text"].tolist()
    tr, va = inner_split(
        labels, valid_fraction=0.15, seed=child_seed(config.seed, "final", "inner")
    )
    detector = make_detector(spec, seed=child_seed(config.seed, "final", "detector"))
    sources = frame["source"].to_numpy(dtype=object)
    positions = row_positions(frame)
    valid = ([texts[i] for i in va], labels[va])
    fit_detector(
        detector,
        [texts[i] for i in tr],
        labels[tr],
        valid=valid,
        sources=list(sources[tr]),
        positions=positions_at(positions, tr),
        valid_positions=positions_at(positions, va),
        valid_sources=list(sources[va]),
    )
    extra["trace_spec"] = trace.info["spec"]  # what `gatebench evaluate` checks overlap against
    extra["refused_rows"] = refused_record(trace.info["malformed_rows"])
    if held is not None:
        overlap = int(trace.info["chunking"]["chunk_overlap"])
        extra["holdout"] = write_holdout(model_dir, held, overlap, holdout)
    return save_model(
        detector, model_dir, spec=spec, threshold=op["threshold"], target_fpr=op["target_fpr"],
        trace_id=trace.trace_id, extra=extra,
    )  # fmt: skip


def _headline_run(config: RunConfig, run_dir: Path | None) -> tuple[EvaluationResult, Path]:
    """``run_dir`` (else a fresh StratifiedKFold evaluation) and its result, checked."""
    if run_dir is None:
        run_dir = evaluate(config.model_copy(update={"passes": ("strat",), "diagnostics": "none"}))
    result = artifacts.read_result(run_dir)
    if result.detector.name != config.detector:
        raise ConfigError(
            f"--run {run_dir} evaluated {result.detector.name!r}, not {config.detector!r}; "
            "pass a run of the same detector or omit --run"
        )
    if dict(result.detector.params) != dict(config.detector_params):
        # Its operating point is a threshold on another model's scores.
        raise ConfigError(
            f"--run {run_dir} evaluated {config.detector!r} with parameters "
            f"{dict(result.detector.params)}, but these options give "
            f"{dict(config.detector_params)}; pass the run's --param values or omit --run"
        )
    return result, run_dir


def detect(
    model_dir: Path,
    inputs: Sequence[str | Conversation],
    *,
    policy: ScanPolicy | None = None,
    positions: Sequence[str | None] | None = None,
) -> list[dict[str, Any]]:
    """Score texts and conversations with a model directory; one result per input, in order.

    A text gets its score, decision, stage, driving chunk and timings; a
    conversation, scanned under ``policy`` (default: user, tool and document
    messages), gets the service's conversation result: score, decision, the
    driving message and window, and every message's score. ``positions``, one
    per input, says where each text sits: ``user`` (or None), ``tool`` or
    ``document``; a conversation's entry is None, its messages' roles say it.
    A model that reads positions (Gate with its data guard) reads a tool
    result or document for instructions; the others score every text alike.
    """
    return served_model(model_dir).score_inputs(inputs, policy=policy, positions=positions)


def build_trace_from_options(*, out: Path | None = None, **options: Any) -> Trace:
    """Build the trace ``RunConfig(**options)`` describes; also write it to ``out``."""
    config = RunConfig(**{k: v for k, v in options.items() if v is not None})
    trace = _build(config, cache_dir=None)
    if out is not None:
        save_trace(trace, out)
    return trace


def _build(config: RunConfig, *, cache_dir: Path | None) -> Trace:
    spec = TraceSpec(**config.trace_options())
    return build_trace(spec, data_dir=config.data_dir, cache_dir=cache_dir)
