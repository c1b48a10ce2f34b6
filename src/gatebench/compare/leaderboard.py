"""The per-dataset leaderboard of §3 at a run's global headline threshold.

One row per dataset of the run that published numbers map to. Each row has:
our primary metric with its 95% CI (result.json's label-stratified
interval); rank / total among the systems publishing that metric; the count
of competitors publishing any comparable metric; "vs best competitor" with
its matched-FPR second line (walk rule); the Lakera column (†, ‡ or a true
match); "within noise" flags; sample-size-matched intervals; the
self-evaluations (asterisk, upper bounds); the threshold-selection caveat.
``competitors`` keeps every published row (provenance: one system can appear
once per paper or log that reports it); ``ranking`` is one entry per system,
the list a figure or table of competitors should draw.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gatebench.compare._metrics import COMPARABLE, metric_at, sort_key
from gatebench.compare.competitors import (
    LAKERA,
    SURROGATE_FPR,
    Entry,
    entries,
    lakera_mode,
    rank_of,
    ranked,
    walk,
)
from gatebench.compare.matching import CAVEAT, matched_value, sample_size_interval
from gatebench.compare.published import PublishedTable
from gatebench.errors import ConfigError
from gatebench.metrics.bootstrap import SMALL_N, dataset_intervals
from gatebench.rundata import RunData
from gatebench.seeding import child_sequence
from gatebench.threshold import matched_fpr_threshold

__all__ = ["dataset_row", "leaderboard", "published_ranking"]


def _ours(run: RunData, source: str, metric: str, seed: int, n_resamples: int) -> dict[str, Any]:
    """Our headline value and 95% CI, from result.json or recomputed from the OOF."""
    row = run.by_source.get(source)
    y, s = run.dataset(source)
    if row is not None and row.get("metric") == metric and row.get("low_95") is not None:
        est, low, high = row.get("estimate"), row.get("low_95"), row.get("high_95")
        how = "result.json (label-stratified bootstrap)"
    else:
        d = dataset_intervals(
            y,
            s,
            threshold=run.threshold,
            metric=metric,
            seed=child_sequence(seed, "compare", "ours", source),
            n_resamples=n_resamples,
            levels=(0.95,),
        )
        est, (low, high) = d.estimate, d.intervals[0.95]
        how = "recomputed (label-stratified bootstrap)"
    return {
        "metric": metric,
        "value": float(est),
        "low": float(low),
        "high": float(high),
        "level": 0.95,
        "threshold": run.threshold,
        "ci_source": how,
    }


def _inside(value: float, low: float, high: float) -> bool:
    return bool(low <= value <= high)


def _matched_point(y: np.ndarray, s: np.ndarray, metric: str) -> Any:
    def at(target: float) -> float:
        op = matched_fpr_threshold(y, s, target)
        return metric_at(y, s, op.threshold, metric)

    return at


def _matched_line(
    run: RunData, source: str, who: Entry, target: float, metric: str, seed: int, b: int
) -> dict[str, Any]:
    y, s = run.dataset(source)
    m = matched_value(
        y,
        s,
        target_fpr=target,
        metric=metric,
        n_resamples=b,
        seed=child_sequence(seed, "compare", "matched", source, who.system, repr(target)),
    )
    return {
        "competitor": who.label,
        "their_value": who.value,
        "their_fpr": who.fpr,
        "target_fpr": target,
        "ours": m.as_dict(),
        "delta": m.value - who.value,
        "within_noise": m.contains(who.value),
        "caveat": CAVEAT,
    }


def _lakera(
    run: RunData,
    source: str,
    primary: str,
    items: list[Entry],
    ours: dict[str, Any],
    seed: int,
    b: int,
) -> dict[str, Any] | None:
    lak = next(iter(ranked([e for e in items if e.system == LAKERA], primary)), None)
    y, _ = run.dataset(source)
    mode = lakera_mode(primary, lak, bool((y == 0).any()))
    if mode is None or lak is None:
        return None
    mark, how = mode
    if how == "headline":
        note = (
            "primary metric is FPR/ODA: matching FPR collapses the comparison; headline threshold"
            if mark
            else "no benign rows: FPR cannot be matched; headline threshold"
        )
        return {
            "mark": mark,
            "how": how,
            "their_value": lak.value,
            "their_fpr": lak.fpr,
            "ours": ours,
            "delta": ours["value"] - lak.value,
            "within_noise": _inside(lak.value, ours["low"], ours["high"]),
            "note": note,
            "competitor": lak.as_dict(),
        }
    target = SURROGATE_FPR if how == "surrogate" else float(lak.fpr or 0.0)
    line = _matched_line(run, source, lak, target, primary, seed, b)
    note = (
        "Lakera published no FPR here: our threshold is matched to a 1% FPR surrogate"
        if how == "surrogate"
        else "true matched-FPR comparison at Lakera's published FPR"
    )
    return {"mark": mark, "how": how, **line, "note": note, "competitor": lak.as_dict()}


def _sample_size(
    run: RunData, source: str, items: list[Entry], seed: int, b: int
) -> list[dict[str, Any]]:
    y, s = run.dataset(source)
    out = []
    for e in items:
        if e.n is None or e.n >= y.size:
            continue
        ci = sample_size_interval(
            y,
            s,
            threshold=run.threshold,
            n=e.n,
            metric=e.metric,
            n_resamples=b,
            seed=child_sequence(seed, "compare", "subsample", source, e.system, e.metric, e.n),
        )
        out.append(
            {
                "competitor": e.label,
                "metric": e.metric,
                "their_value": e.value,
                "n_theirs": e.n,
                "n_ours": int(y.size),
                "ours": ci,
                "within_noise": _inside(e.value, ci["low"], ci["high"]),
            }
        )
    return out


def published_ranking(items: list[Entry], primary: str) -> list[Entry]:
    """One entry per system on ``primary`` (its best published value), best first.

    A self-evaluation stays a separate entry from third-party numbers for the
    same system, so an upper bound never hides an independent figure.
    """
    third = ranked(items, primary)
    own = ranked([e for e in items if e.self_eval], primary, include_self_eval=True)
    return sorted(third + own, key=lambda e: (sort_key(primary, e.value), e.line))


def _rethresholded(lakera: dict[str, Any] | None) -> bool:
    return lakera is not None and lakera["how"] in ("matched", "surrogate")


def dataset_row(
    run: RunData,
    source: str,
    table: PublishedTable,
    *,
    seed: int,
    n_resamples: int = 2000,
    include_self_eval: bool = False,
) -> dict[str, Any]:
    """The leaderboard row of one dataset (see the module docstring)."""
    primary, family = run.primary_metric(source), run.family(source)
    items = entries(table.for_dataset(source), family)
    y, s = run.dataset(source)
    ours = _ours(run, source, primary, seed, n_resamples)
    ranking = ranked(items, primary, include_self_eval=include_self_eval)
    rank, total = rank_of(ours["value"], ranking, primary)
    third = {e.system for e in items if not e.self_eval and e.metric in COMPARABLE}
    best = ranking[0] if ranking else None
    vs_best = None
    if best is not None:
        vs_best = {
            "competitor": best.label,
            "metric": primary,
            "their_value": best.value,
            "delta": ours["value"] - best.value,
            "within_noise": _inside(best.value, ours["low"], ours["high"]),
            "n_theirs": best.n,
            "date": best.date,
            "source": best.source,
            "table": best.table,
        }
    matched_line, walked = None, None
    if ranking:
        has_benign = bool((y == 0).any())
        walked = (
            walk(ranking, primary, ours["value"], _matched_point(y, s, primary))
            if has_benign or primary in ("oda", "fpr")
            else None
        )
        if walked is not None and walked.chosen is not None:
            who = walked.chosen
            matched_line = _matched_line(
                run, source, who, float(who.fpr or 0.0), primary, seed, n_resamples
            )
    reason = (
        walked.reason
        if walked is not None
        else ("no benign rows: FPR undefined, no matched line" if ranking else "no competitor")
    )
    lakera = _lakera(run, source, primary, items, ours, seed, n_resamples)
    return {
        "dataset": source,
        "family": family,
        "primary_metric": primary,
        "n": int(y.size),
        "n_pos": int((y == 1).sum()),
        "n_neg": int((y == 0).sum()),
        "small_n": bool(y.size < SMALL_N),
        "ours": ours,
        "rank": rank if ranking else None,
        "rank_total": total if ranking else None,
        "n_competitors": len(third),
        "n_self_eval": len({e.system for e in items if e.self_eval}),
        "vs_best": vs_best,
        "matched": matched_line,
        "matched_reason": reason,
        "walk": walked.steps if walked is not None else [],
        "lakera": lakera,
        "sample_size": _sample_size(run, source, items, seed, n_resamples),
        "self_reported": [
            e.as_dict() for e in ranked(items, primary, include_self_eval=True) if e.self_eval
        ],
        "ranking": [e.as_dict() for e in published_ranking(items, primary)],
        "competitors": [e.as_dict() for e in items],
        "caveat": CAVEAT if matched_line is not None or _rethresholded(lakera) else None,
    }


def leaderboard(
    run: RunData,
    table: PublishedTable,
    *,
    seed: int | None = None,
    n_resamples: int = 2000,
    include_self_eval: bool = False,
) -> list[dict[str, Any]]:
    """Rows for every dataset of the run that at least one published number maps to."""
    if n_resamples < 40:
        raise ConfigError(f"n_resamples={n_resamples} is too small for a 95% interval; use >= 40")
    root = run.result.config.seed if seed is None else seed
    mapped = {r.loader for r in table.rows if r.loader and not r.composite}
    return [
        dataset_row(
            run,
            src,
            table,
            seed=root,
            n_resamples=n_resamples,
            include_self_eval=include_self_eval,
        )
        for src in run.sources()
        if src in mapped
    ]
