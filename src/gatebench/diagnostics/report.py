"""Table rows for ``gatebench diagnose RUN_DIR`` and for printing fresh results."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gatebench.diagnostics._base import DiagnosticResult
from gatebench.result import DiagnosticRecord

__all__ = ["COLUMNS", "diagnose_rows", "result_rows"]

#: Columns of the diagnose table, in display order.
COLUMNS = ("name", "tier", "status", "statistic", "criterion", "reason")
_ORDER = {"FAIL": 0, "WARN": 1, "PASS": 2, "NOT_APPLICABLE": 3}


def _row(d: DiagnosticRecord) -> dict[str, Any]:
    return {
        "name": d.name,
        "tier": d.tier,
        "status": d.status,
        "statistic": d.statistic,
        "criterion": d.criterion,
        "reason": d.reason,
        "seconds": d.seconds,
    }


def diagnose_rows(
    records: Iterable[DiagnosticRecord], *, by_status: bool = False
) -> list[dict[str, Any]]:
    """One table row per diagnostic recorded in a run's ``result.json``.

    Parameters
    ----------
    records : iterable of DiagnosticRecord
        ``EvaluationResult.diagnostics`` of a run (``artifacts.read_result``).
    by_status : bool
        Sort FAIL, WARN, PASS, NOT_APPLICABLE (stable) instead of run order.

    Returns
    -------
    list of dict
        Keys :data:`COLUMNS` plus ``seconds``; an empty list when the run
        recorded no diagnostics (``--diagnostics none``).

    Examples
    --------
    >>> rows = diagnose_rows([DiagnosticRecord(name="length_bias", tier="cheap",
    ...     status="PASS", statistic="ρ +0.05", criterion="|ρ| ≤ 0.3",
    ...     reason="overall ρ = +0.050", seconds=0.1)])
    >>> rows[0]["name"], rows[0]["status"]
    ('length_bias', 'PASS')
    """
    rows = [_row(d) for d in records]
    if by_status:
        rows.sort(key=lambda r: _ORDER.get(r["status"], 9))
    return rows


def result_rows(results: Iterable[DiagnosticResult]) -> list[dict[str, Any]]:
    """The same rows from in-memory results (e.g. right after ``run_diagnostics``)."""
    return diagnose_rows(DiagnosticRecord.model_validate(r.as_dict()) for r in results)
