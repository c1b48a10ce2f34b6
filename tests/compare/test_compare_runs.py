"""Paired differences, runs side by side, failures both ways, rendering."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gatebench.compare import build_comparisons, compare_runs, format_compare
from gatebench.compare.failures import failure_report
from gatebench.compare.paired import paired_bootstrap
from gatebench.detectors.adapters._audit import AuditLedger, RowRecord
from gatebench.errors import ConfigError
from gatebench.rundata import load_run

DS = "deepset-prompt-injections"


def test_paired_difference_hand_case() -> None:
    # One cell of four attacks. A blocks all four, B misses row 3. Under the
    # paired resample B - A in recall is -k/4, k ~ Binomial(4, 1/4) draws of
    # row 3: P(k >= 3) = 0.051 > 0.025 > P(k = 4) = 0.004 and P(k = 0) = 0.32,
    # so the 95% interval is [-0.75, 0].
    y = [1, 1, 1, 1]
    r = paired_bootstrap(
        y,
        ["s"] * 4,
        {"A": [1, 1, 1, 1], "B": [1, 1, 1, 0]},
        reference="A",
        primary_metrics={"s": "recall"},
        seed=1,
        n_resamples=4000,
    )
    d = r.differences["B"]["recall"]
    assert d == {"estimate": -0.25, "low": -0.75, "high": 0.0}
    assert r.values["B"]["source:s"] == 0.75


def test_identical_detectors_differ_by_exactly_zero() -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    src = rng.choice(["a", "b", "c"], 300)
    dec = rng.random(300) > 0.5
    r = paired_bootstrap(
        y,
        src,
        {"x": dec, "z": dec.copy()},
        reference="x",
        primary_metrics={"a": "f1", "b": "f1", "c": "f1"},
        seed=0,
        n_resamples=300,
    )
    for v in r.differences["z"].values():
        assert v == {"estimate": 0.0, "low": 0.0, "high": 0.0}


def test_paired_is_narrower_than_independent() -> None:
    rng = np.random.default_rng(5)
    y = np.r_[np.ones(200), np.zeros(200)].astype(int)
    a = rng.random(400) < np.where(y == 1, 0.8, 0.05)
    a[:10] = True
    b = a.copy()
    b[:10] = False  # B misses ten attacks A catches
    r = paired_bootstrap(
        y,
        ["s"] * 400,
        {"A": a, "B": b},
        reference="A",
        primary_metrics={"s": "f1"},
        seed=0,
        n_resamples=1000,
    )
    d = r.differences["B"]["recall"]
    assert d["estimate"] == pytest.approx(-10 / 200)
    # Independent resampling of two recalls near 0.8 on 200 attacks would give
    # an interval about 2 * 1.96 * sqrt(2 * 0.8 * 0.2 / 200) = 0.16 wide.
    assert d["high"] < 0 and d["high"] - d["low"] < 0.06


def _two_runs(make_run, balanced, **kw):
    y, s = balanced
    other = [min(1.0, v + 0.05) for v in s]
    return (
        make_run({DS: (y, s)}, threshold=0.7, detector="a", **kw),
        make_run({DS: (y, other)}, threshold=0.7, detector="b", **kw),
    )


def test_compare_runs_end_to_end(make_run, table, row, balanced) -> None:
    ra, rb = _two_runs(make_run, balanced)
    path = table([row("b-sys", "deepset", "f1", 0.9, fpr=0.05)])
    res = compare_runs([ra, rb], published=path, n_resamples=200)
    assert [r["label"] for r in res["runs"]] == ["a", "b"]
    assert set(res["differences"]) == {"b"}
    cells = res["per_dataset"][0]["runs"]
    assert cells["a"]["matched"]["competitor"] == "b-sys"  # F1 0.4615 -> 0.5 at FPR 5%
    assert cells["b"]["matched"] is None  # b's retune to 5% would lower its F1
    assert cells["b"]["difference"]["estimate"] == pytest.approx(14 / 27 - 12 / 26)
    assert res["runs"][0]["failures"]["error_rate"] == 0.0
    text = format_compare(res)
    assert "ΔF1 vs ref (paired)" in text and "@FPR 5.0%" in text
    json.dumps(res)  # JSON-ready


def test_compare_runs_refuses_different_traces(make_run, balanced) -> None:
    a = make_run({DS: balanced}, threshold=0.7, trace_id="a" * 64)
    b = make_run({DS: balanced}, threshold=0.7, trace_id="b" * 64)
    with pytest.raises(ConfigError, match="different traces"):
        compare_runs([a, b])


def test_compare_runs_without_published_table(make_run, balanced, tmp_path: Path) -> None:
    ra, rb = _two_runs(make_run, balanced)
    res = compare_runs([ra, rb], published=tmp_path / "missing.csv", n_resamples=100)
    assert "not found" in res["published_error"]
    assert "vs_best" not in res["per_dataset"][0]["runs"]["a"]


def test_failures_counted_both_ways(make_run, balanced, tmp_path: Path) -> None:
    y, s = balanced
    ids = [f"{DS}:{i}" for i in range(40)]
    hashes = [f"h{i}" for i in range(40)]
    chunks = pd.DataFrame(
        {
            "pass": "strat",
            "row_id": [f"{i}#0" for i in ids],
            "sample_id": ids,
            "source": DS,
            "label": y,
            "score": s,
            "text_sha256": hashes,
        }
    )
    # Rows 10..14 (attacks scoring 0.45..0.25) failed and were scored 0 (pass).
    for i in range(10, 15):
        s[i] = 0.0
    chunks.loc[10:14, "score"] = 0.0
    run_dir = make_run({DS: (y, s)}, threshold=0.7, detector="http-json", chunks=chunks)
    ledger = AuditLedger("http-json", {"graded": True}, run_dir / "audit")
    ledger.write([RowRecord(f"h{i}", "DetectorError: HTTP 503", 0.0) for i in range(10, 15)])
    ledger.write([RowRecord("h0", truncated=True)])
    rep = failure_report(load_run(run_dir))
    assert rep["n_failed"] == 5 and rep["error_rate"] == 5 / 40
    assert rep["n_truncated"] == 1 and rep["truncated_share"] == 1 / 40
    assert rep["as_flag"]["recall"] > rep["as_pass"]["recall"]
    assert rep["examples"] == ["DetectorError: HTTP 503"]


def test_adapter_without_ledger_says_so(make_run, balanced) -> None:
    rep = failure_report(load_run(make_run({DS: balanced}, threshold=0.7, detector="jailguard")))
    assert rep["error_rate"] is None and "without an audit ledger" in rep["note"]


def test_build_comparisons_is_json_ready(make_run, table, row, balanced) -> None:
    run_dir = make_run({DS: balanced}, threshold=0.7)
    path = table(
        [
            row("x", "deepset", "f1", 0.8, fpr=0.05),
            row("lakera-guard", "ilion-bench", "f1", 0.8, fpr=0.3),
            row("lakera-guard", "ilion-bench", "latency_ms", 293),
        ]
    )
    c = build_comparisons(run_dir, path, n_resamples=100)
    json.dumps(c)
    assert [r["dataset"] for r in c["leaderboard"]] == [DS]
    assert c["pareto"]["global"]["competitors"][0]["system"] == "lakera-guard"
    assert c["latency"]["published"][0]["mean_ms"] == 293
    # the toy run records no natural threshold, so ours is the headline point only
    assert {p["point"] for p in c["pareto"]["per_dataset"]} == {"headline", "published"}


def test_leaderboard_rows_show_marks_and_both_lines(make_run, table, row, balanced) -> None:
    from gatebench.compare import format_table, leaderboard_rows

    run_dir = make_run({DS: balanced}, threshold=0.7)
    path = table(
        [row("lakera-guard", "deepset", "f1", 0.99), row("b", "deepset", "f1", 0.5, fpr=0.05)]
    )
    c = build_comparisons(run_dir, path, n_resamples=100)
    headers, rows = leaderboard_rows(c)
    assert headers[-1] == "vs Lakera" and rows[0][-1].startswith("51.9 vs 99.0‡")
    assert "\n@FPR 5.0%: 50.0 vs b 50.0" in rows[0][5]
    assert c["leaderboard"][0]["caveat"].startswith("threshold re-picked")
    assert "@FPR 5.0%" in format_table(headers, rows)
