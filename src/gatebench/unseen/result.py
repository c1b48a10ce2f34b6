"""The typed, versioned shape of ``gatebench evaluate``'s ``result.json``.

A never-seen evaluation answers a different question from a run (how a
shipped model does at its shipped threshold on sets it never trained on), so
it has its own model, marked ``kind = "unseen"`` so that no reader mistakes
one for the other. Intervals share :class:`gatebench.result.Interval`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gatebench.errors import SchemaError
from gatebench.result import Interval, LanguageRow, PositionRow, check_major
from gatebench.trace_info import refused_note

__all__ = [
    "UNSEEN_SCHEMA_VERSION",
    "ModelInfo",
    "NearestSource",
    "Rates",
    "RefusedRow",
    "UnseenResult",
    "UnseenSource",
]

#: Major.minor, read as ``result.json``'s is. 1.1: ``by_position`` and
#: ``by_position_skipped``, each optional. 1.2: ``nearest`` and ``nearest_note``.
#: 1.3: ``refused_rows`` and ``refused``.
UNSEEN_SCHEMA_VERSION = "1.3"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Rates(_Section):
    """Counts, rates and their 95% intervals at one threshold (None where undefined)."""

    n: int
    n_attack: int
    n_benign: int
    recall: float | None = None
    fpr: float | None = None
    f1: float | None = None
    precision: float | None = None
    auc: float | None = None
    ci: dict[str, Interval] = Field(default_factory=dict)


class UnseenSource(Rates):
    """One evaluated source (or file): its rates and its primary metric."""

    source: str
    primary_metric: str
    primary: float | None = None
    excluded_overlap: int = 0


class ModelInfo(_Section):
    """The model as evaluated: where, its content hash, and what it ships with."""

    dir: str
    sha256: str
    detector: dict[str, Any]
    threshold: float
    target_fpr: float | None
    trace_id: str | None
    #: How the threshold was chosen (:func:`gatebench.modeldir.shipped_rule`).
    rule: str | None = None


class Overlap(_Section):
    """Prompts of the evaluated sets that the model's training trace already holds."""

    checked: bool
    excluded: bool
    prompts: int = 0
    by_source: dict[str, int] = Field(default_factory=dict)
    how: str = ""


class NearestSource(_Section):
    """A training source, and how many never-seen errors of one kind sit next to its rows.

    A false alarm is counted under the source of its nearest training attack,
    a missed attack under that of its nearest benign training text (Gate's
    neighbour head, on the prompt's driving chunk).
    """

    outcome: Literal["false alarm", "missed attack"]
    nearest: Literal["attack", "benign"]
    source: str
    prompts: int
    share: float


class RefusedRow(_Section):
    """An input row the load refused: no number counts it."""

    source: str
    file: str
    line: int
    reason: str


class UnseenResult(_Section):
    """The whole of an evaluation's ``result.json``."""

    schema_version: str = UNSEEN_SCHEMA_VERSION
    kind: Literal["unseen"] = "unseen"
    model: ModelInfo
    data_trace_id: str
    sources: list[str]
    overlap: Overlap
    pooled: Rates
    by_source: list[UnseenSource]
    by_language: list[LanguageRow] = Field(default_factory=list)
    by_language_skipped: dict[str, int] = Field(default_factory=dict)
    by_position: list[PositionRow] = Field(default_factory=list)
    by_position_skipped: dict[str, int] = Field(default_factory=dict)
    in_distribution: Rates | None = None
    in_distribution_run: str | None = None
    nearest: list[NearestSource] = Field(default_factory=list)
    #: Why ``nearest`` is empty, when it is.
    nearest_note: str | None = None
    #: Input rows refused at load, and the first of them
    #: (:func:`gatebench.trace_info.refused_record`; ``manifest.json`` lists them all).
    refused_rows: int = 0
    refused: list[RefusedRow] = Field(default_factory=list)
    seed: int
    n_resamples: int
    timings_seconds: dict[str, float] = Field(default_factory=dict)

    def refused_note(self, where: str) -> str | None:
        """The line naming the refused rows (:func:`gatebench.trace_info.refused_note`)."""
        rows = [row.model_dump() for row in self.refused]
        return refused_note(rows, where, total=self.refused_rows)

    @classmethod
    def read(cls, path: Path) -> UnseenResult:
        """Read and validate ``path``, naming it and the fix when it is not one."""
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SchemaError(f"cannot read {path}: {exc}. Re-run `gatebench evaluate`.") from exc
        if not isinstance(payload, dict):
            raise SchemaError(f"{path} is not an evaluation's result. Re-run `gatebench evaluate`.")
        check_major(path, payload, UNSEEN_SCHEMA_VERSION, "Re-run `gatebench evaluate`.")
        try:
            return cls.model_validate(payload)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise SchemaError(
                f"{path}: {where}: {first['msg'].lower()}; the file was edited or damaged. "
                "Re-run `gatebench evaluate`."
            ) from None
