"""The executive summary: what a reader must see before scrolling.

A report whose first screen shows F1 and θ but hides a failed leakage check
tells a better story than the run supports. This block carries the headline
with its interval, every check that did not pass (one line each, linked to its
row in the diagnostics table), the leakage premium and the LODO gap when they
were measured, and the sources too small to be read on their own.

Macro FPR gets its own line: every source with benign prompts counts once in
it, so a source with a handful of benign rows can move it by points. The line
carries the mean's interval and names the small sources pulling it up.
"""

from __future__ import annotations

from typing import Any

from gatebench.metrics.bootstrap import SMALL_N
from gatebench.report.figures._common import as_records
from gatebench.report.fmt import ci, count, is_num, num, pct, signed_pp
from gatebench.report.tables import defined
from gatebench.rundata import RunData

__all__ = ["executive_summary", "macro_fpr"]

_SHOWN = ("FAIL", "WARN")


def _headline(run: RunData) -> dict[str, str]:
    head = (run.result.get("metrics") or {}).get("headline") or {}
    micro = head.get("micro") or {}
    cis = micro.get("ci") or {}
    f1_ci = cis.get("f1") or {}
    return {
        "f1": pct(micro.get("f1")),
        "f1_ci": ci(f1_ci.get("low"), f1_ci.get("high")) if f1_ci else "",
        "fpr": pct(micro.get("fpr"), 2),
        "recall": pct(micro.get("recall")),
        "threshold": num(head.get("threshold"), 4),
        "target_fpr": pct((run.result.get("config") or {}).get("fpr"), 2),
    }


def macro_fpr(run: RunData) -> dict[str, Any] | None:
    """The headline macro FPR with its interval and the small-n sources driving it.

    A driver is a source with fewer than ``SMALL_N`` benign prompts whose FPR is
    above the mean; its share is the points it adds to the mean (its FPR over
    the number of sources averaged). None when the run stores no macro FPR.
    """
    macro = ((run.result.get("metrics") or {}).get("headline") or {}).get("macro") or {}
    value = macro.get("fpr")
    if not is_num(value):
        return None
    interval = (macro.get("ci") or {}).get("fpr") or {}
    averaged = [
        r
        for r in as_records(run.result.get("by_source"))
        if defined("fpr", r) and is_num(r.get("fpr"))
    ]
    drivers = sorted(
        (
            r
            for r in averaged
            if is_num(r.get("n_neg")) and r["n_neg"] < SMALL_N and r["fpr"] > value
        ),
        key=lambda r: -r["fpr"],
    )
    return {
        "value": value,
        "text": pct(value, 2),
        "low": interval.get("low"),
        "high": interval.get("high"),
        "ci": ci(interval.get("low"), interval.get("high"), 2),
        "n_sources": len(averaged),
        "small": SMALL_N,
        "drivers": [
            {
                "source": str(r.get("source")),
                "fpr": pct(r["fpr"], 2),
                "n_neg": count(r["n_neg"]),
                "share": f"{100 * r['fpr'] / len(averaged):.2f} pp",
            }
            for r in drivers
        ],
    }


def _lodo_gap(run: RunData) -> str:
    for d in as_records(run.result.get("diagnostics")):
        if d.get("name") == "lodo":
            gap = (d.get("statistics") or {}).get("gap")
            macro = (d.get("statistics") or {}).get("macro_mean")
            if is_num(gap) and is_num(macro):
                return f"LODO macro {num(macro)}, {num(gap)} below the in-distribution macro"
    return ""


def executive_summary(run: RunData) -> dict[str, Any]:
    """Headline, non-passing checks, leakage premium, LODO gap and small-n sources."""
    checks = [
        {
            "name": str(d.get("name", "")),
            "status": str(d.get("status", "")).upper(),
            "text": str(d.get("statistic") or d.get("reason") or ""),
        }
        for d in as_records(run.result.get("diagnostics"))
        if str(d.get("status", "")).upper() in _SHOWN
    ]
    checks.sort(key=lambda c: (_SHOWN.index(c["status"]), c["name"]))
    leakage = (run.result.get("leakage") or {}).get("delta_f1_headline")
    small = [
        str(r.get("source")) for r in as_records(run.result.get("by_source")) if r.get("small_n")
    ]
    return {
        "headline": _headline(run),
        "macro_fpr": macro_fpr(run),
        "checks": checks,
        "leakage": signed_pp(leakage) if is_num(leakage) else "",
        "lodo": _lodo_gap(run),
        "small_n": sorted(small),
    }
