"""Core value types shared across the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DATA_POSITIONS",
    "POSITIONS",
    "Family",
    "Position",
    "PrimaryMetric",
    "Role",
    "Sample",
    "StagedScores",
    "Status",
]


class Family(StrEnum):
    """Label composition of a benchmark, which fixes its primary metric."""

    BALANCED = "balanced"
    ALL_ATTACK = "all_attack"
    ALL_BENIGN = "all_benign"

    @property
    def primary_metric(self) -> PrimaryMetric:
        """The metric the benchmark is designed to be scored on."""
        return {
            Family.BALANCED: PrimaryMetric.F1,
            Family.ALL_ATTACK: PrimaryMetric.RECALL,
            Family.ALL_BENIGN: PrimaryMetric.ODA,
        }[self]


class Role(StrEnum):
    """What a source is for: scored as a benchmark, or only fitted on.

    A training corpus widens what a detector learns from but is never scored,
    so it cannot inflate the headline or the per-source tables.
    """

    EVALUATION = "evaluation"
    TRAINING = "training"


class Position(StrEnum):
    """Where a text sits in an LLM agent's input.

    A gate in front of an agent reads user turns, tool results and retrieved
    documents alike, and an injection planted in a tool result or a document
    may be harder to catch than one typed by the user; results are reported
    per position so that the difference shows.
    """

    USER = "user"
    TOOL = "tool"
    DOCUMENT = "document"

    @classmethod
    def parse(cls, value: object, where: str) -> Position:
        """``value`` as a position; ``None`` is a user turn.

        Raises
        ------
        ValueError
            ``value`` is not one of the positions; the message names ``where``
            (source and row) and the value.
        """
        if value is None:
            return cls.USER
        if isinstance(value, str) and value in cls._value2member_map_:
            return cls(value)
        raise ValueError(
            f"{where}: position {value!r} is not one of {[str(p) for p in cls]} "
            "(user turn, tool result, retrieved or pasted document)"
        )


#: Every position's name, in :class:`Position` order (what boundaries list as valid).
POSITIONS: tuple[str, ...] = tuple(str(p) for p in Position)
#: Positions whose texts an agent reads as data, not as a request to it.
DATA_POSITIONS = frozenset({str(Position.TOOL), str(Position.DOCUMENT)})


class PrimaryMetric(StrEnum):
    """Per-dataset primary metric: F1, recall, or over-defence accuracy (1 - FPR)."""

    F1 = "f1"
    RECALL = "recall"
    ODA = "oda"


class Status(StrEnum):
    """Outcome of a diagnostic check."""

    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    NOT_APPLICABLE = "NOT_APPLICABLE"


@dataclass(frozen=True, slots=True)
class Sample:
    """One labelled prompt as a loader emits it.

    Parameters
    ----------
    sample_id : str
        Stable identifier, unique within the source, e.g. ``"deepset:train:17"``.
    text : str
        The prompt or document text.
    label : int
        1 for attack, 0 for benign.
    source : str
        Registered source name.
    parent_id : str or None
        Upstream parent (for example the clean document an injection was built
        from). Rows sharing a parent are grouped together in the grouped pass.
    language : str or None
        ISO 639-1 code where the upstream states it.
    position : str or None
        Where the text sits in an LLM agent's input (:class:`Position`):
        ``"user"`` (a user turn; the default when None), ``"tool"`` (a tool or
        function result) or ``"document"`` (retrieved or pasted content).
    meta : dict
        Free-form upstream fields kept for inspection (split, category, ...).
    """

    sample_id: str
    text: str
    label: int
    source: str
    parent_id: str | None = None
    language: str | None = None
    position: str | None = None
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True, slots=True)
class StagedScores:
    """Scores and how each was reached: :meth:`gatebench.gate.Gate.score_report`, and what a
    conversation scan asks of its window scorer.

    Attributes
    ----------
    scores : ndarray
        P(attack) per text.
    stages : list of str
        ``"fast"``, ``"deferred"`` or ``"segment"``: the stage that decided each text.
    stage_ms : dict
        Wall milliseconds of the call per stage.
    segments : list of str or None
        Per text, the segment that raised its score when read alone (a line
        or sentence of a tool result or document), None where none did.
    """

    scores: np.ndarray
    stages: list[str]
    stage_ms: dict[str, float]
    segments: list[str | None]
