"""What every diagnostic shares: its result record, its declaration, the registry.

A check is a :class:`Check`: a name, a tier, its pass criterion in words and
numbers, and a ``run(ctx)`` function returning a :class:`DiagnosticResult`.
Built-in checks are registered lazily (``"module:CHECK"``) in :data:`DIAGNOSTICS`,
so a check's heavy imports happen only when it runs; plug-ins use
:func:`register_diagnostic` and an entry point.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from gatebench.registry import Registry
from gatebench.types import Status

if TYPE_CHECKING:
    from gatebench.diagnostics.context import DiagnosticContext

__all__ = [
    "DIAGNOSTICS",
    "TIERS",
    "Check",
    "DiagnosticResult",
    "Tier",
    "plain",
    "register_diagnostic",
]

Tier = Literal["cheap", "expensive"]
#: Run tiers: which check tiers each ``--diagnostics`` value includes.
TIERS: dict[str, tuple[str, ...]] = {
    "none": (),
    "cheap": ("cheap",),
    "all": ("cheap", "expensive"),
}


def plain(value: Any) -> Any:
    """Recursively turn numpy scalars/arrays into JSON-safe Python; NaN/inf -> None.

    Examples
    --------
    >>> plain({"a": np.float64("nan"), "b": np.arange(2), "c": (np.int8(3),)})
    {'a': None, 'b': [0, 1], 'c': [3]}
    """
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating | float):
        x = float(value)
        return None if math.isnan(x) or math.isinf(x) else x
    if isinstance(value, Status):
        return str(value)
    return value


@dataclass
class DiagnosticResult:
    """Outcome of one check.

    Attributes
    ----------
    name, tier : str
        The check's registry name and tier (``cheap`` or ``expensive``).
    status : Status
        PASS, WARN, FAIL or NOT_APPLICABLE.
    reason : str
        One or two sentences: why this status, in numbers.
    criterion : str
        The pass criterion, as declared by the check.
    statistic : str
        The headline statistic, formatted for a table cell.
    statistics : dict
        Every number the check computed (JSON-safe after :meth:`as_dict`).
    figure : dict
        The data the check's figure needs (arrays as lists).
    seconds : float
        Wall time the check took.
    """

    name: str
    tier: str
    status: Status
    reason: str
    criterion: str
    statistic: str = ""
    statistics: dict[str, Any] = field(default_factory=dict)
    figure: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """Plain-JSON record for ``result.json["diagnostics"]``."""
        out = {
            "name": self.name,
            "tier": self.tier,
            "status": str(self.status),
            "reason": self.reason,
            "criterion": self.criterion,
            "statistic": self.statistic,
            "statistics": plain(self.statistics),
            "figure": plain(self.figure),
            "seconds": round(float(self.seconds), 3),
        }
        return dict(out)


@dataclass(frozen=True)
class Check:
    """A registered diagnostic: its name, tier, criterion and the function that runs it."""

    name: str
    tier: Tier
    criterion: str
    run: Callable[[DiagnosticContext], DiagnosticResult]

    def result(
        self,
        status: Status,
        reason: str,
        *,
        statistic: str = "",
        statistics: dict[str, Any] | None = None,
        figure: dict[str, Any] | None = None,
    ) -> DiagnosticResult:
        """A :class:`DiagnosticResult` stamped with this check's name, tier and criterion."""
        return DiagnosticResult(
            name=self.name,
            tier=self.tier,
            status=status,
            reason=reason,
            criterion=self.criterion,
            statistic=statistic,
            statistics=statistics or {},
            figure=figure or {},
        )

    def not_applicable(self, reason: str, **statistics: Any) -> DiagnosticResult:
        """Shorthand for a NOT_APPLICABLE result."""
        return self.result(Status.NOT_APPLICABLE, reason, statistic="n/a", statistics=statistics)


def _not_a_check(name: str, obj: Any) -> str | None:
    if not isinstance(obj, Check):
        return (
            f"it names an object of type {type(obj).__name__}, not a gatebench.diagnostics.Check "
            "(decorate the run function with register_diagnostic)"
        )
    if obj.name != name:
        return f"its check is named {obj.name!r}; the entry point must use the check's name"
    if obj.tier not in ("cheap", "expensive"):
        return f"its tier is {obj.tier!r}; use 'cheap' or 'expensive'"
    return None


DIAGNOSTICS: Registry[Check] = Registry(
    "diagnostic",
    group="gatebench.diagnostics",
    check=_not_a_check,
    listing="gatebench diagnostics list",
)


def register_diagnostic(
    name: str, *, tier: Tier, criterion: str
) -> Callable[[Callable[[DiagnosticContext], DiagnosticResult]], Check]:
    """Register ``run(ctx) -> DiagnosticResult`` as the check ``name``.

    The decorated name becomes the :class:`Check`, so the function can stamp
    its results with ``<name>.result(...)``. Runs include the check when their
    ``--diagnostics`` tier covers ``tier``. A third-party package also declares
    the check as an entry point named ``name`` in the ``gatebench.diagnostics``
    group.

    Parameters
    ----------
    name : str
        Registry name, recorded in result.json.
    tier : {"cheap", "expensive"}
        Expensive checks refit the detector; they run only with ``--diagnostics all``.
    criterion : str
        The pass criterion in words and numbers, shown in the report.
    """

    def deco(run: Callable[[DiagnosticContext], DiagnosticResult]) -> Check:
        check = Check(name, tier, criterion, run)
        DIAGNOSTICS.add(name, check, module=run.__module__)
        return check

    return deco


# Registration order is the order of issue 5 and of the report table.
for _name, _path in {
    "leakage_premium": "gatebench.diagnostics.leakage:CHECK",
    "lodo": "gatebench.diagnostics.lodo:CHECK",
    "random_label": "gatebench.diagnostics.random_label:CHECK",
    "random_label_retrain": "gatebench.diagnostics.random_label:RETRAIN",
    "adversarial_validation": "gatebench.diagnostics.adversarial:CHECK",
    "train_vs_oof": "gatebench.diagnostics.train_oof:CHECK",
    "length_bias": "gatebench.diagnostics.length_bias:CHECK",
    "permutation_importance": "gatebench.diagnostics.permutation:CHECK",
    "head_agreement": "gatebench.diagnostics.heads:CHECK",
    "cross_source_conflicts": "gatebench.diagnostics.conflicts:CHECK",
    "threshold_transferability": "gatebench.diagnostics.transfer:CHECK",
    "determinism_replay": "gatebench.diagnostics.replay:CHECK",
    "paraphrase_invariance": "gatebench.diagnostics.paraphrase:CHECK",
    "shortcut_controls": "gatebench.diagnostics.shortcuts:CHECK",
}.items():
    DIAGNOSTICS.add(_name, _path)
