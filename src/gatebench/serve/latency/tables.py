"""The latency result as tables: the HTTP sweep, in-process figures, comparisons, targets.

``gatebench bench latency`` prints these; they read only the JSON-ready
result, so a saved ``latency.json`` renders the same way.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Table", "latency_tables"]

Table = tuple[str, list[str], list[list[str]]]


def _f(x: Any, digits: int = 1) -> str:
    return "" if x is None else f"{x:,.{digits}f}"


def _level_stage(level: dict[str, Any], stage: str, key: str) -> float | None:
    block = level.get("stages", {}).get(stage, {}).get("latency_ms", {})
    value = block.get(key)
    return float(value) if value is not None else None


def _pair(level: dict[str, Any], stage: str) -> str:
    p50, p95 = _level_stage(level, stage, "p50"), _level_stage(level, stage, "p95")
    return "" if p50 is None else f"{_f(p50)} / {_f(p95)}"


def _http_table(result: dict[str, Any]) -> Table:
    headers = ["concurrency", "requests", "errors", "req/s", "p50", "p95", "p99", "mean"]
    headers += ["fast %", "fast p50 / p95", "deferred p50 / p95", "HTTP overhead p50"]
    headers += ["CPU ms/req", "load"]
    rows = []
    for lv in result["http"]["levels"]:
        lat, fast = lv["latency_ms"], lv["stages"].get("fast", {}).get("share")
        load = (lv["loadavg"]["before"] or [None])[0]
        rows.append(
            [str(lv["concurrency"]), str(lv["requests"]), str(lv["errors"])]
            + [_f(lv["throughput_rps"])]
            + [_f(lat.get(k), 2) for k in ("p50", "p95", "p99", "mean")]
            + [_f(None if fast is None else 100 * fast), _pair(lv, "fast")]
            + [_pair(lv, "deferred"), _f(lv["http_overhead_ms"].get("p50"), 2)]
            + [_f(lv.get("cpu_ms_per_request"), 2), _f(load, 2)]
        )
    return f"HTTP latency, ms ({result['http']['server']})", headers, rows


def _inprocess_table(inproc: dict[str, Any]) -> Table:
    single = inproc["single"]
    blocks = [("all", {**single, "share": 1.0})]
    blocks += list(single["stages"].items())
    rows = []
    for stage, block in blocks:
        lat = block["latency_ms"]
        rows.append(
            [f"one text, {stage}", str(lat.get("n", 0)), _f(100 * block["share"])]
            + [_f(lat.get(k), 2) for k in ("p50", "p95", "mean")]
            + [_f((block.get("cpu_ms") or {}).get("p50"), 2), ""]
        )
    for b in inproc["batches"]:
        lat = b["ms_per_batch"]
        rows.append(
            [f"batch of {b['batch']}", str(b["batches"]), ""]
            + [_f(lat[k], 2) for k in ("p50", "p95", "mean")]
            + ["", _f(b["texts_per_s"], 0)]
        )
    headers = ["what", "n", "share %", "p50", "p95", "mean", "CPU p50", "texts/s"]
    return "in-process latency, ms (no HTTP)", headers, rows


def _comparison_table(result: dict[str, Any]) -> Table:
    comp = result["comparison"]
    paper = comp["paper"]
    rows = [
        ["Gate, paper §5 (end to end)"]
        + [_f(paper[k]) for k in ("p50_ms", "mean_ms", "p95_ms")]
        + ["paper"]
    ]
    c1 = next((lv for lv in result["http"]["levels"] if lv["concurrency"] == 1), None)
    if c1 and c1["ok"]:
        lat = c1["latency_ms"]
        rows.append(
            ["this service, HTTP, concurrency 1"]
            + [_f(lat[k], 2) for k in ("p50", "mean", "p95")]
            + ["measured here"]
        )
    for c in paper["competitors"]:
        name = f"{c['system']} (n={c['n']}, {c['min_ms']:g}-{c['max_ms']:g})"
        rows.append([name, "", _f(c["mean_ms"]), "", "paper §5"])
    for s in comp["published"].get("systems", []):
        name = f"{s['system']}{'*' if s['self_eval'] else ''} (n={s['n']})"
        rows.append([name, "", _f(s["mean_ms"]), "", "published table"])
    headers = ["system", "p50", "mean", "p95", "source"]
    return "vs the paper and published latencies, ms", headers, rows


def latency_tables(result: dict[str, Any]) -> list[Table]:
    """``(title, headers, rows)`` for the HTTP sweep, in-process figures, comparison, targets."""
    tables = [_http_table(result)]
    if result.get("in_process"):
        tables.append(_inprocess_table(result["in_process"]))
    tables.append(_comparison_table(result))
    if result.get("targets"):
        status = {True: "met", False: "MISSED", None: "n/a"}
        rows = [
            [t["name"], _f(t["target"]), _f(t["measured"], 2), status[t["met"]]]
            for t in result["targets"]
        ]
        tables.append(("targets", ["target", "bound", "measured", "status"], rows))
    return tables
