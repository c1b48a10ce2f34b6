"""The shipped operating point chosen on sources held out whole."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import confusion_matrix

from cli_checks import fails_cleanly, runner
from gatebench import api
from gatebench.augment import EMBEDDED_SOURCE
from gatebench.cli import app
from gatebench.config import RunConfig
from gatebench.detectors import DetectorSpec
from gatebench.errors import ConfigError
from gatebench.modeldir import MANIFEST
from gatebench.split.splitters import TRAINING_ONLY
from gatebench.twins import TWINS_SOURCE
from gatebench.unseen import UnseenResult
from gatebench.unseen.calibrate import (
    MIN_BENIGN,
    _tasks,
    check_holdout,
    check_target,
    lowest_threshold,
    source_folds,
    source_point,
)

SPEC = DetectorSpec("tfidf-lr", {})


def _frame() -> pd.DataFrame:
    """Six evaluation sources (mixed labels), one training corpus, twins and embedded rows."""
    rows = []
    for s in range(6):
        for i in range(20):
            rows.append((f"ev{s}:{i}", f"ev{s}", i % 3 == 0, "evaluation", None))
    for i in range(30):
        rows.append((f"corpus:{i}", "corpus", i % 2 == 0, "training", None))
    for i in range(6):  # twins built on each evaluation source's first prompt
        rows.append((f"{TWINS_SOURCE}:{i}", TWINS_SOURCE, False, "training", f"ev{i}:0"))
    # Embedded rows name their payload's source: the corpus's own, then an evaluation source's.
    rows.append((f"{EMBEDDED_SOURCE}:corpus:0", EMBEDDED_SOURCE, True, "training", "corpus:1"))
    rows.append((f"{EMBEDDED_SOURCE}:ev2:1", EMBEDDED_SOURCE, True, "training", "corpus:3"))
    frame = pd.DataFrame(rows, columns=["sample_id", "source", "label", "role", "parent_id"])
    frame["label"] = frame["label"].astype(int)
    frame["text"] = frame["sample_id"]
    return frame


def test_each_evaluation_source_sits_whole_in_one_fold_and_training_rows_in_none() -> None:
    frame = _frame()
    folds = source_folds(frame, 4, seed=7)
    for name, part in frame.groupby("source"):
        ids = set(folds[part.index].tolist())
        assert len(ids) == 1, name
        if str(name).startswith("ev"):
            assert ids <= {0, 1, 2, 3}
        else:
            assert ids == {TRAINING_ONLY}
    assert set(folds[folds >= 0].tolist()) == {0, 1, 2, 3}
    # Capped at one fold per evaluation source, and seeded.
    assert int(source_folds(frame, 50, seed=7).max()) == 5
    assert np.array_equal(folds, source_folds(frame, 4, seed=7))


def test_a_fold_never_fits_on_its_held_out_sources_or_on_what_was_built_from_them() -> None:
    frame = _frame()
    folds = source_folds(frame, 3, seed=1)
    tasks = _tasks(frame, folds, SPEC, seed=1)
    assert len(tasks) == 3
    sources = frame["source"].to_numpy()
    for task in tasks:
        held = set(sources[task.test_idx])
        assert not held & set(sources[task.train_idx])
        assert np.intersect1d(task.train_idx, task.test_idx).size == 0
        trained = frame.iloc[task.train_idx]
        twins = trained[trained["source"] == TWINS_SOURCE]
        assert not set(twins["parent_id"].str.split(":").str[0]) & held
        # The twins of the other sources stay in, as does the whole training corpus.
        assert len(twins) == 6 - len(held)
        assert (trained["source"] == "corpus").sum() == 30
        # An embedded row leaves with its payload's source and stays in every other fold.
        embedded = set(trained.loc[trained["source"] == EMBEDDED_SOURCE, "sample_id"])
        expected = {f"{EMBEDDED_SOURCE}:corpus:0"} | (
            set() if "ev2" in held else {f"{EMBEDDED_SOURCE}:ev2:1"}
        )
        assert embedded == expected
    # Every evaluation row is held out exactly once.
    tested = np.concatenate([t.test_idx for t in tasks])
    assert sorted(tested.tolist()) == np.flatnonzero(frame["role"] == "evaluation").tolist()


def test_holding_out_every_source_takes_the_corpora_but_never_the_constructed_rows() -> None:
    frame = _frame()
    folds = source_folds(frame, 7, seed=7, holdout="all")
    sources = frame["source"].to_numpy()
    for name, part in frame.groupby("source"):
        ids = set(folds[part.index].tolist())
        assert len(ids) == 1, name
        constructed = name in (TWINS_SOURCE, EMBEDDED_SOURCE)
        assert (ids == {TRAINING_ONLY}) is constructed, name
    assert int(folds.max()) == 6  # six evaluation sources and the corpus, one fold each
    tasks = _tasks(frame, folds, SPEC, seed=1)
    for task in tasks:
        held = set(sources[task.test_idx])
        trained = frame.iloc[task.train_idx]
        assert not held & set(trained["source"])
        # A twin leaves its fold's training with its host's source, as for evaluation sources.
        twins = trained[trained["source"] == TWINS_SOURCE]
        hosts = set(twins["parent_id"].str.split(":").str[0])
        assert not hosts & held
        # Both embedded rows are hosted by the corpus; the second's payload is ev2's.
        embedded = trained[trained["source"] == EMBEDDED_SOURCE]
        assert (f"{EMBEDDED_SOURCE}:ev2:1" in set(embedded["sample_id"])) == (
            not held & {"corpus", "ev2"}
        )
        assert (f"{EMBEDDED_SOURCE}:corpus:0" in set(embedded["sample_id"])) == (
            "corpus" not in held
        )
    tested = np.sort(np.concatenate([t.test_idx for t in tasks]))
    constructed = frame["source"].isin([TWINS_SOURCE, EMBEDDED_SOURCE]).to_numpy()
    assert tested.tolist() == np.flatnonzero(~constructed).tolist()


def test_an_unknown_holdout_is_refused_naming_the_option_and_the_choices() -> None:
    with pytest.raises(ConfigError, match="--unseen-holdout 'corpora': choose all or evaluation"):
        check_holdout("corpora")
    with pytest.raises(ConfigError, match="--unseen-holdout"):
        source_folds(_frame(), 3, seed=0, holdout="sources")
    assert check_holdout("all") == "all"


def test_one_evaluation_source_is_refused_with_the_way_out() -> None:
    frame = _frame()
    one = frame[frame["source"].isin(["ev0", "corpus"])].reset_index(drop=True)
    with pytest.raises(ConfigError, match="--operating-point headline"):
        source_folds(one, 5, seed=0)


def _prompts(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    parts = []
    for s, (n_b, n_a, shift) in enumerate(
        [(40, 0, 0.0), (300, 50, 0.3), (15, 15, 0.6), (0, 80, 0)]
    ):
        parts.append(
            pd.DataFrame({"source": f"s{s}", "label": 0, "score": rng.beta(2, 5, n_b) + shift})
        )
        parts.append(pd.DataFrame({"source": f"s{s}", "label": 1, "score": rng.beta(5, 2, n_a)}))
    return pd.concat(parts, ignore_index=True)


def _mean_fpr(prompts: pd.DataFrame, t: float) -> float:
    benign = prompts[prompts["label"] == 0]
    big = benign.groupby("source").filter(lambda g: len(g) >= MIN_BENIGN)
    return float(big.groupby("source")["score"].apply(lambda s: (s >= t).mean()).mean())


@pytest.mark.parametrize("target", [0.0, 0.01, 0.03, 0.1, 0.5])
def test_the_threshold_is_the_lowest_that_keeps_the_source_mean_fpr_in_bound(target: float) -> None:
    prompts = _prompts(3)
    t = lowest_threshold(prompts, target)
    assert _mean_fpr(prompts, t) <= target + 1e-12
    lower = np.sort(prompts["score"].unique())
    below = lower[lower < t]
    if below.size:  # one candidate lower breaks the bound
        assert _mean_fpr(prompts, float(below[-1])) > target
    if target == 0.0:  # above every benign score of the averaged sources
        benign = prompts[(prompts["label"] == 0) & (prompts["source"] != "s2")]
        assert t > benign["score"].max()


def test_the_mean_is_over_sources_not_rows() -> None:
    # A large clean source must not dilute a small noisy one.
    prompts = pd.DataFrame(
        {
            "source": ["big"] * 1000 + ["small"] * 20 + ["tiny"] * 5,
            "label": 0,
            "score": np.r_[np.full(1000, 0.1), np.linspace(0.5, 0.95, 20), np.full(5, 0.99)],
        }
    )
    t = lowest_threshold(prompts, 0.1)
    point = source_point(prompts, t)
    # 20% of the small source is the whole budget: four of its twenty rows may be flagged.
    assert point.per_source["small"]["fpr"] == pytest.approx(0.2)
    assert point.mean_fpr == pytest.approx(0.1)
    # Five rows are too few to move the mean: reported, flagged all, not averaged.
    assert point.per_source["tiny"] == {
        "n_benign": 5,
        "fpr": 1.0,
        "averaged": False,
        "n_attack": 0,
        "recall": None,
    }
    assert point.per_source["big"]["averaged"] and point.per_source["small"]["averaged"]


def test_rates_match_sklearn_per_source() -> None:
    prompts = _prompts(5)
    point = source_point(prompts, 0.6)
    for name, part in prompts.groupby("source"):
        tn, fp, fn, tp = confusion_matrix(
            part["label"], part["score"] >= 0.6, labels=[0, 1]
        ).ravel()
        got = point.per_source[str(name)]
        assert got["n_benign"] == tn + fp and got["n_attack"] == tp + fn
        assert got["fpr"] == (pytest.approx(fp / (tn + fp)) if tn + fp else None)
        assert got["recall"] == (pytest.approx(tp / (tp + fn)) if tp + fn else None)
    flagged, y = prompts["score"] >= 0.6, prompts["label"]
    assert point.pooled_fpr == pytest.approx(flagged[y == 0].mean())
    assert point.pooled_recall == pytest.approx(flagged[y == 1].mean())


SOURCES = ("xstest", "deepset-prompt-injections", "jackhhao-jailbreak-classification", "notinject",
           "advbench", "mt-bench")  # fmt: skip


# jackhhao's long jailbreaks are most of the n-gram fitting time; 400 of its 2,000 rows
# keep both labels while each training takes a third of the time.
JACKHHAO_CAP = ("jackhhao-jailbreak-classification", 400)


def _cfg(data_dir: Path, tmp_path: Path) -> RunConfig:
    return RunConfig(
        detector="tfidf-lr", sources=SOURCES, data_dir=data_dir, cache_dir=tmp_path / "cache",
        folds=3, n_jobs=1, diagnostics="none", caps=dict([JACKHHAO_CAP]),
    )  # fmt: skip


def test_train_ships_at_the_unseen_point_by_default(data_dir: Path, tmp_path: Path) -> None:
    cfg = _cfg(data_dir, tmp_path)
    model = api.train(cfg, tmp_path / "model")
    meta = json.loads((model / MANIFEST).read_text())
    op = meta["operating_point"]
    assert meta["threshold"] == op["threshold"] and meta["target_fpr"] == op["target_fpr"] == 0.03
    assert op["mean_fpr"] <= 0.03 and op["n_folds"] == 3
    assert "evaluation_run" not in meta  # no headline run was made
    held = sorted(s for names in op["held_out"].values() for s in names)
    assert op["holdout"] == "evaluation"
    assert held == sorted(set(SOURCES) - {"mt-bench"})  # the training corpus is never held out
    benign = [v["fpr"] for v in op["per_source"].values() if v["averaged"]]
    assert op["mean_fpr"] == pytest.approx(np.mean(benign))
    # Seeded: the same options ship the same threshold; a looser bound a lower one.
    again = json.loads((api.train(cfg, tmp_path / "again") / MANIFEST).read_text())
    assert again["threshold"] == meta["threshold"]
    assert again["operating_point"] == op
    loose = api.train(cfg, tmp_path / "loose", unseen_fpr=0.2)
    loose_op = json.loads((loose / MANIFEST).read_text())["operating_point"]
    assert loose_op["threshold"] <= op["threshold"]
    assert loose_op["pooled_recall"] >= op["pooled_recall"]
    # Every source held out: the training corpus is scored and averaged like the others.
    every = api.train(cfg, tmp_path / "every", unseen_holdout="all")
    every_op = json.loads((every / MANIFEST).read_text())["operating_point"]
    held = sorted(s for names in every_op["held_out"].values() for s in names)
    assert every_op["holdout"] == "all" and held == sorted(SOURCES)
    assert every_op["per_source"]["mt-bench"]["averaged"]
    benign = [v["fpr"] for v in every_op["per_source"].values() if v["averaged"]]
    assert every_op["mean_fpr"] == pytest.approx(np.mean(benign))
    assert every_op["mean_fpr"] <= 0.03
    # `gatebench evaluate` reads such a model at its threshold; no run chose it, so the
    # in-distribution side is empty rather than another point's figures.
    out = tmp_path / "eval"
    args = ["evaluate", str(model), "alpacaeval-instructions", "--out", str(out)]
    result = runner.invoke(app, [*args, "--data-dir", str(data_dir), "--bootstrap", "200"])
    assert result.exit_code == 0, result.output
    r = UnseenResult.read(out / "result.json")
    assert r.model.threshold == meta["threshold"] and r.in_distribution is None
    assert r.model.rule == op["rule"] and r.model.target_fpr == 0.03
    html = " ".join((out / "report.html").read_text(encoding="utf-8").split())
    assert "chosen on sources held out whole when the model was trained" in html
    assert f"“{escape(op['rule'])}”, at 3.00%" in html


def test_train_refuses_conflicting_or_bad_operating_points(data_dir: Path, tmp_path: Path) -> None:
    cfg = _cfg(data_dir, tmp_path)
    with pytest.raises(ConfigError, match="drop --run"):
        api.train(cfg, tmp_path / "m", run_dir=tmp_path, operating_point="unseen")
    with pytest.raises(ConfigError, match="unknown; use one of unseen, headline"):
        api.train(cfg, tmp_path / "m", operating_point="best")
    args = [
        "train",
        "-d",
        "tfidf-lr",
        "--data-dir",
        str(data_dir),
        "-s",
        "xstest",
        "-s",
        "notinject",
    ]
    fails_cleanly(
        [*args, "--unseen-fpr", "0", str(tmp_path / "m")], "--unseen-fpr 0.0", "e.g. 0.03"
    )
    fails_cleanly([*args[:-2], str(tmp_path / "m")], "--operating-point headline")
    fails_cleanly(
        [*args, "--unseen-holdout", "corpora", str(tmp_path / "m")], "choose all or evaluation"
    )


def test_cli_train_reports_the_never_seen_estimate(data_dir: Path, tmp_path: Path) -> None:
    args = ["train", "-d", "tfidf-lr", "--data-dir", str(data_dir)]
    for name in SOURCES[:4]:
        args += ["-s", name]
    args += ["--cap", "{}={}".format(*JACKHHAO_CAP)]
    result = runner.invoke(app, [*args, "--unseen-fpr", "0.05", str(tmp_path / "model")])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    meta = json.loads((tmp_path / "model" / MANIFEST).read_text())
    assert f"threshold {meta['threshold']:.4f}" in out
    assert "over 4 benign sources (bound 5.00%)" in out


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, float("nan"), 3.0])
def test_a_bound_outside_zero_one_is_refused_naming_the_option(bad: float) -> None:
    with pytest.raises(ConfigError, match=r"--unseen-fpr .*in \(0, 1\), e.g. 0.03"):
        check_target(bad)
    assert check_target(0.03) == 0.03
