"""Helpers shared by the extractors: tolerant readers of stored tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gatebench.report.fmt import is_num
from gatebench.result import DiagnosticRecord
from gatebench.split import HEADLINE_PASS

__all__ = [
    "HEADLINE_PASS",
    "PASS_NAMES",
    "as_records",
    "diag_figure",
    "estimate_ticks",
    "finite",
    "first",
    "grouped_layout",
    "label_groups",
    "missing_diag",
    "pass_order",
]

#: Display names of the CV passes a run records.
PASS_NAMES = {
    "strat": "StratifiedKFold (headline)",
    "sgk": "StratifiedGroupKFold (leakage)",
}


def pass_order(name: str) -> tuple[bool, str]:
    """Sort key that puts the headline pass first, then the others by name."""
    return name != HEADLINE_PASS, name


def as_records(obj: Any) -> list[dict[str, Any]]:
    """A table stored as a list of records or as a dict of equal-length columns.

    Diagnostics and comparisons are written by other modules; accepting both
    layouts keeps the report independent of which one they chose.

    Examples
    --------
    >>> as_records({"a": [1, 2], "b": [3, 4]})
    [{'a': 1, 'b': 3}, {'a': 2, 'b': 4}]
    >>> as_records([{"a": 1}])
    [{'a': 1}]
    """
    if isinstance(obj, Mapping):
        cols = {k: v for k, v in obj.items() if isinstance(v, Sequence) and not isinstance(v, str)}
        if not cols:
            return []
        n = min(len(v) for v in cols.values())
        return [{k: v[i] for k, v in cols.items()} for i in range(n)]
    if isinstance(obj, Sequence) and not isinstance(obj, str):
        return [dict(r) for r in obj if isinstance(r, Mapping)]
    return []


def finite(values: Sequence[Any]) -> bool:
    """True when ``values`` is non-empty and every element is a finite number."""
    return len(values) > 0 and all(is_num(v) for v in values)


def diag_figure(item: DiagnosticRecord | None) -> dict[str, Any]:
    """A diagnostic's figure data merged over its statistics (figure keys win)."""
    if item is None:
        return {}
    return {**item.statistics, **(item.figure or {})}


def missing_diag(what: str, ran_any: bool = False) -> str:
    """The one-line reason for a diagnostic figure whose check is not in the run."""
    if ran_any:
        return (
            f"the run's diagnostics do not include `{what}` (expensive checks run with "
            "`gatebench run --diagnostics all`)."
        )
    return (
        "the run recorded no diagnostics (`--diagnostics none`, or a gatebench without the "
        f"diagnostics battery), so there is no `{what}` result to draw."
    )


def first(d: Mapping[str, Any], *keys: str, default: Any = None) -> Any:
    """The value of the first key of ``keys`` present (and not None) in ``d``."""
    for k in keys:
        if d.get(k) is not None:
            return d[k]
    return default


def grouped_layout(
    rows: list[dict[str, Any]], key: str
) -> tuple[list[float], list[tuple[float, str]]]:
    """y of each data row, and (y, group) of a heading row above each run of ``rows[key]``.

    Forest plots group their rows (by source family, by metric) under a
    heading line; rows arrive in drawing order, grouped.
    """
    ys: list[float] = []
    headers: list[tuple[float, str]] = []
    y, last = 0.0, None
    for r in rows:
        if r[key] != last:
            headers.append((y, r[key]))
            y += 1
            last = r[key]
        ys.append(y)
        y += 1
    return ys, headers


def label_groups(
    ax: Any, ys: list[float], headers: list[tuple[float, str]], labels: list[str], names: list[str]
) -> None:
    """Row labels and bold group headings on the y axis, a faint rule between groups.

    ``ys`` and ``headers`` come from :func:`grouped_layout`; ``names`` are the
    headings' display names, in ``headers`` order. Rows run top to bottom.
    """
    ticks = ys + [h[0] for h in headers]
    ax.set_yticks(ticks, labels + names)
    flags = [False] * len(ys) + [True] * len(headers)
    for tick, is_header in zip(ax.get_yticklabels(), flags, strict=True):
        if is_header:
            tick.set_fontweight("bold")
    for y, _ in headers[1:]:
        ax.axhline(y - 0.5, color="black", lw=0.5, alpha=0.3)
    ax.set_ylim(max(ticks) + 0.6, -0.6)


def estimate_ticks(ax: Any, ys: list[float], rows: list[dict[str, Any]]) -> None:
    """A dark tick at each row's ``estimate``.

    Dark, not white: a point estimate with a zero-width interval (recall 1.0 on
    every resample) must stay visible on its bar.
    """
    est = [(y, r["estimate"]) for y, r in zip(ys, rows, strict=True) if is_num(r.get("estimate"))]
    if est:
        xs, yy = [e[1] for e in est], [e[0] for e in est]
        ax.plot(xs, yy, "|", color="#0b2545", ms=10, mew=2, ls="none", zorder=4)
