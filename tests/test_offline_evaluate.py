"""The whole pipeline without the data mirror: ``api.evaluate`` on a 60-row fixture source.

The fixture is a miniature of one real source in its upstream layout
(``jackhhao-jailbreak-classification``: two CSVs with ``prompt`` and ``type``),
read by the real loader, so a fresh clone tests trace assembly, grouping,
both fold passes, pooling, metrics, cheap diagnostics and the artifacts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from gatebench import api
from gatebench.artifacts import read_result
from gatebench.config import RunConfig

MIRROR = Path(__file__).parent / "fixtures" / "offline-mirror"
SOURCE = "jackhhao-jailbreak-classification"
N_PROMPTS = 60  # rows in the two fixture CSVs; all distinct, 30 per label


def _config(tmp: Path, name: str, **kw: Any) -> RunConfig:
    base: dict[str, Any] = {
        "detector": "tfidf-lr",
        "sources": (SOURCE,),
        "data_dir": MIRROR,
        "folds": 3,
        "bootstrap": 200,
        "diagnostics": "cheap",
        "backend": "sequential",
        "n_jobs": 1,
        "cache_dir": tmp / "cache",
        "runs_dir": tmp / "runs",
        "out": tmp / name,
    }
    base.update(kw)
    return RunConfig(**base)


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The first run and where later runs of this module may write."""
    tmp = tmp_path_factory.mktemp("offline")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("GATEBENCH_DATA", raising=False)
        return api.evaluate(_config(tmp, "first")), tmp


def test_result_validates_and_metrics_are_probabilities(offline: tuple[Path, Path]) -> None:
    run_dir, _ = offline
    result = read_result(run_dir)
    assert result.trace.n_prompts == N_PROMPTS
    assert result.trace.labels == {"attack": 30, "benign": 30}
    assert [r.source for r in result.by_source] == [SOURCE]
    for point in ("headline", "natural"):
        micro = result.metrics[point].micro
        for key in ("f1", "precision", "recall", "fpr"):
            value = micro.get(key)
            assert 0.0 <= value <= 1.0, (point, key, value)
            ci = micro.ci[key]
            assert ci.low is not None and ci.high is not None
            assert 0.0 <= ci.low <= value <= ci.high <= 1.0, (point, key, ci)
    # Distinct attack and benign phrasing: a TF-IDF model must beat chance on held-out folds.
    assert (result.metrics["natural"].micro.f1 or 0.0) > 0.5
    assert 0.0 <= result.operating_point.threshold <= 1.0
    statuses = {d.name: d.status for d in result.diagnostics}
    assert {"leakage_premium", "length_bias", "adversarial_validation"} <= set(statuses)
    assert set(statuses.values()) <= {"PASS", "WARN", "FAIL", "NOT_APPLICABLE"}
    # A check that crashed is reported as WARN with statistic "error": none may crash here.
    assert not [d.name for d in result.diagnostics if d.statistic == "error"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["trace"]["trace_id"] == result.trace.trace_id


def test_oof_has_one_row_per_prompt_and_pass(offline: tuple[Path, Path]) -> None:
    run_dir, _ = offline
    oof = pd.read_parquet(run_dir / "oof.parquet")
    assert set(oof["pass"]) == {"strat", "sgk"}
    for _, rows in oof.groupby("pass"):
        assert len(rows) == N_PROMPTS
        assert rows["sample_id"].is_unique
        assert set(rows["fold"]) == {0, 1, 2}
    assert oof["score"].between(0.0, 1.0).all()
    lines = (run_dir / "oof.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(oof)


def test_same_seed_is_byte_identical_and_another_seed_moves_the_folds(
    offline: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir, tmp = offline
    monkeypatch.delenv("GATEBENCH_DATA", raising=False)
    again = api.evaluate(_config(tmp, "again", diagnostics="none"))
    assert (again / "oof.jsonl").read_bytes() == (run_dir / "oof.jsonl").read_bytes()

    other = api.evaluate(_config(tmp, "other", diagnostics="none", seed=1))
    first = pd.read_parquet(run_dir / "oof.parquet").set_index(["pass", "sample_id"])["fold"]
    moved = pd.read_parquet(other / "oof.parquet").set_index(["pass", "sample_id"])["fold"]
    assert set(first.index) == set(moved.index)
    assert (first != moved.loc[first.index]).any()
