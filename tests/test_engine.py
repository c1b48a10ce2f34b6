"""End-to-end evaluation on a small real trace: artifacts, determinism, resume, errors."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score, roc_auc_score

from gatebench import api, cv
from gatebench.config import RunConfig, load_config
from gatebench.detectors import DETECTORS
from gatebench.errors import ConfigError, DetectorError
from gatebench.result import SCHEMA_VERSION
from gatebench.trace import TraceSpec, build_trace, composite_groups

SOURCES = ("xstest", "deepset-prompt-injections", "notinject", "advbench")


def _config(tmp: Path, data_dir: Path, **kw: Any) -> RunConfig:
    base: dict[str, Any] = {
        "detector": "tfidf-lr",  # the engine's behaviour, not Gate's, is under test here
        "sources": SOURCES,
        "data_dir": data_dir,
        "bootstrap": 300,
        "folds": 3,
        "n_jobs": 1,
        "cache_dir": tmp / "cache",
        "out": tmp / "run",
        "caps": {"advbench": 150},
        "diagnostics": "none",
    }
    base.update(kw)
    return RunConfig(**base)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    tmp = tmp_path_factory.mktemp("engine")
    return api.evaluate(_config(tmp, data_dir, diagnostics="cheap"))


def test_run_directory_is_complete(run_dir: Path) -> None:
    for name in (
        "manifest.json",
        "oof.parquet",
        "oof.jsonl",
        "folds.json",
        "result.json",
        "trace_info.json",
    ):
        assert (run_dir / name).is_file(), name
    result = json.loads((run_dir / "result.json").read_text())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert result["schema_version"] == manifest["schema_version"] == SCHEMA_VERSION
    assert manifest["seeds"]["root"] == 20260527
    assert manifest["lsh"]["num_perm"] == 128
    assert manifest["trace"]["trace_id"] == result["trace"]["trace_id"]
    for point in ("headline", "natural"):
        m = result["metrics"][point]
        for key in ("f1", "precision", "recall", "fpr"):
            ci = m["micro"]["ci"][key]
            assert ci["low"] <= m["micro"][key] <= ci["high"]
        assert m["macro"]["ci"]["f1"]["low"] <= m["macro"]["f1"] <= m["macro"]["ci"]["f1"]["high"]
    assert {r["source"] for r in result["by_source"]} == set(SOURCES)
    assert set(result["fold_thresholds"]) == {"strat", "sgk"}
    assert "delta_f1_headline" in result["leakage"]
    cal = result["calibration"]
    assert cal["brier_after"] >= 0 and len(cal["reliability_before"]) == 15
    statuses = {d["name"]: d["status"] for d in result["diagnostics"]}
    assert {"leakage_premium", "random_label", "length_bias"} <= set(statuses)
    assert set(statuses.values()) <= {"PASS", "WARN", "FAIL", "NOT_APPLICABLE"}
    assert "leaderboard" in result["comparisons"] or "error" in result["comparisons"]


def test_operating_point_honours_tau_and_matches_sklearn(run_dir: Path) -> None:
    result = json.loads((run_dir / "result.json").read_text())
    oof = pd.read_parquet(run_dir / "oof.parquet")
    head = oof[oof["pass"] == "strat"]
    op = result["operating_point"]
    pred = (head["score"] >= op["threshold"]).astype(int)
    benign = head["label"] == 0
    assert pred[benign].mean() == pytest.approx(op["fpr"])
    assert op["fpr"] <= 0.01
    assert result["metrics"]["headline"]["micro"]["f1"] == pytest.approx(
        f1_score(head["label"], pred)
    )
    assert result["passes"]["strat"]["auc"] == pytest.approx(
        roc_auc_score(head["label"], head["score"])
    )


def test_oof_has_one_row_per_pass_and_prompt(run_dir: Path) -> None:
    oof = pd.read_parquet(run_dir / "oof.parquet")
    assert not oof.duplicated(["pass", "sample_id"]).any()
    assert oof.groupby("pass").size().nunique() == 1
    assert oof["score"].between(0, 1).all()
    assert set(oof["fold"]) == {0, 1, 2}


def test_grouped_pass_keeps_groups_in_one_fold(run_dir: Path, data_dir: Path) -> None:
    chunks = pd.read_parquet(run_dir / "oof_chunks.parquet")
    sgk = chunks[chunks["pass"] == "sgk"].reset_index(drop=True)
    trace = build_trace(
        TraceSpec(sources=SOURCES, caps={"advbench": 150}, seed=20260527), data_dir=data_dir
    )
    groups = composite_groups(trace.frame, 20260527).groups
    assert list(trace.frame["row_id"]) == list(sgk["row_id"])
    per_group = pd.Series(sgk["fold"].to_numpy()).groupby(groups).nunique()
    assert (per_group == 1).all()


def test_seeded_rerun_is_byte_identical_and_resumes(
    run_dir: Path, tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    again = api.evaluate(_config(tmp_path, data_dir, out=tmp_path / "again"))
    assert (again / "oof.jsonl").read_bytes() == (run_dir / "oof.jsonl").read_bytes()

    # Resuming: every fold comes from its checkpoint, none is refitted.
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a finished fold was recomputed")

    monkeypatch.setattr(cv, "run_fold", refuse)
    resumed = api.evaluate(_config(tmp_path, data_dir, out=tmp_path / "again"))
    assert (resumed / "oof.jsonl").read_bytes() == (run_dir / "oof.jsonl").read_bytes()


def test_different_seed_changes_the_folds(tmp_path: Path, data_dir: Path, run_dir: Path) -> None:
    other = api.evaluate(_config(tmp_path, data_dir, seed=1, bootstrap=200, passes=("strat",)))
    assert (other / "oof.jsonl").read_bytes() != (run_dir / "oof.jsonl").read_bytes()


@pytest.mark.parametrize("fpr", [0.0, 1.0, -0.1, 1.5])
def test_tau_outside_unit_interval_is_refused(fpr: float) -> None:
    with pytest.raises(ConfigError, match=r"fpr.*strictly between 0 and 1.*--fpr 0.01"):
        load_config(fpr=fpr)


def test_unknown_detector_suggests_a_name(tmp_path: Path, data_dir: Path) -> None:
    with pytest.raises(ConfigError, match="unknown detector 'tfidf-l'; did you mean 'tfidf-lr'"):
        api.evaluate(_config(tmp_path, data_dir, detector="tfidf-l"))


def test_one_class_trace_is_refused(tmp_path: Path, data_dir: Path) -> None:
    with pytest.raises(ConfigError, match=r"only attack rows.*add sources with benign rows"):
        api.evaluate(_config(tmp_path, data_dir, sources=("advbench",)))


class _NanDetector:
    name = "nan-at-row-3"
    requires_fit = False

    def __init__(self, *, seed: int = 0) -> None:
        del seed

    def fit(self, texts: Sequence[str], labels: np.ndarray, *, valid: Any = None) -> Self:
        return self

    def score(self, texts: Sequence[str]) -> np.ndarray:
        out = np.full(len(texts), 0.5)
        out[3] = np.nan
        return out


def test_nan_scores_name_the_detector_and_row(tmp_path: Path, data_dir: Path) -> None:
    if "nan-at-row-3" not in DETECTORS:
        DETECTORS.add("nan-at-row-3", _NanDetector)
    with pytest.raises(DetectorError, match=r"'nan-at-row-3' returned nan for row 3"):
        api.evaluate(_config(tmp_path, data_dir, detector="nan-at-row-3", backend="sequential"))


def test_fold_without_positives_is_refused() -> None:
    labels = np.array([1, 1, 0, 0, 0, 0])
    folds = np.array([0, 0, 1, 1, 2, 2])
    with pytest.raises(ConfigError, match=r"fold 1 has no positive rows.*fewer folds"):
        from gatebench.detectors import DetectorSpec

        cv.make_tasks("strat", folds, labels, DetectorSpec("keyword"), seed=0)


def test_unknown_detector_parameter_lists_the_accepted_ones() -> None:
    from gatebench.detectors import DetectorSpec, make_detector

    with pytest.raises(DetectorError, match=r"nosuch.*It accepts: .*C.*--param KEY=JSON_VALUE"):
        make_detector(DetectorSpec("tfidf-lr", {"nosuch": 1}), seed=0)


def test_zero_jobs_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"n_jobs \(--jobs\) is 0"):
        load_config(None, n_jobs=0)


class _RowRecorder:
    """Scores at random; records what each fit and score receives besides the texts."""

    name = "row-recorder"
    requires_fit = True
    #: (text, source) pairs of each fit.
    fits: ClassVar[list[list[tuple[str, str]]]] = []
    #: ("fit" | "valid" | "score", (text, position) pairs) of each call.
    seen: ClassVar[list[tuple[str, list[tuple[str, str]]]]] = []

    def __init__(self, *, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def fit(
        self,
        texts: Sequence[str],
        labels: np.ndarray,
        *,
        valid: Any = None,
        sources: Sequence[str] | None = None,
        positions: Sequence[str] | None = None,
        valid_positions: Sequence[str] | None = None,
    ) -> Self:
        assert sources is not None and positions is not None and valid_positions is not None
        type(self).fits.append(list(zip(texts, sources, strict=True)))
        type(self).seen.append(("fit", list(zip(texts, positions, strict=True))))
        type(self).seen.append(("valid", list(zip(valid[0], valid_positions, strict=True))))
        return self

    def score(self, texts: Sequence[str], positions: Sequence[str] | None = None) -> np.ndarray:
        assert positions is not None
        type(self).seen.append(("score", list(zip(texts, positions, strict=True))))
        return self.rng.random(len(texts))


def _recorder() -> type[_RowRecorder]:
    if "row-recorder" not in DETECTORS:
        DETECTORS.add("row-recorder", _RowRecorder)
    _RowRecorder.fits.clear()
    _RowRecorder.seen.clear()
    return _RowRecorder


def test_a_fit_that_takes_sources_gets_each_training_rows_source(
    tmp_path: Path, data_dir: Path
) -> None:
    recorder = _recorder()
    config = _config(tmp_path, data_dir, detector="row-recorder", backend="sequential")
    api.evaluate(config)
    spec = TraceSpec(sources=SOURCES, caps={"advbench": 150}, seed=config.seed)
    frame = build_trace(spec, data_dir=data_dir).frame
    pairs = set(zip(frame["text"], frame["source"], strict=True))
    assert len(recorder.fits) == config.folds * len(config.passes)
    for fit in recorder.fits:
        assert {s for _, s in fit} == set(SOURCES)
        assert set(fit) <= pairs  # every text arrives with its own source


def test_a_detector_that_reads_positions_gets_each_rows_position(
    tmp_path: Path, data_dir: Path
) -> None:
    recorder = _recorder()
    sources, caps = ("xstest", "bipia"), {"bipia": 200}
    config = _config(
        tmp_path,
        data_dir,
        detector="row-recorder",
        backend="sequential",
        sources=sources,
        caps=caps,
    )
    api.evaluate(config)
    frame = build_trace(TraceSpec(sources=sources, caps=caps, seed=config.seed), data_dir=data_dir)
    pairs = set(zip(frame.frame["text"], frame.frame["position"], strict=True))
    kinds = {kind for kind, _ in recorder.seen}
    assert kinds == {"fit", "valid", "score"}
    for _, seen in recorder.seen:
        assert set(seen) <= pairs  # every text arrives with its own position
    fitted = {p for kind, seen in recorder.seen if kind == "fit" for _, p in seen}
    assert fitted == {"user", "document"}
