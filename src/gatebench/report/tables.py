"""Rows for every table of the report, read from the run directory.

Each function returns plain dicts that the Jinja templates and the Markdown
summary print as they are. Numbers keep their stored value next to their
formatted text, so a test can check one against the other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gatebench.report.figures._common import PASS_NAMES, as_records, pass_order
from gatebench.report.fmt import ci, count, is_num, num, pct, rate_digits, signed_pp
from gatebench.result import MacroMetrics, MicroMetrics, SourceRow
from gatebench.rundata import RunData

__all__ = [
    "defined",
    "diagnostics_rows",
    "duplicates",
    "fold_tables",
    "header",
    "headline_rows",
    "leaderboard_rows",
    "licence_rows",
    "macro_coverage",
    "macro_intervals",
    "operating_sentences",
]

HEADLINE_KEYS = ("f1", "precision", "recall", "fpr")
STATUS_ORDER = {"FAIL": 0, "WARN": 1, "PASS": 2, "NOT_APPLICABLE": 3}


def header(run: RunData) -> dict[str, Any]:
    """Trace, detector, seed, versions and configuration for the report's header."""
    res, man = run.result, run.manifest
    trace = res.trace
    env = man.get("environment") or {}
    # Roles are written by the trace builder, one free-form record per role.
    evaluation = trace.roles.get("evaluation") or {}
    training = trace.roles.get("training") or {}
    comp = trace.composition
    total = {k: sum(int(r.get(k) or 0) for r in comp) for k in ("attack", "benign", "total")}
    params = res.detector.params
    return {
        "trace_id": trace.trace_id,
        "n_prompts": count(trace.n_prompts),
        "n_scored": count(evaluation.get("prompts") or trace.n_prompts),
        "n_training": count(training.get("prompts")),
        "n_rows": count(trace.n_rows),
        "composition": [{**r, **{k: count(r.get(k)) for k in total}} for r in comp],
        "composition_total": {k: count(v) for k, v in total.items()},
        "skipped": trace.skipped_sources,
        "training_sources": training.get("sources", []),
        "training_overlap": count(training.get("dropped_overlapping_evaluation")),
        "detector": res.detector.name,
        "detector_params": json.dumps(params, sort_keys=True) if params else "defaults",
        "seed": res.config.seed,
        "seed_derivation": (man.get("seeds") or {}).get("derivation", ""),
        # A mapping: the templates read each setting with `.get` and a default.
        "config": res.config.model_dump(),
        "python": env.get("python", "not recorded"),
        "platform": env.get("platform", ""),
        "git_commit": env.get("git_commit") or "not recorded",
        "created": env.get("created", ""),
        "packages": {k: v or "not installed" for k, v in (env.get("packages") or {}).items()},
        "run_dir": res.run_dir or run.run_dir.name,
    }


def operating_sentences(run: RunData) -> list[str]:
    """The operating points stated in words: threshold, target FPR, achieved FPR and counts."""
    res = run.result
    out = []
    # Both points and the fold median are always written, as finite numbers: a NaN
    # is stored as null, which the schema refuses for a threshold.
    op = res.operating_point
    feasible = (
        ""
        if op.feasible
        else " No threshold met the cap, so the point blocks nothing (infeasible)."
    )
    out.append(
        f"Headline operating point θ_op = {op.threshold:.4f}: the threshold with the "
        f"highest pooled F1 among those whose pooled FPR is at most the target "
        f"τ = {pct(op.target_fpr, 2)}, chosen once on the out-of-fold scores of the "
        f"StratifiedKFold pass and applied unchanged to every source. Achieved FPR "
        f"{pct(op.fpr, 2)} ({count(op.fp)} of {count(op.fp + op.tn)} benign prompts "
        f"flagged); recall {pct(op.recall)}; F1 {pct(op.f1)}.{feasible}"
    )
    nat = res.natural_point
    out.append(
        f"Natural point θ_F1 = {nat.threshold:.4f}: the unconstrained F1 maximiser; "
        f"FPR {pct(nat.fpr, 2)}, recall {pct(nat.recall)}, F1 {pct(nat.f1)}."
    )
    out.append(
        f"Median of the per-fold inner-valid thresholds θ̃ = {res.fold_median_threshold:.4f} "
        "(the paper's §2.3 canonical point; reported for stability, not used for the headline)."
    )
    # Empty without a grouped pass: no premium to state.
    delta = res.leakage.delta_f1_headline
    if is_num(delta):
        out.append(
            "Leakage premium ΔF1 = F1(StratifiedKFold) − F1(StratifiedGroupKFold): "
            f"{signed_pp(delta)} at the headline point, "
            f"{signed_pp(res.leakage.delta_f1_natural)} at the natural point."
        )
    note = res.groups.get("note")
    if note:
        out.append(f"Groups: {note}")
    return out


def _cell(values: MicroMetrics | MacroMetrics, key: str, path: str) -> dict[str, Any]:
    v, interval = values.get(key), values.ci.get(key)
    low, high = (interval.low, interval.high) if interval is not None else (None, None)
    digits = rate_digits(key)
    return {
        "key": f"{path}.{key}",
        "value": v,
        "text": pct(v, digits),
        "ci_low": low,
        "ci_high": high,
        "ci_text": ci(low, high, digits),
    }


def headline_rows(run: RunData) -> list[dict[str, Any]]:
    """Micro and macro at the headline and natural points, each metric with its 95% CI."""
    rows = []
    for point, label in (("headline", "headline (FPR ≤ τ)"), ("natural", "natural (max F1)")):
        m = run.result.metrics.get(point)
        if m is None:
            continue
        aggregations: tuple[tuple[str, MicroMetrics | MacroMetrics, dict[str, list[str]]], ...] = (
            ("micro", m.micro, {}),
            ("macro", m.macro, m.macro.skipped),
        )
        for agg, values, skipped in aggregations:
            rows.append(
                {
                    "point": label,
                    "point_key": point,
                    "aggregation": agg,
                    "threshold": m.threshold,
                    "threshold_text": num(m.threshold, 4),
                    "cells": [_cell(values, k, f"metrics.{point}.{agg}") for k in HEADLINE_KEYS],
                    "skipped": {k: v for k, v in skipped.items() if v},
                }
            )
    return rows


def macro_intervals(run: RunData) -> list[str]:
    """Metrics whose headline macro mean has a stored interval, in table order.

    Runs written before the macro-FPR interval existed store F1's only; the
    table caption says which, rather than implying an interval is missing.
    """
    cis = run.result.headline.macro.ci
    return [k for k in HEADLINE_KEYS if k in cis and is_num(cis[k].low)]


def macro_coverage(run: RunData) -> dict[str, Any]:
    """How many sources each macro mean averages, and which are skipped as undefined.

    Single-class sources leave some metrics undefined (no F1 without attacks,
    no FPR without benign prompts); macro skips them, and the reader must know.
    """
    metrics = run.result.metrics
    n_sources = len(run.result.by_source)
    per_point = {
        point: m.macro.skipped if (m := metrics.get(point)) is not None else {}
        for point in ("headline", "natural")
    }
    head = per_point["headline"]
    rows = [
        {"metric": k, "n_used": n_sources - len(v), "skipped": ", ".join(map(str, v))}
        for k, v in head.items()
        if k != "primary"
    ]
    return {
        "n_sources": n_sources,
        "rows": rows,
        "same_at_natural": per_point["natural"] == head,
    }


def auc_row(run: RunData) -> dict[str, Any] | None:
    """The threshold-free AUC with its CI (the same at both points)."""
    auc = run.result.headline.auc_ci
    if auc is None or not is_num(auc.estimate):
        return None
    return {
        "key": "metrics.headline.auc_ci.estimate",
        "value": auc.estimate,
        "text": num(auc.estimate, 4),
        "ci_text": f"[{num(auc.low, 4)}, {num(auc.high, 4)}]",
        "resamples": auc.n_resamples,
    }


def _noise(cell: Mapping[str, Any]) -> str:
    return " (within noise)" if cell.get("within_noise") else ""


def _comparison_cells(row: Mapping[str, Any]) -> dict[str, str]:
    """Competitor columns of one ``comparisons.leaderboard`` record, as text."""
    rank, total = row.get("rank"), row.get("rank_total")
    best = row.get("vs_best") or {}
    matched = row.get("matched") or {}
    lakera = row.get("lakera") or {}
    sizes = [c for c in as_records(row.get("sample_size")) if c.get("ours")]
    ours_matched = (matched.get("ours") or {}).get("value")
    return {
        "rank": f"{rank}/{total}" if rank is not None and total is not None else "–",
        "n_competitors": str(row.get("n_competitors", "")),
        "best": (
            f"{best.get('competitor')} {pct(best.get('their_value'))} "
            f"({signed_pp(best.get('delta'), 1)}){_noise(best)}"
            if best
            else "–"
        ),
        "matched": (
            f"at FPR {pct(matched.get('their_fpr'), 2)}: {pct(ours_matched)}"
            f" vs {matched.get('competitor')} {pct(matched.get('their_value'))}{_noise(matched)}"
            if matched
            else str(row.get("matched_reason") or "–")
        ),
        "lakera": (
            f"{pct((lakera.get('ours') or {}).get('value'))} vs {pct(lakera.get('their_value'))}"
            f"{lakera.get('mark') or ''}{_noise(lakera)}"
            if lakera
            else "–"
        ),
        "sample_size": "; ".join(
            f"{c.get('competitor')} {pct(c.get('their_value'))} vs "
            f"{ci((c.get('ours') or {}).get('low'), (c.get('ours') or {}).get('high'))} "
            f"at n={c.get('n_theirs')}{_noise(c)}"
            for c in sizes
        ),
    }


#: What each per-source metric needs to be defined: attacks, benign prompts, or both.
NEEDS = {
    "f1": ("pos",),
    "precision": ("pos",),
    "recall": ("pos",),
    "fpr": ("neg",),
    "oda": ("neg",),
    "auc": ("pos", "neg"),
}


def defined(metric: str, row: SourceRow | Mapping[str, Any]) -> bool:
    """False when ``metric`` is undefined on a source of this class mix.

    Precision on a source without attacks is stored as 0 when anything is
    flagged (0 / FP), but no attack exists to be precise about: like F1 and
    recall there, it is not a measurement of the source. Counts that were not
    recorded leave the stored value to speak for itself.

    Examples
    --------
    >>> defined("precision", {"n_pos": 0, "n_neg": 130}), defined("fpr", {"n_pos": 0})
    (False, True)
    """
    counts = {"pos": row.get("n_pos"), "neg": row.get("n_neg")}
    return all(not (is_num(counts[k]) and counts[k] == 0) for k in NEEDS.get(metric, ()))


def _shown(row: SourceRow, metric: str) -> Any:
    """The stored value where the metric is defined on the source, else None (n/a)."""
    return row.get(metric) if defined(metric, row) else None


def leaderboard_rows(run: RunData) -> tuple[list[dict[str, Any]], bool]:
    """Per-dataset rows at θ_op; True in second place when comparison columns exist."""
    family = {c.get("source"): c.get("family") for c in run.result.trace.composition}
    comps = {str(r.get("dataset")): r for r in as_records(run.comparison("leaderboard"))}
    empty = _comparison_cells({})
    rows = []
    for r in run.result.by_source:
        # The metric its interval was computed on, which is the source's primary metric.
        metric = str(r.get("metric") or r.primary_metric)
        rows.append(
            {
                "source": r.source,
                "family": family.get(r.source, ""),
                "n": count(r.n),
                "n_pos": count(r.get("n_pos")),
                "n_neg": count(r.get("n_neg")),
                "metric": metric,
                "estimate": r.get("estimate"),
                "estimate_text": pct(r.get("estimate"), rate_digits(metric)),
                "ci_text": ci(r.get("low_95"), r.get("high_95"), rate_digits(metric)),
                "f1": pct(_shown(r, "f1")),
                "precision": pct(_shown(r, "precision")),
                "recall": pct(_shown(r, "recall")),
                "fpr": pct(_shown(r, "fpr"), 2),
                "auc": num(_shown(r, "auc")),
                "prevalence_ratio": num(r.get("prevalence_ratio")),
                "theta_s": num(r.get("theta_s"), 4),
                "small_n": r.small_n,
                "compared": r.source in comps,
                "comparison": (
                    _comparison_cells(comps[r.source])
                    if r.source in comps
                    else {k: "–" if k != "sample_size" else "" for k in empty}
                ),
            }
        )
    return rows, bool(comps)


def fold_tables(run: RunData) -> list[dict[str, Any]]:
    """Per pass: the per-fold thresholds and F1s, and the summary over folds."""
    out = []
    blocks = run.result.fold_thresholds
    # The headline pass first, whatever order the JSON keys were written in.
    for name in sorted(blocks, key=pass_order):
        block = blocks[name]
        folds = [
            {
                "fold": f.get("fold"),
                "threshold": num(f.get("threshold"), 4),
                "valid_f1": pct(f.get("valid_f1")),
                "test_f1": pct(f.get("test_f1_at_threshold")),
                "test_fpr": pct(f.get("test_fpr_at_threshold"), 2),
                "train_f1": pct(f.get("train_f1_at_threshold")),
                "n_test": count(f.get("n_test")),
                "n_test_pos": count(f.get("n_test_pos")),
                "fit_seconds": num(f.get("fit_seconds"), 2),
            }
            for f in block.folds
        ]
        summary = block.summary.get("threshold") or {}
        out.append(
            {
                "pass": name,
                "title": PASS_NAMES.get(name, name),
                "folds": folds,
                "summary": {
                    k: num(summary.get(k), 4) for k in ("mean", "median", "std", "min", "max")
                },
            }
        )
    return out


def _stat_text(stats: Mapping[str, Any]) -> str:
    parts = []
    for k, v in stats.items():
        if is_num(v):
            parts.append(f"{k} = {v:.4g}")
        elif isinstance(v, str | bool) and len(str(v)) < 40:
            parts.append(f"{k} = {v}")
        if len(parts) == 6:
            break
    return "; ".join(parts)


def diagnostics_rows(run: RunData) -> list[dict[str, Any]]:
    """Every diagnostic with status, criterion, headline statistics and reason; worst first."""
    rows = [
        {
            "name": d.name,
            "tier": d.tier,
            "status": d.status.upper(),
            "criterion": d.criterion,
            # The check's own formatted headline statistic, else its first numbers.
            "statistics": d.statistic or _stat_text(d.statistics),
            "reason": d.reason,
        }
        for d in run.result.diagnostics
    ]
    return sorted(rows, key=lambda r: (STATUS_ORDER.get(r["status"], 9), r["name"]))


def duplicates(run: RunData) -> dict[str, Any]:
    """Cross-source duplicates and label conflicts, within-source conflicts, group stats."""
    dup = run.result.trace.duplicates
    within = as_records(run.trace_info.get("within_source_label_conflicts"))
    groups = run.result.groups
    return {
        "cross_groups": count(dup.get("cross_source_duplicate_groups")) or "0",
        "cross_rows": count(dup.get("cross_source_duplicate_rows")) or "0",
        "conflict_groups": count(dup.get("label_conflict_groups")) or "0",
        "conflicts": [
            {
                "sources": ", ".join(map(str, c.get("sources") or [])),
                "ids": ", ".join(map(str, (c.get("sample_ids") or [])[:6])),
                "text": str(c.get("text", ""))[:300],
            }
            for c in as_records(dup.get("label_conflicts"))
        ],
        "within": [
            {
                "source": str(c.get("source", "")),
                "detail": ", ".join(f"{k}={v}" for k, v in c.items() if k != "source")[:300],
            }
            for c in within
        ],
        "within_recorded": "within_source_label_conflicts" in run.trace_info,
        "groups": {
            k: v for k, v in groups.items() if k != "note" and not isinstance(v, dict | list)
        },
    }


def _card_licence(name: str) -> dict[str, str] | None:
    """The installed loader card's licence, for runs that did not record it.

    Licences are provenance, not measurements, so reading them from the card
    does not break the report's rule of never recomputing a metric.
    """
    try:
        from gatebench.data import get_loader

        card = get_loader(name).card
    except Exception:  # an unknown or broken loader must not cost the report
        return None
    return {"licence": card.licence, "upstream": card.upstream, "citation": card.citation}


def licence_rows(run: RunData) -> tuple[list[dict[str, Any]], bool]:
    """One row per source: licence, upstream, pinned revision, flag; True when any
    licence came from the installed cards rather than the run directory."""
    trace = run.result.trace
    recorded = run.trace_info.get("licences") or {}
    flags = trace.licence_flags
    revisions = {
        str(s.get("name")): s.get("revision") for s in as_records(run.trace_info.get("sources"))
    }
    names = [str(c.get("source")) for c in trace.composition]
    rows, from_cards = [], False
    for name in names:
        info = recorded.get(name)
        if not isinstance(info, Mapping):
            info = _card_licence(name)
            from_cards = from_cards or info is not None
        info = info or {}
        rows.append(
            {
                "source": name,
                "licence": str(info.get("licence") or "not recorded"),
                "upstream": str(info.get("upstream") or ""),
                "revision": str(revisions.get(name) or info.get("revision") or ""),
                "flag": str(flags.get(name) or ""),
            }
        )
    return rows, from_cards
