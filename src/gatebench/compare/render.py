"""Plain-text rows for the CLI (``gatebench compare``) and reports.

Each function returns ``(headers, rows)`` of strings, ready for a rich
``Table`` or :func:`format_table`. A matched-FPR second line is written on a
new line inside the same cell.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "dataset_rows",
    "format_compare",
    "format_table",
    "latency_table_rows",
    "leaderboard_rows",
    "matched_dataset_rows",
    "matched_rows",
    "run_rows",
]

Rows = tuple[list[str], list[list[str]]]


def _pct(v: Any, digits: int = 1) -> str:
    return "–" if v is None else f"{100 * float(v):.{digits}f}"


def _ms(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def _ci(d: dict[str, Any] | None) -> str:
    if not d or d.get("value") is None:
        return "–"
    if d.get("low") is None:
        return _pct(d["value"])
    return f"{_pct(d['value'])} [{_pct(d['low'])}, {_pct(d['high'])}]"


def _diff(d: dict[str, Any] | None) -> str:
    if not d:
        return "ref"
    star = "" if d["low"] <= 0 <= d["high"] else " *"
    return f"{100 * d['estimate']:+.1f} [{100 * d['low']:+.1f}, {100 * d['high']:+.1f}]{star}"


def run_rows(result: dict[str, Any]) -> Rows:
    """One row per run of :func:`gatebench.compare.compare_runs`."""
    headers = [
        "detector",
        "F1 [95% CI]",
        "ΔF1 vs ref (paired)",
        "recall",
        "FPR",
        "macro F1",
        "AUC",
        "p50 ms",
        "p95 ms",
        "errors",
        "truncated",
    ]
    rows = []
    for r in result["runs"]:
        d = result["differences"].get(r["label"], {})
        f = r["failures"]
        lat = r.get("latency_ms") or {}
        rows.append(
            [
                r["label"] + (" (bool)" if r["boolean_only"] else ""),
                _ci(r["f1"]),
                _diff(d.get("f1")),
                _ci(r["recall"]),
                _ci(r["fpr"]),
                _ci(r["macro_f1"]),
                _ci(r["auc"]) if r["auc"] else "n/a (bool)",
                "–" if lat.get("p50") is None else f"{lat['p50']:.2f}",
                "–" if lat.get("p95") is None else f"{lat['p95']:.2f}",
                "?" if f.get("error_rate") is None else _pct(f["error_rate"], 2) + "%",
                "?" if f.get("truncated_share") is None else _pct(f["truncated_share"]) + "%",
            ]
        )
    return headers, rows


def _vs(cell: dict[str, Any]) -> str:
    best = cell.get("vs_best")
    if not best:
        return "–"
    noise = " ~noise" if best["within_noise"] else ""
    text = f"{best['competitor']} {_pct(best['their_value'])} ({100 * best['delta']:+.1f}{noise})"
    m = cell.get("matched")
    if m:
        mn = " ~noise" if m["within_noise"] else ""
        text += (
            f"\n@FPR {_pct(m['their_fpr'])}%: {_pct(m['ours']['value'])} vs "
            f"{m['competitor']} {_pct(m['their_value'])}{mn}"
        )
    return text


def dataset_rows(result: dict[str, Any]) -> Rows:
    """Per dataset x run: primary metric, CI, paired difference, competitor lines."""
    headers = [
        "dataset",
        "metric",
        "detector",
        "value [95% CI]",
        "Δ vs ref",
        "rank",
        "vs best comp.",
    ]
    rows = []
    for entry in result["per_dataset"]:
        for label, cell in entry["runs"].items():
            rank = "–" if cell.get("rank") is None else f"{cell['rank']}/{cell['rank_total']}"
            rows.append(
                [
                    entry["dataset"],
                    entry["primary_metric"],
                    label,
                    _ci(cell),
                    _diff(cell.get("difference")),
                    rank,
                    _vs(cell),
                ]
            )
    return headers, rows


def _lakera(cell: dict[str, Any] | None) -> str:
    if not cell:
        return "–"
    ours = cell["ours"]["value"]
    noise = " ~noise" if cell["within_noise"] else ""
    return f"{_pct(ours)} vs {_pct(cell['their_value'])}{cell['mark']}{noise}"


def leaderboard_rows(comparisons: dict[str, Any]) -> Rows:
    """The §3 per-dataset table from :func:`gatebench.compare.build_comparisons`."""
    headers = [
        "dataset",
        "metric",
        "ours [95% CI]",
        "rank",
        "# comp.",
        "vs best comp.",
        "vs Lakera",
    ]
    rows = []
    for row in comparisons["leaderboard"]:
        rank = "–" if row["rank"] is None else f"{row['rank']}/{row['rank_total']}"
        rows.append(
            [
                row["dataset"] + (" (small n)" if row["small_n"] else ""),
                row["primary_metric"],
                _ci(row["ours"]),
                rank,
                str(row["n_competitors"]),
                _vs(row),
                _lakera(row["lakera"]),
            ]
        )
    return headers, rows


def latency_table_rows(result: dict[str, Any]) -> Rows:
    """Our measured per-request latency per run, then the published latency rows."""
    headers = ["system", "latency ms", "how"]
    rows = []
    for r in result.get("runs", []):
        lat = r.get("latency_ms") or {}
        if lat.get("p50") is not None:
            rows.append([r["label"], f"p50 {lat['p50']:.2f} / p95 {lat['p95']:.2f}", "measured"])
    for p in result.get("published_latency", []):
        span = f"({_ms(p['min_ms'])}–{_ms(p['max_ms'])})" if p["n"] > 1 else ""
        star = "*" if p["self_eval"] else ""
        rows.append(
            [p["system"] + star, f"mean {_ms(p['mean_ms'])} {span}".strip(), f"published ×{p['n']}"]
        )
    return headers, rows


def _gap(d: dict[str, Any], within_noise: bool) -> str:
    noise = " ~noise" if within_noise else ""
    return f"{100 * d['value']:+.1f} [{100 * d['low']:+.1f}, {100 * d['high']:+.1f}]{noise}"


def matched_rows(result: dict[str, Any]) -> Rows:
    """Pooled matched-FPR lines of :func:`compare_runs`: each run at each other run's FPR."""
    headers = [
        "run",
        "at FPR of",
        "target FPR",
        "θ matched",
        "FPR",
        "F1",
        "precision",
        "recall",
        "their F1",
        "ΔF1 [95% CI]",
    ]
    rows = [
        [
            m["run"],
            m["against"] + (" (bool)" if m["against_boolean_only"] else ""),
            _pct(m["target_fpr"], 2),
            f"{m['threshold']:.4g}" if m["feasible"] else "block nothing",
            _pct(m["fpr"], 2),
            _pct(m["f1"]),
            _pct(m["precision"]),
            _pct(m["recall"]),
            _pct(m["against_f1"]),
            _gap(m["difference"], m["within_noise"]),
        ]
        for m in result.get("matched") or []
    ]
    return headers, rows


def _dataset_line(line: dict[str, Any]) -> str:
    noise = " ~noise" if line["within_noise"] else ""
    return (
        f"@{line['against']} FPR {_pct(line['target_fpr'])}%: {_pct(line['value'])} "
        f"[{_pct(line['low'])}, {_pct(line['high'])}] vs {_pct(line['against_value'])}{noise}"
    )


def matched_dataset_rows(result: dict[str, Any]) -> Rows:
    """Per dataset x run: the run's primary metric at each other run's FPR, or why not."""
    headers = ["dataset", "metric", "run", "matched to the other runs' FPR"]
    rows = []
    for entry in result["per_dataset"]:
        cells = entry["runs"]
        notes = {c.get("matched_runs_note") for c in cells.values()}
        if len(notes) == 1 and None not in notes:
            # All-attack / all-benign: the same note for every run, shown once.
            rows.append([entry["dataset"], entry["primary_metric"], "all", notes.pop() or ""])
            continue
        for label, cell in cells.items():
            if "matched_runs" in cell:
                text = "\n".join(_dataset_line(m) for m in cell["matched_runs"])
            elif "matched_runs_note" in cell:
                text = cell["matched_runs_note"]
            else:
                continue
            rows.append([entry["dataset"], entry["primary_metric"], label, text])
    return headers, rows


def format_table(headers: list[str], rows: list[list[str]]) -> str:
    """Monospace table; multi-line cells wrap onto continuation lines."""
    split = [[c.split("\n") for c in r] for r in rows]
    widths = [
        max([len(h)] + [len(line) for r in split for line in r[i]]) for i, h in enumerate(headers)
    ]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    for r in split:
        for k in range(max(len(c) for c in r)):
            out.append(
                "  ".join(
                    (c[k] if k < len(c) else "").ljust(w) for c, w in zip(r, widths, strict=True)
                ).rstrip()
            )
    return "\n".join(out)


def format_compare(result: dict[str, Any]) -> str:
    """Both tables of a :func:`compare_runs` result, plus the footnotes."""
    parts = [
        format_table(*run_rows(result)),
        "",
        format_table(*dataset_rows(result)),
        "",
        format_table(*latency_table_rows(result)),
    ]
    if result.get("matched"):
        parts += [
            "",
            "Matched FPR (pooled): each run re-thresholded to the other's FPR",
            format_table(*matched_rows(result)),
        ]
    per_dataset = matched_dataset_rows(result)
    if per_dataset[1]:
        parts += ["", "Matched FPR per dataset (primary metric)", format_table(*per_dataset)]
    notes = [
        f"Δ: paired bootstrap ({result['strata']}), B={result['n_resamples']}, "
        f"reference {result['reference']}; * = interval excludes 0.",
        "~noise: the competitor's published value lies inside our interval.",
        "@FPR: matched-FPR line (walk rule); threshold re-picked on the scored rows.",
        "Published latencies mix hardware, batch sizes and network round trips (* = self).",
    ]
    if result.get("matched"):
        notes.append(
            "Matched FPR: the run's threshold re-picked to the other run's FPR on the same "
            "rows (optimistic point); ΔF1 = matched run - other run, paired bootstrap with the "
            "threshold re-picked per resample; ~noise = interval contains 0 (per dataset: the "
            "other run's value lies inside the matched interval)."
        )
    if result.get("matched_note") and len(result["runs"]) > 1:
        notes.append(f"Matched FPR: {result['matched_note']}.")
    if result.get("published_error"):
        notes.append(f"published table not used: {result['published_error']}")
    return "\n".join([*parts, "", *notes])
