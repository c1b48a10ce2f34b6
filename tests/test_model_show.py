"""`gatebench model show`: what a model directory says about itself, without loading it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli_checks import fails_cleanly
from gatebench.cli import app
from gatebench.modeldir import model_summary, read_manifest

runner = CliRunner()
SOURCES = ("xstest", "deepset-prompt-injections", "notinject")


@pytest.fixture(scope="module")
def unseen_model(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    """TF-IDF + LR on three sources, its threshold placed on sources held out whole."""
    from gatebench import api
    from gatebench.config import RunConfig

    where = tmp_path_factory.mktemp("model")
    cfg = RunConfig(
        detector="tfidf-lr", sources=SOURCES, data_dir=data_dir,
        cache_dir=Path(".cache/gatebench"), out=where / "run", bootstrap=200, folds=3,
        n_jobs=1, diagnostics="none",
    )  # fmt: skip
    return api.train(cfg, where / "model", unseen_fpr=0.05)


def test_the_summary_holds_each_held_out_source_at_the_threshold(unseen_model: Path) -> None:
    meta = read_manifest(unseen_model)
    s = model_summary(meta)
    op = meta["operating_point"]
    assert s["threshold"]["value"] == meta["threshold"] == op["threshold"]
    assert s["threshold"]["rule"] == op["rule"]
    assert s["threshold"]["shipped_fpr"]["value"] == op["mean_fpr"] <= 0.05
    assert [r["source"] for r in s["held_out"]] == sorted(SOURCES)
    for row in s["held_out"]:
        recorded = op["per_source"][row["source"]]
        assert (row["benign"], row["attacks"]) == (recorded["n_benign"], recorded["n_attack"])
        assert (row["fpr"], row["recall"]) == (recorded["fpr"], recorded["recall"])
    # The mean is over the sources counted in it.
    counted = [r["fpr"] for r in s["held_out"] if r["in_mean"]]
    assert s["held_out_totals"]["mean_fpr"] == pytest.approx(sum(counted) / len(counted))
    assert s["trace"]["trace_id"] == meta["trace_id"] and s["trace"]["sources"] == list(SOURCES)
    assert s["traffic"] is None and s["adapted"] is None


def test_a_headline_point_has_no_held_out_table() -> None:
    meta = {
        "detector": {"name": "gate", "params": {}},
        "threshold": 0.88,
        "operating_point": {"rule": "max F1 s.t. FPR", "threshold": 0.88, "fpr": 0.0098},
    }
    s = model_summary(meta)
    assert s["held_out"] == [] and s["held_out_totals"] is None
    assert s["threshold"]["shipped_fpr"]["value"] == 0.0098
    assert s["trace"] == {
        "trace_id": None, "sources": [], "roles": {}, "seed": None, "refused_rows": None
    }  # fmt: skip


def test_a_re_picked_and_refitted_model_says_so() -> None:
    chosen = {"threshold": 0.95, "fpr": 0.004, "fpr_upper": 0.009}
    meta = {
        "threshold": 0.95,
        "traffic_threshold": {
            "rule": "bound", "target_fpr": 0.01, "confidence": 0.95,
            "input": {"path": "tune.jsonl", "sha256": "a"}, "rows_read": 1000,
            "rows_rejected": 2, "rows_trained_on": 0, "rows_used": 998, "chosen": chosen,
            "previous": {"threshold": 0.93, "fpr": 0.02},
        },
        "adapted": {
            "from_model": "/m", "train_share": 0.5, "split_draw": 0,
            "train": {"rows": 1000}, "tune": {"rows": 998, "sha256": "a"},
        },
    }  # fmt: skip
    s = model_summary(meta)
    assert s["traffic"]["input"] == "tune.jsonl" and s["traffic"]["chosen"] == chosen
    assert s["adapted"] == {"from_model": "/m", "train_share": 0.5, "split_draw": 0,
                            "train_rows": 1000, "tune_rows": 998}  # fmt: skip
    assert s["threshold"]["shipped_fpr"]["measured_on"].endswith("(the part not trained on)")


def test_command_prints_the_table_and_json(unseen_model: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["model", "show", str(unseen_model)])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "tfidf-lr" in out and "Sources held out of the fit" in out
    meta = read_manifest(unseen_model)
    assert f"threshold {meta['threshold']:.4f}" in out
    for source in SOURCES:
        assert source[:20] in out
    result = runner.invoke(app, ["model", "show", str(unseen_model), "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert record["held_out"] == json.loads(json.dumps(model_summary(meta)["held_out"]))
    fails_cleanly(["model", "show", str(tmp_path)], "not a gatebench model directory")


def test_command_prints_what_tune_threshold_and_adapt_recorded(
    unseen_model: Path, tmp_path: Path
) -> None:
    import shutil

    from gatebench.modeldir import MANIFEST

    copy = tmp_path / "adapted"
    shutil.copytree(unseen_model, copy)
    meta = json.loads((copy / MANIFEST).read_text())
    meta["traffic_threshold"] = {
        "rule": "bound",
        "target_fpr": 0.01,
        "confidence": 0.95,
        "input": {"path": "tune.jsonl", "sha256": "a"},
        "rows_read": 1000,
        "rows_rejected": 2,
        "rows_trained_on": 0,
        "rows_used": 998,
        "chosen": {"threshold": 0.95, "fpr": 0.004, "fpr_upper": 0.0099},
        "previous": {"threshold": 0.93, "fpr": 0.02},
    }
    meta["adapted"] = {
        "from_model": "/m",
        "train_share": 0.5,
        "split_draw": 1,
        "train": {"rows": 1000},
        "tune": {"rows": 998, "sha256": "a"},
    }
    (copy / MANIFEST).write_text(json.dumps(meta))
    result = runner.invoke(app, ["model", "show", str(copy)])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "re-picked on tune.jsonl: 998 benign prompts of 1,000 read" in out
    assert "FPR 0.40%, upper bound 0.99% at 95% (target 1.00%)" in out
    assert "refitted from /m with 1,000 traffic rows (share 0.5, split draw 1)" in out
    assert "benign flag rate there: 0.40% (the benign traffic sample (the part not" in out
