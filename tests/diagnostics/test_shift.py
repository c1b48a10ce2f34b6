"""Adversarial validation, train-vs-OOF, LODO, transferability."""

from __future__ import annotations

import numpy as np
import pandas as pd
from diag_synth import CUES, context, make_frame, words

from gatebench.diagnostics import DiagnosticContext, run_diagnostics
from gatebench.diagnostics.transfer import CHECK as TRANSFER
from gatebench.result import SourceRow
from gatebench.types import Status
from gatebench.unseen.calibrate import MIN_BENIGN


def _one(ctx: DiagnosticContext, name: str):  # type: ignore[no-untyped-def]
    (result,) = run_diagnostics(ctx, "all", names=[name])
    return result


def _two_styles() -> pd.DataFrame:
    """Two sources with disjoint vocabularies (one alphabet each)."""
    a = make_frame(
        150, seed=5, sources=("alpha",), vocab=words(np.random.default_rng(1), 200, "abcdefghijklm")
    )
    b = make_frame(
        150, seed=6, sources=("beta",), vocab=words(np.random.default_rng(2), 200, "nopqrstuvwxyz")
    )
    return pd.concat([a, b], ignore_index=True)


def test_source_keyed_split_is_distinguishable() -> None:
    frame = _two_styles()
    folds = {"strat": (frame["source"] == "beta").to_numpy().astype(np.int64)}
    ctx = context(frame, folds=folds, passes=("strat",))
    r = _one(ctx, "adversarial_validation")
    assert r.statistics["max_auc"] > 0.9
    assert r.status is Status.FAIL


def test_random_split_is_not_distinguishable() -> None:
    ctx = context(_two_styles(), passes=("strat",))
    r = _one(ctx, "adversarial_validation")
    assert r.status is Status.PASS, r.reason
    assert r.statistics["max_auc"] < 0.65


def test_overfitting_shows_in_train_vs_oof(leaky_ctx: DiagnosticContext) -> None:
    r = _one(leaky_ctx, "train_vs_oof")
    assert r.statistics["mean_delta"]["sgk"] > 0.3
    assert r.status is Status.FAIL


def test_frozen_detector_has_no_train_oof_gap() -> None:
    ctx = context(make_frame(240, seed=1), detector="test-case-sensitive", passes=("strat",))
    r = _one(ctx, "train_vs_oof")
    assert r.status is Status.PASS, r.reason
    assert abs(r.statistics["mean_delta"]["strat"]) < 0.05


def test_lodo_flags_a_source_with_unseen_attacks() -> None:
    shared = make_frame(300, seed=7, sources=("alpha", "beta", "gamma"))
    odd = make_frame(100, seed=8, sources=("delta",), cues=("wubba lubba dubdub",))
    ctx = context(pd.concat([shared, odd], ignore_index=True), passes=("strat",))
    r = _one(ctx, "lodo")
    table = {row["source"]: row for row in r.statistics["by_source"]}
    assert set(table) == {"alpha", "beta", "gamma", "delta"}
    assert table["delta"]["value"] < table["alpha"]["value"] - 0.3
    assert "delta" in r.statistics["flagged"]
    assert r.status in (Status.WARN, Status.FAIL)
    assert abs(np.mean([t["value"] for t in table.values()]) - r.statistics["macro_mean"]) < 1e-12
    # The headline threshold read on each held-out source's benign prompts, then averaged.
    benign = [t["fpr_at_theta_op"] for t in table.values() if t["n_neg"] >= MIN_BENIGN]
    assert len(benign) == 4 and all(0.0 <= f <= 1.0 for f in benign)
    assert r.statistics["unseen_fpr_at_theta_op"] == np.mean(benign)
    assert f"flagged {np.mean(benign):.1%} on average" in r.reason


def test_lodo_passes_when_sources_share_their_attacks() -> None:
    ctx = context(make_frame(300, seed=9, sources=("alpha", "beta", "gamma")), passes=("strat",))
    r = _one(ctx, "lodo")
    assert r.status is Status.PASS, r.reason
    assert r.statistics["flagged"] == []


def test_transferability_judges_sigma(clean_ctx: DiagnosticContext) -> None:
    r = _one(clean_ctx, "threshold_transferability")
    numbers = clean_ctx.numbers
    assert r.statistics["sigma_theta"] == numbers.transferability["sigma"]

    def with_numbers(sigma: float, rows: list[SourceRow]) -> DiagnosticContext:
        tr = {**numbers.transferability, "sigma": sigma}
        changed = numbers.model_copy(update={"transferability": tr, "by_source": rows})
        return DiagnosticContext(**{**clean_ctx.__dict__, "numbers": changed, "cache": {}})

    for sigma, status in ((0.01, Status.PASS), (0.1, Status.WARN), (0.3, Status.FAIL)):
        assert TRANSFER.run(with_numbers(sigma, [])).status is status
    # An all-benign source has no prevalence ratio (null in result.json): not flagged.
    undefined = SourceRow(source="benign-only", n=500, primary_metric="oda", prevalence_ratio=None)
    ctx = with_numbers(0.01, [undefined])
    assert TRANSFER.run(ctx).statistics["rho_out_of_range"] == []
    skewed = SourceRow(source="skewed", n=500, primary_metric="f1", prevalence_ratio=2.0)
    assert TRANSFER.run(with_numbers(0.01, [skewed])).status is Status.WARN


def test_cues_are_not_keywords() -> None:
    from gatebench.detectors.baselines import KeywordList

    assert KeywordList().score(list(CUES)).max() == 0.0
