"""Latency figure (20): the per-request latency density, and the run's detector's p50–p95
against published competitor latencies (paper Figs. 22-23)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from gatebench.report.figures._common import as_records, finite
from gatebench.report.figures._spec import DEFAULT_NAMES, Absent, FigureSpec, Prepared
from gatebench.report.figures._style import BLUE, GREY, ORANGE, RED, new_figure
from gatebench.report.fmt import is_num, num
from gatebench.rundata import RunData

__all__ = ["LATENCY"]


def _plain_log_axis(ax: Axes, lo: float, hi: float) -> None:
    """Log x axis labelled 0.5, 1, 10 ... rather than 5×10⁻¹: milliseconds read plainly."""
    ax.set_xscale("log")
    # 1-2-5 steps when the range spans about two decades or less (plain decades
    # would leave a single label); decades alone over wider ranges.
    subs = (1.0, 2.0, 5.0) if hi / max(lo, 1e-9) < 300 else (1.0,)
    ax.xaxis.set_major_locator(LogLocator(subs=subs))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    # No minor ticks: each is a full Tick artist, and log axes make dozens.
    ax.xaxis.set_minor_locator(NullLocator())


def draw_latency(data: Mapping[str, Any]) -> Figure:
    """Left: density histogram of latencies (log x). Right, if any: ranges vs competitors.

    Parameters
    ----------
    data : mapping
        ``samples`` (ms); ``p50``, ``p95``, ``mean``; ``competitors``: records
        ``{system, mean_ms, min_ms, max_ms, n}``; ``detector``: the run's detector.
    """
    comps = data.get("competitors") or []
    fig = new_figure(9.0 if comps else 5.6, max(3.4, 1.2 + 0.26 * (len(comps) + 1)))
    axes = fig.subplots(1, 2 if comps else 1, squeeze=False)[0]
    ms = np.asarray(data["samples"], float)
    ms = ms[ms > 0]
    ax = axes[0]
    bins = np.geomspace(ms.min(), ms.max() * 1.0001, 40) if ms.min() < ms.max() else 10
    ax.hist(ms, bins=bins, density=True, color=BLUE, alpha=0.7, histtype="stepfilled")
    for key, colour, style in (("p50", "black", "-"), ("mean", ORANGE, "--"), ("p95", RED, ":")):
        if is_num(data.get(key)):
            ax.axvline(data[key], color=colour, ls=style, lw=1.3, label=f"{key} {data[key]:.2f} ms")
    _plain_log_axis(ax, float(ms.min()), float(ms.max()))
    ax.set_xlabel("latency per request (ms, log)")
    ax.set_ylabel("density")
    ax.set_title(f"Latency density (n = {ms.size:,})")
    ax.legend(loc="upper right", frameon=False)
    if comps:
        ax = axes[1]
        rows = [
            {
                "system": data.get("detector") or DEFAULT_NAMES["detector"],
                "lo": data["p50"],
                "hi": data["p95"],
                "mean": data.get("mean"),
                "ours": True,
            }
        ]
        rows += [
            {
                "system": f"{c['system']} ×{c.get('n') or 1}",
                "lo": c.get("min_ms"),
                "hi": c.get("max_ms"),
                "mean": c["mean_ms"],
                "ours": False,
            }
            for c in comps
        ]
        rows.sort(key=lambda r: r["mean"] if is_num(r["mean"]) else r["lo"])
        # One collection per kind (ranges, means; ours vs theirs), not per row.
        for ours, colour, width, marker in ((False, GREY, 2.5, "o"), (True, BLUE, 4.0, "D")):
            idx = [i for i, r in enumerate(rows) if r["ours"] == ours]
            span = [i for i in idx if is_num(rows[i]["lo"]) and is_num(rows[i]["hi"])]
            if span:
                ax.hlines(
                    span,
                    [rows[i]["lo"] for i in span],
                    [rows[i]["hi"] for i in span],
                    color=colour,
                    lw=width,
                )
            dots = [i for i in idx if is_num(rows[i]["mean"])]
            if dots:
                ax.plot(
                    [rows[i]["mean"] for i in dots],
                    dots,
                    marker,
                    ls="none",
                    color="black" if ours else colour,
                    ms=5,
                )
        ax.set_yticks(range(len(rows)), [r["system"] for r in rows])
        ax.invert_yaxis()
        ends = [v for r in rows for v in (r["lo"], r["hi"], r["mean"]) if is_num(v) and v > 0]
        _plain_log_axis(ax, min(ends), max(ends))
        ax.set_xlabel("latency (ms, log)")
        ax.set_title("vs published competitors")
    return fig


def _competitors(run: RunData) -> list[dict[str, Any]]:
    """Published latencies pooled per system (``comparisons.latency.published``)."""
    lat = run.comparison("latency")
    rows = as_records(lat.get("published")) if isinstance(lat, Mapping) else []
    return [
        {
            "system": str(r.get("system")) + ("*" if r.get("self_eval") else ""),
            "mean_ms": r["mean_ms"],
            "min_ms": r.get("min_ms"),
            "max_ms": r.get("max_ms"),
            "n": r.get("n"),
        }
        for r in rows
        if is_num(r.get("mean_ms"))
    ]


def _http_latency(run: RunData) -> dict[str, Any] | None:
    """Concurrency-1 HTTP latency from ``RUN_DIR/latency.json`` (``gatebench bench latency``).

    Returned in ``result.json``'s ``latency_ms`` shape, or None when the file
    is absent, unreadable or holds no successful concurrency-1 requests.
    """
    import json

    try:
        bench = json.loads((run.run_dir / "latency.json").read_text())
        levels = bench["http"]["levels"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not str(bench.get("schema", "")).startswith("gatebench.latency/"):
        return None
    level = min(levels, key=lambda lv: lv.get("concurrency", 1 << 30), default=None)
    if not level or not finite(level.get("samples_ms") or []):
        return None
    lat = level["latency_ms"]
    single = ((bench.get("in_process") or {}).get("single") or {}).get("latency_ms") or {}
    how = (
        f"HTTP end to end at concurrency {level['concurrency']}, loopback, "
        f"`gatebench bench latency`, {level['ok']:,} requests"
    )
    if is_num(single.get("p50")):
        how += f"; in process without HTTP: p50 {single['p50']:.2f} ms"
    return {
        "samples": level["samples_ms"],
        "p50": lat.get("p50"),
        "p95": lat.get("p95"),
        "mean": lat.get("mean"),
        "how": how,
        "http": True,
    }


def _in_process_latency(run: RunData) -> dict[str, Any]:
    """``result.json``'s ``latency_ms``; the samples and how they were taken are extra columns."""
    stored = run.result.latency_ms
    return {
        "samples": stored.get("samples") or [],
        "p50": stored.p50,
        "p95": stored.p95,
        "mean": stored.mean,
        "how": stored.get("how"),
    }


def _extract_latency(run: RunData) -> Prepared | Absent:
    # HTTP end-to-end latency, when measured into the run, is what the paper's
    # §5 figures mean; the in-process figure in result.json is the fallback.
    lat = _http_latency(run) or _in_process_latency(run)
    samples = lat.get("samples") or []
    if not finite(samples) or not is_num(lat.get("p50")):
        return Absent(
            "result.json `latency_ms` holds no per-request samples (the detector's "
            "latency was not measured in this run)."
        )
    comps = _competitors(run)
    data: dict[str, Any] = {
        "samples": samples,
        "p50": lat["p50"],
        "p95": lat.get("p95"),
        "mean": lat.get("mean"),
        "competitors": comps,
        "detector": run.detector,
    }
    alt = (
        f"Histogram of {len(samples)} per-request latencies on a log axis: p50 "
        f"{lat['p50']:.2f} ms, p95 {num(lat.get('p95'), 2)} ms"
        + (f"; beside {len(comps)} published competitor latencies." if comps else ".")
    )
    how = lat.get("how") or "per-request scoring"
    caption = (
        f"Left: density of per-request latency ({how}); log x axis, so a bimodal fast/"
        "deferred split shows as two humps. Lines mark p50, mean and p95. "
        + (
            f"Right: {run.detector}'s p50→p95 range (blue, diamond = mean) against published "
            "competitor latencies (grey min–max range over their per-dataset figures, dot = "
            "mean, ×N = number of figures). Published numbers come from other hardware and "
            "are rarely labelled as percentiles, so read orders of magnitude, not ratios."
            if comps
            else "No published competitor latency is recorded in this run's "
            f"comparisons, so only {run.detector} is shown."
        )
        + (
            ""
            if lat.get("http")
            else " In-process latency excludes HTTP and queueing; see `gatebench bench latency`."
        )
    )
    return Prepared(data, alt, caption)


LATENCY = FigureSpec(
    20,
    "latency",
    "Latency density and vs published competitors",
    "paper Figs. 22-23",
    _extract_latency,
    draw_latency,
)
