"""Registry, runner, tiers, JSON output and the diagnose table."""

from __future__ import annotations

import json

import pytest

from gatebench.diagnostics import (
    DIAGNOSTICS,
    Check,
    DiagnosticContext,
    checks_for,
    diagnose_rows,
    result_rows,
    run_diagnostics,
)
from gatebench.errors import ConfigError
from gatebench.result import DiagnosticRecord
from gatebench.types import Status

ISSUE_CHECKS = {
    "leakage_premium",
    "lodo",
    "random_label",
    "random_label_retrain",
    "adversarial_validation",
    "train_vs_oof",
    "length_bias",
    "permutation_importance",
    "head_agreement",
    "cross_source_conflicts",
    "threshold_transferability",
    "determinism_replay",
    "paraphrase_invariance",
    "shortcut_controls",
}


def test_every_check_is_registered_with_tier_and_criterion() -> None:
    assert set(DIAGNOSTICS.names()) == ISSUE_CHECKS
    for name in DIAGNOSTICS:
        check = DIAGNOSTICS.get(name)
        assert check.name == name
        assert check.tier in ("cheap", "expensive")
        assert len(check.criterion) > 40 and any(ch.isdigit() for ch in check.criterion), name


def test_tiers_select_checks() -> None:
    cheap = {c.name for c in checks_for("cheap")}
    every = {c.name for c in checks_for("all")}
    assert checks_for("none") == []
    assert cheap < every == ISSUE_CHECKS
    assert {"lodo", "random_label_retrain", "determinism_replay"} <= every - cheap
    with pytest.raises(ConfigError, match="choose none, cheap or all"):
        checks_for("some")


def test_cheap_tier_results_are_json_and_tabulate(clean_ctx: DiagnosticContext) -> None:
    results = run_diagnostics(clean_ctx, "cheap")
    assert [r.name for r in results] == [c.name for c in checks_for("cheap")]
    assert run_diagnostics(clean_ctx, "none") == []
    payload = json.dumps([r.as_dict() for r in results], allow_nan=False)
    back = [DiagnosticRecord.model_validate(d) for d in json.loads(payload)]
    rows = diagnose_rows(back)
    assert [r["name"] for r in rows] == [r.name for r in results]
    assert all(r["status"] in {s.value for s in Status} for r in rows)
    assert all(r["criterion"] and r["statistic"] for r in rows)
    assert result_rows(results) == rows
    worst_first = diagnose_rows(back, by_status=True)
    order = {"FAIL": 0, "WARN": 1, "PASS": 2, "NOT_APPLICABLE": 3}
    assert [order[r["status"]] for r in worst_first] == sorted(order[r["status"]] for r in rows)
    assert diagnose_rows([]) == []


def test_a_crashing_check_is_reported_not_raised(
    clean_ctx: DiagnosticContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(ctx: DiagnosticContext) -> None:
        raise RuntimeError("planted")

    name = "test_boom"
    check = Check(name, "cheap", "never passes: 0", boom)  # type: ignore[arg-type]
    # Registered for this test only, so other tests see the real registry.
    monkeypatch.setitem(DIAGNOSTICS._items, name, check)
    (result,) = run_diagnostics(clean_ctx, "cheap", names=[name])
    assert result.status is Status.WARN
    assert "RuntimeError: planted" in result.reason
