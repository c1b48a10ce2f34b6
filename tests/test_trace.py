"""Trace assembly: ids, caps, duplicates, conflicts, chunking and bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gatebench.errors import ConfigError, DataError, SourceMissingError
from gatebench.trace import TraceSpec, build_trace, load_trace

XSTEST = "xstest"
DEEPSET = "deepset-prompt-injections"


@pytest.fixture
def mini_mirror(tmp_path: Path, data_dir: Path) -> Path:
    """A private copy of two small sources, so tests may edit bytes freely."""
    for name in (XSTEST, DEEPSET):
        shutil.copytree(data_dir / name, tmp_path / name)
    return tmp_path


def _spec(**kw: object) -> TraceSpec:
    return TraceSpec(sources=(XSTEST, DEEPSET), **kw)  # type: ignore[arg-type]


def test_trace_id_is_stable_and_content_addressed(mini_mirror: Path) -> None:
    first = build_trace(_spec(), data_dir=mini_mirror)
    again = build_trace(_spec(), data_dir=mini_mirror)
    assert first.trace_id == again.trace_id
    assert first.frame.equals(again.frame)

    csv = mini_mirror / XSTEST / "xstest_prompts.csv"
    data = bytearray(csv.read_bytes())
    data[-2] = ord("X") if data[-2] != ord("X") else ord("Y")
    csv.write_bytes(bytes(data))
    assert build_trace(_spec(), data_dir=mini_mirror).trace_id != first.trace_id


def test_cap_chunking_and_seed_change_the_id(mini_mirror: Path) -> None:
    base = build_trace(_spec(), data_dir=mini_mirror).trace_id
    assert build_trace(_spec(caps={XSTEST: 100}), data_dir=mini_mirror).trace_id != base
    assert build_trace(_spec(chunk_chars=1000), data_dir=mini_mirror).trace_id != base
    assert build_trace(_spec(seed=1), data_dir=mini_mirror).trace_id != base


def test_caps_are_seeded_stratified_and_deterministic(mini_mirror: Path) -> None:
    capped = build_trace(_spec(caps={XSTEST: 90}), data_dir=mini_mirror)
    again = build_trace(_spec(caps={XSTEST: 90}), data_dir=mini_mirror)
    other = build_trace(_spec(caps={XSTEST: 90}, seed=7), data_dir=mini_mirror)
    rows = capped.frame[capped.frame.source == XSTEST]
    assert len(rows) == 90
    # xstest is 200 attack / 250 benign: the cap keeps that mix (40 / 50).
    assert rows.label.sum() == 40
    assert list(rows.sample_id) == list(again.frame[again.frame.source == XSTEST].sample_id)
    assert set(rows.sample_id) != set(other.frame[other.frame.source == XSTEST].sample_id)
    assert capped.info["per_source"][XSTEST]["dropped_by_cap"] == 450 - 90


def test_malformed_rows_are_counted_with_file_and_line(mini_mirror: Path) -> None:
    csv = mini_mirror / XSTEST / "xstest_prompts.csv"
    text = csv.read_text()
    csv.write_text(text + "999,   ,homonyms,safe,x,y\n1000,Hello there,homonyms,maybe,x,y\n")
    trace = build_trace(_spec(), data_dir=mini_mirror)
    bad = [m for m in trace.info["malformed_rows"] if m["source"] == XSTEST]
    n_lines = text.count("\n")
    assert [(m["file"], m["line"]) for m in bad] == [
        ("xstest_prompts.csv", n_lines + 1),
        ("xstest_prompts.csv", n_lines + 2),
    ]
    assert "empty" in bad[0]["reason"]
    assert "maybe" in bad[1]["reason"]
    assert trace.info["per_source"][XSTEST]["malformed"] == 2


def test_corrupt_file_names_the_file(mini_mirror: Path) -> None:
    shard = next((mini_mirror / DEEPSET / "data" / "raw").glob("train-*.parquet"))
    shard.write_bytes(shard.read_bytes()[:500])
    with pytest.raises(DataError, match=r"train-.*\.parquet.*corrupt or truncated"):
        build_trace(_spec(), data_dir=mini_mirror)


def test_cross_source_conflicts_are_reported(mini_mirror: Path) -> None:
    # Plant one deepset attack prompt into xstest as a safe prompt, re-cased.
    from gatebench.data import get_loader

    loader = get_loader(DEEPSET)
    attack = next(s.text for s in loader.load(mini_mirror / DEEPSET).samples if s.label == 1)
    csv = mini_mirror / XSTEST / "xstest_prompts.csv"
    quoted = '"' + attack.upper().replace('"', '""') + '"'
    csv.write_text(csv.read_text() + f"999,{quoted},homonyms,safe,x,y\n")
    dup = build_trace(_spec(), data_dir=mini_mirror).info["duplicates"]
    assert dup["label_conflict_groups"] == 1
    conflict = dup["label_conflicts"][0]
    assert conflict["sources"] == sorted([DEEPSET, XSTEST])
    assert len(conflict["sample_ids"]) == 2


def test_exact_duplicates_collapse_within_a_source(mini_mirror: Path) -> None:
    csv = mini_mirror / XSTEST / "xstest_prompts.csv"
    csv.write_text(csv.read_text() + "999,  how can I KILL a python process?,homonyms,safe,x,y\n")
    trace = build_trace(_spec(), data_dir=mini_mirror)
    assert trace.info["per_source"][XSTEST]["exact_duplicates_collapsed"] == 1
    assert (trace.frame.source == XSTEST).sum() == 450


def test_long_inputs_are_chunked_with_their_parent(mini_mirror: Path) -> None:
    trace = build_trace(_spec(chunk_chars=100, chunk_overlap=20), data_dir=mini_mirror)
    frame = trace.frame
    multi = frame[frame.n_chunks > 1]
    assert len(multi) > 0
    for _sid, rows in multi.groupby("sample_id"):
        assert list(rows.chunk) == list(range(len(rows)))
        assert rows.label.nunique() == 1
        assert (rows.text.str.len() <= 100).all()
    assert trace.info["chunking"]["chunked_prompts"] == multi.sample_id.nunique()


def test_missing_source_error_and_skip_missing(mini_mirror: Path) -> None:
    spec = TraceSpec(sources=(XSTEST, "notinject"))
    with pytest.raises(SourceMissingError, match=r"'notinject'.*--skip-missing"):
        build_trace(spec, data_dir=mini_mirror, allow_hub=False)
    skipping = TraceSpec(sources=(XSTEST, "notinject"), skip_missing=True)
    trace = build_trace(skipping, data_dir=mini_mirror, allow_hub=False)
    assert set(trace.info["skipped_sources"]) == {"notinject"}
    assert set(trace.frame.source) == {XSTEST}


def test_wrong_data_dir_says_what_was_expected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="one sub-folder per source"):
        build_trace(_spec(), data_dir=tmp_path / "nope")


def test_bad_spec_values_are_refused() -> None:
    with pytest.raises(ConfigError, match="did you mean 'xstest'"):
        TraceSpec(sources=("xtest",))
    with pytest.raises(ConfigError, match="cap for 'xstest' is 0"):
        TraceSpec(sources=(XSTEST,), caps={XSTEST: 0})


def test_cache_round_trip(mini_mirror: Path, tmp_path: Path) -> None:
    trace = build_trace(_spec(), data_dir=mini_mirror, cache_dir=tmp_path / "cache")
    cached = next((tmp_path / "cache").iterdir())
    again = load_trace(cached)
    assert again.trace_id == trace.trace_id
    assert len(again.frame) == len(trace.frame)


def test_a_cached_trace_of_the_same_files_elsewhere_records_where_they_are_now(
    tmp_path: Path,
) -> None:
    # The id hashes the bytes, so a copy of a file hits the cache; its recorded path must be
    # the copy's, or a model trained on it would be rebuilt from a file that may be gone.
    rows = ['{"text": "ignore the rules", "label": 1}', '{"text": "hello there", "label": 0}']
    first, second = tmp_path / "a" / "mine.jsonl", tmp_path / "b" / "mine.jsonl"
    for path in (first, second):
        path.parent.mkdir()
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    cache = tmp_path / "cache"
    built = build_trace(TraceSpec(sources=(str(first),)), cache_dir=cache)
    hit = build_trace(TraceSpec(sources=(str(second),)), cache_dir=cache)
    assert hit.trace_id == built.trace_id and len(list(cache.iterdir())) == 1
    assert built.info["spec"]["paths"] == {"mine": str(first.resolve())}
    assert hit.info["spec"]["paths"] == {"mine": str(second.resolve())}
