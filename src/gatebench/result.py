"""The typed, versioned shape of ``result.json``: what a run concluded.

A run's numbers used to travel as a nested dict read back through string
keys, so a renamed key failed only where a report happened to look for it.
:class:`EvaluationResult` is the one definition: ``summary`` fills it, the run
writes it, and report, compare and diagnostics read its attributes. Reading
validates every section, and a file of another major ``schema_version`` is
refused with a message that says which version wrote it and how to get a
readable one.

Sections whose inner layout belongs to a plug-in (diagnostic statistics,
comparisons, calibration tables) stay mappings: their owners define them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gatebench.errors import SchemaError

__all__ = [
    "SCHEMA_VERSION",
    "DiagnosticRecord",
    "EvaluationResult",
    "Interval",
    "LanguageRow",
    "Measurements",
    "OperatingPoint",
    "PointMetrics",
    "PositionRow",
    "SliceRates",
    "SourceRow",
    "TraceSummary",
    "check_major",
]

#: Major.minor; a reader accepts any minor of its major. 1.1: ``by_language``,
#: ``by_language_skipped`` and ``trace.languages``, each optional. 1.2:
#: ``by_position`` and ``by_position_skipped``, each optional.
SCHEMA_VERSION = "1.2"

Jsonable = Any


class _Section(BaseModel):
    """A section whose fields are all named here: an unknown key is a schema error."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class _OpenSection(BaseModel):
    """A section with named fields plus columns that depend on the run (kept, not checked)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    def get(self, key: str, default: Any = None) -> Any:
        """A field or extra column by name (for tables that list columns by name)."""
        return getattr(self, key, default)


class Interval(_Section):
    """A bootstrap confidence interval of one statistic."""

    estimate: float | None
    low: float | None
    high: float | None
    level: float
    method: str
    n_resamples: int
    n_undefined: int = 0


class OperatingPoint(_Section):
    """A threshold with the confusion counts and rates it gives on the pooled OOF scores."""

    threshold: float
    rule: str
    target_fpr: float | None = None
    feasible: bool = True
    f1: float | None = None
    precision: float | None = None
    recall: float | None = None
    fpr: float | None = None
    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0


class MicroMetrics(_OpenSection):
    """Pooled (micro) metrics at one threshold; ``ci`` holds intervals by metric name."""

    f1: float | None = None
    precision: float | None = None
    recall: float | None = None
    fpr: float | None = None
    auc: float | None = None
    n: int = 0
    ci: dict[str, Interval] = Field(default_factory=dict)


class MacroMetrics(_OpenSection):
    """Per-source means; ``skipped`` lists, per metric, the sources where it is undefined."""

    f1: float | None = None
    fpr: float | None = None
    primary: float | None = None
    ci: dict[str, Interval] = Field(default_factory=dict)
    skipped: dict[str, list[str]] = Field(default_factory=dict)


class PointMetrics(_Section):
    """Everything measured at one named threshold (headline, natural, fold median)."""

    threshold: float
    micro: MicroMetrics
    macro: MacroMetrics
    auc_ci: Interval | None = None


class SourceRow(_OpenSection):
    """One evaluation source at the headline threshold, with its primary metric's CI."""

    source: str
    n: int
    primary_metric: str
    primary: float | None = None
    small_n: bool = False


class SliceRates(_Section):
    """The rates of one slice of the prompts at the headline threshold, each with its 95% interval.

    ``primary_metric`` follows the label mix as a source's card does: F1 with
    both labels, recall when every prompt is an attack, ODA (1 − FPR) when none
    is. Recall needs attacks and FPR benign prompts; each is None without them.
    """

    n: int
    n_attack: int
    n_benign: int
    primary_metric: str
    primary: float | None = None
    primary_ci: Interval | None = None
    recall: float | None = None
    recall_ci: Interval | None = None
    fpr: float | None = None
    fpr_ci: Interval | None = None


class LanguageRow(SliceRates):
    """One prompt language at the headline threshold, every rate with its 95% interval."""

    language: str


class PositionRow(SliceRates):
    """One position in an agent's input (user, tool, document), every rate with its interval."""

    position: str


class PassSummary(_Section):
    """One CV pass pooled on its own: its own headline and natural points, and AUC."""

    headline: OperatingPoint
    natural: OperatingPoint
    auc: float | None = None


class Leakage(_Section):
    """F1 of the stratified pass minus the grouped pass (empty without a grouped pass)."""

    delta_f1_headline: float | None = None
    delta_f1_natural: float | None = None


class FoldThresholds(_Section):
    """Per-fold rows of one pass and their summary table."""

    folds: list[dict[str, Jsonable]]
    summary: dict[str, Jsonable]


class Sweep(_Section):
    """Pooled and macro metrics over a fixed grid of thresholds."""

    thresholds: list[float]
    micro_f1: list[float | None]
    micro_fpr: list[float | None]
    micro_recall: list[float | None]
    macro_f1: list[float | None]
    macro_fpr: list[float | None]


class RocCurve(_Section):
    """One headline fold's ROC curve, thinned to at most a few hundred points."""

    fold: int
    fpr: list[float]
    tpr: list[float]


class Latency(_OpenSection):
    """In-process single-text latency of a fold model (``n`` 0 when not measured)."""

    n: int = 0
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    mean: float | None = None


class TraceSummary(_Section):
    """What the run scored: the trace's id, sizes, composition and data-quality counts."""

    trace_id: str
    n_prompts: int
    n_rows: int
    labels: dict[str, int]
    roles: dict[str, dict[str, Jsonable]] = Field(default_factory=dict)
    composition: list[dict[str, Jsonable]] = Field(default_factory=list)
    duplicates: dict[str, Jsonable] = Field(default_factory=dict)
    skipped_sources: dict[str, Jsonable] = Field(default_factory=dict)
    licence_flags: dict[str, Jsonable] = Field(default_factory=dict)
    #: Identifier version and prompts whose language the loader gave vs detected.
    languages: dict[str, Jsonable] = Field(default_factory=dict)


class DetectorInfo(_Section):
    """The detector as run: registry name and parameters."""

    name: str
    params: dict[str, Jsonable] = Field(default_factory=dict)


class RunSettings(_Section):
    """The settings every number depends on."""

    fpr: float
    seed: int
    folds: int
    bootstrap: int
    passes: list[str]


class DiagnosticRecord(_Section):
    """One diagnostic's verdict, its criterion, and the statistics behind it."""

    name: str
    tier: str
    status: str
    reason: str
    criterion: str
    statistic: str = ""
    statistics: dict[str, Jsonable] = Field(default_factory=dict)
    figure: dict[str, Jsonable] | None = None
    seconds: float = 0.0


class Measurements(_Section):
    """Every number computed from the OOF table: what :func:`gatebench.summary.summarise` returns.

    ``operating_point`` is the one global threshold, chosen on the pooled
    StratifiedKFold OOF scores; every per-source figure is read at it.
    """

    operating_point: OperatingPoint
    natural_point: OperatingPoint
    fold_median_threshold: float
    metrics: dict[str, PointMetrics]
    by_source: list[SourceRow]
    passes: dict[str, PassSummary]
    leakage: Leakage = Field(default_factory=Leakage)
    fold_thresholds: dict[str, FoldThresholds] = Field(default_factory=dict)
    transferability: dict[str, Jsonable] = Field(default_factory=dict)
    sweep: Sweep | None = None
    roc_per_fold: list[RocCurve] = Field(default_factory=list)
    latency_ms: Latency = Field(default_factory=Latency)
    calibration: dict[str, Jsonable] = Field(default_factory=dict)
    # Absent from results written before languages were measured: they read as empty.
    by_language: list[LanguageRow] = Field(default_factory=list)
    by_language_skipped: dict[str, int] = Field(default_factory=dict)
    # Absent from results written before positions were recorded (schema < 1.2).
    by_position: list[PositionRow] = Field(default_factory=list)
    by_position_skipped: dict[str, int] = Field(default_factory=dict)

    @property
    def headline(self) -> PointMetrics:
        """Metrics at the headline operating point."""
        return self.metrics["headline"]

    def source(self, name: str) -> SourceRow | None:
        """The per-source row of ``name``, or None when the run did not score it."""
        return next((row for row in self.by_source if row.source == name), None)


class EvaluationResult(Measurements):
    """The whole of ``result.json``: what was run, every number, every verdict."""

    schema_version: str = SCHEMA_VERSION
    run_dir: str
    trace: TraceSummary
    detector: DetectorInfo
    config: RunSettings
    groups: dict[str, Jsonable] = Field(default_factory=dict)
    diagnostics: list[DiagnosticRecord] = Field(default_factory=list)
    comparisons: dict[str, Jsonable] = Field(default_factory=dict)

    def diagnostic(self, *names: str) -> DiagnosticRecord | None:
        """The first diagnostic whose name is one of ``names`` (``-`` and ``_`` alike)."""
        wanted = {n.lower().replace("-", "_") for n in names}
        return next(
            (d for d in self.diagnostics if d.name.lower().replace("-", "_") in wanted), None
        )

    def to_json(self) -> dict[str, Any]:
        """Plain JSON values, as written to ``result.json``."""
        return self.model_dump(mode="json")

    @classmethod
    def from_json(cls, payload: Any, *, path: Path | str = "result.json") -> EvaluationResult:
        """Validate a parsed ``result.json``, naming the file, the section and the fix.

        Raises
        ------
        SchemaError
            The payload is not an object, is of another major schema version,
            or a section does not have the shape this version writes.
        """
        if not isinstance(payload, dict):
            raise SchemaError(
                f"{path} holds a JSON {type(payload).__name__}, not the result object "
                "`gatebench run` writes. Re-run the evaluation into this directory "
                "(gatebench run --out DIR)."
            )
        if payload.get("kind") == "unseen":
            raise SchemaError(
                f"{path} is a `gatebench evaluate` result (a model on never-seen data), not a "
                "run's: `gatebench report DIR` renders it; compare and diagnose take run "
                "directories from `gatebench run`."
            )
        version = check_major(
            path, payload, SCHEMA_VERSION, "Re-run the evaluation or install a matching gatebench."
        )
        try:
            return cls.model_validate(payload)
        except ValidationError as exc:
            raise SchemaError(_explain(path, version, payload, exc)) from None


def check_major(path: Path | str, payload: dict[str, Any], supported: str, fix: str) -> str:
    """The payload's ``schema_version``; a SchemaError naming both versions when the major differs.

    A reader accepts any minor of its major (minors only add optional fields).
    """
    version = str(payload.get("schema_version", ""))
    if version.split(".")[0] != supported.split(".")[0]:
        raise SchemaError(
            f"{path} has schema_version {version!r}; this gatebench reads {supported}. {fix}"
        )
    return version


#: The sections a reader needs first, named first when several are missing.
_CORE_SECTIONS = ("trace", "detector", "operating_point", "metrics", "by_source")
_RERUN = "Re-run the evaluation: gatebench run --out DIR."


def _explain(path: Path | str, version: str, payload: dict[str, Any], exc: ValidationError) -> str:
    """One sentence that names the file, the section, what it holds, and the fix."""
    errors = exc.errors()
    fields = list(EvaluationResult.model_fields)
    missing = [e["loc"][0] for e in errors if e["type"] == "missing" and len(e["loc"]) == 1]
    if missing:
        order = [*_CORE_SECTIONS, *(f for f in fields if f not in _CORE_SECTIONS)]
        names = ", ".join(str(f) for f in order if f in missing)
        return (
            f"{path} lacks {names} (schema_version {version!r} but not a finished run's "
            f"result). {_RERUN}"
        )
    first = errors[0]
    top = str(first["loc"][0])
    value = payload.get(top)
    shown = json.dumps(value, default=str)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    # A section of the wrong JSON type, or a list section holding a non-object, is named as
    # such; pydantic's error type already says which shape was expected.
    loc, kind = first["loc"], first["type"]
    whole = len(loc) == 1 and kind in _SHAPE_ERRORS
    item = len(loc) == 2 and isinstance(value, list) and kind in _SHAPE_ERRORS
    if whole or item:
        want = "a JSON list of objects" if item or kind == "list_type" else "a JSON object"
        return (
            f"{path}: section {top!r} is {shown}, expected {want}; the file was edited or "
            f"damaged. {_RERUN}"
        )
    where = ".".join(str(p) for p in first["loc"])
    got = json.dumps(first.get("input"), default=str)
    got = got if len(got) <= 60 else got[:57] + "..."
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return (
        f"{path}: {where} is {got}: {first['msg'].lower()}{more}; schema_version {version!r} "
        f"but not the shape this gatebench writes (the file was edited or damaged). {_RERUN}"
    )


#: Pydantic error types that mean "this value is not the JSON shape the field takes".
_SHAPE_ERRORS = frozenset({"dict_type", "model_type", "list_type"})
