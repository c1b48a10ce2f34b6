"""Source roles: training corpora are fitted on in every fold, never scored, never leaked."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gatebench import api, cv
from gatebench.config import RunConfig
from gatebench.detectors import DetectorSpec
from gatebench.errors import ConfigError
from gatebench.split import TRAINING_ONLY, assign_folds, stratified_folds
from gatebench.text import text_hash
from gatebench.trace import TraceSpec, build_trace, composite_groups

XSTEST = "xstest"
DEEPSET = "deepset-prompt-injections"
MTBENCH = "mt-bench"
PROMPTMAP = "promptmap-rules"
QUESTIONS = "fastchat/llm_judge/data/mt_bench/question.jsonl"


@pytest.fixture
def mirror(tmp_path: Path, data_dir: Path) -> Path:
    """Two evaluation sources and one training corpus, copied so tests may edit them."""
    for name in (XSTEST, DEEPSET, MTBENCH, PROMPTMAP):
        shutil.copytree(data_dir / name, tmp_path / name)
    return tmp_path


def _spec(**kw: object) -> TraceSpec:
    # Without constructed twins: these tests count the sources' own rows (twins: test_twins.py).
    return TraceSpec(sources=(XSTEST, DEEPSET, MTBENCH), twins=0, **kw)  # type: ignore[arg-type]


def _append_question(mirror: Path, turns: list[str], qid: int) -> None:
    path = mirror / MTBENCH / QUESTIONS
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"question_id": qid, "category": "writing", "turns": turns}) + "\n")


def test_card_role_is_the_default_and_can_be_overridden(mirror: Path) -> None:
    trace = build_trace(_spec(), data_dir=mirror)
    roles = trace.frame.drop_duplicates("source").set_index("source")["role"].to_dict()
    assert roles == {XSTEST: "evaluation", DEEPSET: "evaluation", MTBENCH: "training"}
    assert trace.info["roles"]["training"]["sources"] == [MTBENCH]
    assert trace.info["roles"]["training"]["prompts"] == 160
    assert trace.info["roles"]["evaluation"]["prompts"] == 450 + 662

    flipped = build_trace(_spec(roles={DEEPSET: "training"}), data_dir=mirror)
    assert flipped.trace_id != trace.trace_id
    assert flipped.info["roles"]["training"]["sources"] == [DEEPSET, MTBENCH]
    assert set(flipped.frame.loc[flipped.frame.source == DEEPSET, "role"]) == {"training"}


def test_unknown_role_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"role 'train' for source 'xstest'.*--role"):
        _spec(roles={XSTEST: "train"})


def test_changing_a_training_file_changes_the_trace_id(mirror: Path) -> None:
    before = build_trace(_spec(), data_dir=mirror).trace_id
    path = mirror / MTBENCH / QUESTIONS
    path.write_text(path.read_text().replace("Hawaii", "Hawaij", 1))
    assert build_trace(_spec(), data_dir=mirror).trace_id != before


def test_training_rows_that_duplicate_evaluation_rows_are_dropped_and_counted(
    mirror: Path,
) -> None:
    base = build_trace(_spec(), data_dir=mirror)
    evaluation = base.frame[base.frame.role == "evaluation"]
    short = evaluation[evaluation.source == XSTEST].iloc[0].text
    long = max(evaluation[evaluation.source == DEEPSET].text, key=len)
    assert len(long) > 300
    # An exact copy up to case and spacing, and a near-duplicate with one word changed.
    near = long.replace(" the ", " a ", 1)
    assert near != long
    _append_question(mirror, ["  " + short.upper() + " ", "Thanks, now a haiku."], 9001)
    _append_question(mirror, [near], 9002)

    trace = build_trace(_spec(), data_dir=mirror)
    stats = trace.info["per_source"][MTBENCH]
    # Question 9001's follow-up shares its parent group, so it goes too: 3 prompts.
    assert stats["dropped_overlapping_evaluation"] == 3
    assert trace.info["roles"]["training"]["dropped_overlapping_evaluation"] == 3
    assert stats["benign"] == 160
    training = trace.frame[trace.frame.role == "training"]
    assert text_hash(short) not in set(training.text_sha256)
    assert not training.sample_id.str.startswith(f"{MTBENCH}:900").any()
    # No group left mixes the roles.
    groups = composite_groups(trace.frame, trace.info["spec"]["seed"]).groups
    by_group = pd.Series(trace.frame.role.to_numpy()).groupby(groups).nunique()
    assert by_group.max() == 1


def test_assign_folds_without_training_rows_matches_the_plain_splitter() -> None:
    y = np.array([0, 1] * 30)
    plain = stratified_folds(y, n_splits=3, seed=5)
    assigned = assign_folds(y, None, passes=("strat",), n_splits=3, seeds={"strat": 5})
    np.testing.assert_array_equal(assigned["strat"], plain)


def test_training_rows_join_every_training_split_and_no_test_fold() -> None:
    y = np.array([0, 1] * 30 + [0] * 10)
    scored = np.arange(y.size) < 60
    groups = np.arange(y.size)
    folds = assign_folds(y, groups, scored=scored, n_splits=3, seeds={"strat": 1, "sgk": 2})
    training = np.flatnonzero(~scored)
    for name, f in folds.items():
        assert (f[training] == TRAINING_ONLY).all()
        np.testing.assert_array_equal(
            f[scored],
            assign_folds(y[scored], groups[scored], n_splits=3, seeds={"strat": 1, "sgk": 2})[name],
        )
        for task in cv.make_tasks(name, f, y, DetectorSpec("tfidf-lr"), seed=0):
            assert np.isin(training, task.train_idx).all()
            assert not np.isin(training, task.test_idx).any()


def test_training_rows_never_reach_the_oof_table_or_the_metrics(
    mirror: Path, tmp_path: Path
) -> None:
    config = RunConfig(
        detector="tfidf-lr",
        sources=(XSTEST, DEEPSET, MTBENCH),
        data_dir=mirror,
        bootstrap=200,
        folds=3,
        n_jobs=1,
        cache_dir=tmp_path / "cache",
        out=tmp_path / "run",
        diagnostics="none",
    )
    run = api.evaluate(config)
    oof = pd.read_parquet(run / "oof.parquet")
    result = json.loads((run / "result.json").read_text())
    manifest = json.loads((run / "manifest.json").read_text())
    assert not oof.source.eq(MTBENCH).any()
    assert set(oof.source) == {XSTEST, DEEPSET}
    assert oof.groupby("pass").size().to_dict() == {"sgk": 1112, "strat": 1112}
    assert {r["source"] for r in result["by_source"]} == {XSTEST, DEEPSET}
    assert manifest["trace"]["per_source"][MTBENCH]["role"] == "training"
    assert manifest["trace"]["roles"]["training"]["sources"] == [MTBENCH]
    folds = json.loads((run / "folds.json").read_text())
    chunks = pd.read_parquet(run / "oof_chunks.parquet")
    assert not chunks.source.eq(MTBENCH).any()
    assert sum(f["n_rows"] for f in folds["strat"]["marginals"]) == len(
        chunks[chunks["pass"] == "strat"]
    )
    assert chunks.score.notna().all()


def test_embedded_injections_use_training_rows_only_and_are_seeded(mirror: Path) -> None:
    from gatebench.augment import EMBEDDED_SOURCE

    spec = TraceSpec(sources=(XSTEST, DEEPSET, MTBENCH, PROMPTMAP), embedded=50)
    trace = build_trace(spec, data_dir=mirror)
    frame = trace.frame
    made = frame[frame.source == EMBEDDED_SOURCE]
    assert 40 <= len(made) <= 50
    assert set(made.role) == {"training"} and set(made.label) == {1}
    # The payload now sits inside a document, whatever its host was (mt-bench: user turns).
    assert set(made.position) == {"document"}
    assert set(frame.loc[frame.source == MTBENCH, "position"]) == {"user"}

    def squash(text: str) -> str:
        return " ".join(text.split())

    hosts = {squash(t) for t in frame.loc[frame.source == MTBENCH, "text"]}
    payloads = [p.strip() for p in frame.loc[frame.source == PROMPTMAP, "text"]]
    for text in made.text:
        # Each row is exactly one training host with one training payload inserted.
        payload = next(p for p in payloads if p in text)
        assert squash(text.replace(payload, " ", 1)) in hosts
    again = build_trace(spec, data_dir=mirror)
    assert again.frame[again.frame.source == EMBEDDED_SOURCE].text.tolist() == made.text.tolist()
    none = build_trace(TraceSpec(sources=spec.sources, embedded=0), data_dir=mirror)
    assert none.trace_id != trace.trace_id
    assert not none.frame.source.eq(EMBEDDED_SOURCE).any()
    assert trace.info["per_source"][EMBEDDED_SOURCE]["attack"] == len(made)


def test_instruction_payloads_plant_benign_training_requests_and_change_the_trace_id(
    mirror: Path,
) -> None:
    from gatebench.augment import EMBEDDED_SOURCE

    sources = (XSTEST, DEEPSET, MTBENCH, PROMPTMAP)
    spec = TraceSpec(sources=sources, embedded=30, embedded_payloads="instructions")
    trace = build_trace(spec, data_dir=mirror)
    frame = trace.frame
    made = frame[frame.source == EMBEDDED_SOURCE]
    assert 0 < len(made) <= 30
    assert set(made.label) == {1} and set(made.position) == {"document"}

    def squash(text: str) -> str:
        return " ".join(text.split())

    # The only benign training corpus is mt-bench: its long turns host its short ones.
    turns = frame.loc[frame.source == MTBENCH, "text"]
    hosts = {squash(t) for t in turns}
    asks = [t.strip() for t in turns if len(t.strip()) <= 300]
    for text in made.text:
        ask = max((a for a in asks if a in text), key=len)
        before, after = text.split(ask, 1)
        assert before.strip() and after.strip()
        assert squash(before + " " + after) in hosts
    again = build_trace(spec, data_dir=mirror).frame
    assert again[again.source == EMBEDDED_SOURCE].text.tolist() == made.text.tolist()
    ids = {
        kind: build_trace(
            TraceSpec(sources=sources, embedded=30, embedded_payloads=kind), data_dir=mirror
        ).trace_id
        for kind in ("attacks", "mixed", "addressed")
    }
    assert len({trace.trace_id, *ids.values()}) == 4
    # With no embedded rows the payload kind changes nothing, so neither does the id.
    none = build_trace(TraceSpec(sources=sources), data_dir=mirror).trace_id
    assert build_trace(replace(spec, embedded=0), data_dir=mirror).trace_id == none
    with pytest.raises(ConfigError, match="embedded_payloads"):
        TraceSpec(sources=sources, embedded=30, embedded_payloads="requests")


def test_addressed_payloads_count_both_halves_in_the_trace_info(mirror: Path) -> None:
    from gatebench.augment import ADDRESSEES, EMBEDDED_SOURCE

    sources = (XSTEST, DEEPSET, MTBENCH, PROMPTMAP)
    trace = build_trace(
        TraceSpec(sources=sources, embedded=30, embedded_payloads="addressed"), data_dir=mirror
    )
    made = trace.frame[trace.frame.source == EMBEDDED_SOURCE]
    counts = trace.info["per_source"][EMBEDDED_SOURCE]
    assert counts["attack"] == (made.label == 1).sum() == counts["benign"] > 0
    assert counts["family"] == "balanced" and set(made.position) == {"document"}
    to_model = tuple(m for m, _ in ADDRESSEES)
    # Every attack row, and no benign one, carries a line addressed to the model.
    assert made.text.map(lambda t: any(m in t for m in to_model)).eq(made.label == 1).all()


def test_holdout_only_takes_evaluation_prompts() -> None:
    frame = pd.DataFrame(
        {
            "sample_id": [f"e{i}" for i in range(20)] + [f"t{i}" for i in range(20)],
            "label": [0, 1] * 20,
            "role": ["evaluation"] * 20 + ["training"] * 20,
        }
    )
    fit, held = api.split_holdout(frame, 0.5, seed=3)
    assert held is not None
    assert set(held["role"]) == {"evaluation"} and len(held) == 10
    assert set(fit.loc[fit.role == "training", "sample_id"]) == {f"t{i}" for i in range(20)}
