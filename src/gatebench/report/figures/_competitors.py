"""The published competitors a run was compared with, as the figures read them.

Names come from the run's ``comparisons`` (never a fixed label), and a
leaderboard row's competitors are reduced to one entry per system, as the
leaderboard ranks them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gatebench.report.figures._common import as_records
from gatebench.report.figures._spec import DEFAULT_NAMES
from gatebench.report.fmt import is_num
from gatebench.rundata import RunData

__all__ = ["is_lakera", "lakera_name", "leaderboard", "pareto_tables", "published_ranking"]


def is_lakera(system: Any) -> bool:
    """Lakera Guard, under any of the names the published table uses."""
    return "lakera" in str(system).lower()


def leaderboard(run: RunData) -> list[dict[str, Any]]:
    """``comparisons.leaderboard``: one record per dataset (empty when not compared)."""
    return as_records(run.comparison("leaderboard"))


def pareto_tables(run: RunData) -> Mapping[str, Any]:
    """``comparisons.pareto`` (``global`` and ``per_dataset``), empty when not compared."""
    p = run.comparison("pareto")
    return p if isinstance(p, Mapping) else {}


def lakera_name(run: RunData) -> str:
    """Lakera Guard's name as the run's comparisons spell it, else the product name."""
    pareto = pareto_tables(run)
    candidates = [
        ((row.get("lakera") or {}).get("competitor") or {}).get("system")
        for row in leaderboard(run)
    ]
    candidates += [
        c.get("system") for row in leaderboard(run) for c in as_records(row.get("competitors"))
    ]
    candidates += [r.get("system") for r in as_records(pareto.get("per_dataset"))]
    candidates += [
        r.get("system") for r in as_records((pareto.get("global") or {}).get("competitors"))
    ]
    return next((str(c) for c in candidates if c and is_lakera(c)), DEFAULT_NAMES["competitor"])


def published_ranking(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One published value per system on a leaderboard row's primary metric, best first.

    ``competitors`` lists every published row, so a system that two papers (or a
    paper and a repository log) report on the same dataset appears there twice;
    ``ranking`` is the leaderboard's own one-per-system list. Rows written
    before ``ranking`` existed are reduced here by the same rule: per system
    label (a self-evaluation, marked ``*``, is its own entry) the best value.
    """
    primary = str(row.get("primary_metric") or "")
    stored = row.get("ranking")
    best: dict[str, dict[str, Any]] = {}
    for c in as_records(stored if stored is not None else row.get("competitors")):
        if str(c.get("metric")) != primary or not is_num(c.get("value")):
            continue
        key = str(c.get("label") or c.get("system"))
        if key not in best or _key(primary, c["value"]) < _key(primary, best[key]["value"]):
            best[key] = c
    return sorted(best.values(), key=lambda c: _key(primary, c["value"]))


def _key(metric: str, value: float) -> float:
    """Sorts best first: FPR is the one lower-better metric on a leaderboard."""
    return value if metric == "fpr" else -value
