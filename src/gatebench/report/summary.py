"""The executive summary: what a reader must see before scrolling.

A report whose first screen shows F1 and θ but hides a failed leakage check
tells a better story than the run supports. This block carries the headline
with its interval, every check that did not pass (one line each, linked to its
row in the diagnostics table), the leakage premium and the LODO gap when they
were measured, the sources too small to be read on their own, and the input
rows the trace refused, which no number counts.

Macro FPR gets its own line: every source with benign prompts counts once in
it, so a source with a handful of benign rows can move it by points. The line
carries the mean's interval and names the small sources pulling it up.
"""

from __future__ import annotations

from typing import Any

from gatebench.metrics.bootstrap import SMALL_N
from gatebench.report.fmt import ci, count, is_num, num, pct, signed_pp
from gatebench.report.tables import defined
from gatebench.rundata import RunData
from gatebench.trace_info import refused_note

__all__ = ["executive_summary", "macro_fpr"]

_SHOWN = ("FAIL", "WARN")


def _headline(run: RunData) -> dict[str, str]:
    head = run.result.headline
    micro = head.micro
    f1_ci = micro.ci.get("f1")
    return {
        "f1": pct(micro.f1),
        "f1_ci": ci(f1_ci.low, f1_ci.high) if f1_ci is not None else "",
        "fpr": pct(micro.fpr, 2),
        "recall": pct(micro.recall),
        "threshold": num(head.threshold, 4),
        "target_fpr": pct(run.result.config.fpr, 2),
    }


def macro_fpr(run: RunData) -> dict[str, Any] | None:
    """The headline macro FPR with its interval and the small-n sources driving it.

    A driver is a source with fewer than ``SMALL_N`` benign prompts whose FPR is
    above the mean; its share is the points it adds to the mean (its FPR over
    the number of sources averaged). None when the run stores no macro FPR.
    """
    macro = run.result.headline.macro
    value = macro.fpr
    if not is_num(value):
        return None
    interval = macro.ci.get("fpr")
    low, high = (interval.low, interval.high) if interval is not None else (None, None)
    # Per-source FPR and benign counts are extra columns of the run's per-source table.
    averaged = [
        (r.source, fpr, r.get("n_neg"))
        for r in run.result.by_source
        if defined("fpr", r) and is_num(fpr := r.get("fpr"))
    ]
    drivers = sorted(
        (
            (source, fpr, n_neg)
            for source, fpr, n_neg in averaged
            if is_num(n_neg) and n_neg < SMALL_N and fpr > value
        ),
        key=lambda d: -d[1],
    )
    return {
        "value": value,
        "text": pct(value, 2),
        "low": low,
        "high": high,
        "ci": ci(low, high, 2),
        "n_sources": len(averaged),
        "small": SMALL_N,
        "drivers": [
            {
                "source": source,
                "fpr": pct(fpr, 2),
                "n_neg": count(n_neg),
                "share": f"{100 * fpr / len(averaged):.2f} pp",
            }
            for source, fpr, n_neg in drivers
        ],
    }


def _lodo_gap(run: RunData) -> str:
    for d in run.result.diagnostics:
        if d.name == "lodo":
            gap, macro = d.statistics.get("gap"), d.statistics.get("macro_mean")
            if is_num(gap) and is_num(macro):
                return f"LODO macro {num(macro)}, {num(gap)} below the in-distribution macro"
    return ""


def executive_summary(run: RunData) -> dict[str, Any]:
    """Headline, non-passing checks, leakage premium, LODO gap, small-n sources, refused rows."""
    checks = [
        {
            "name": d.name,
            "status": d.status.upper(),
            "text": d.statistic or d.reason,
        }
        for d in run.result.diagnostics
        if d.status.upper() in _SHOWN
    ]
    checks.sort(key=lambda c: (_SHOWN.index(c["status"]), c["name"]))
    # None without a grouped pass.
    leakage = run.result.leakage.delta_f1_headline
    small = [r.source for r in run.result.by_source if r.small_n]
    return {
        "headline": _headline(run),
        "macro_fpr": macro_fpr(run),
        "checks": checks,
        "leakage": signed_pp(leakage) if is_num(leakage) else "",
        "lodo": _lodo_gap(run),
        "small_n": sorted(small),
        "refused": refused_note(run.trace_info.get("malformed_rows", []), "trace_info.json"),
    }
