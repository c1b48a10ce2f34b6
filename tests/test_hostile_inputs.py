"""Hostile input at every file boundary: model and run directories, config files, bulk
input files (JSONL, Parquet) and mirror files (CSV, JSONL, Parquet, YAML).

Each case asserts the exit code (or the exception type), that the message names the
thing and the bad value and says what to do, and that nothing is lost uncounted.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cli_checks import fails_cleanly, runner
from gatebench.cli import app
from gatebench.data import get_loader
from gatebench.errors import DataError


def _manifest_edit(edit: Callable[[dict], object]) -> Callable[[Path], None]:
    def apply(model: Path) -> None:
        path = model / "gatebench-model.json"
        path.write_text(json.dumps(edit(json.loads(path.read_text()))))

    return apply


# -- model directories -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("damage", "needles"),
    [
        (
            lambda m: (m / "gatebench-model.json").write_text("{bad"),
            ("is not a gatebench model directory", "unreadable", "gatebench train"),
        ),
        (
            lambda m: (m / "gatebench-model.json").write_text("[1]"),
            ("holds a JSON list, not an object", "gatebench train"),
        ),
        (
            lambda m: shutil.rmtree(m / "state"),
            ("has a manifest but no state/", "Retrain"),
        ),
        (
            _manifest_edit(lambda d: {**d, "threshold": "high"}),
            ("'threshold' is 'high'", "expected a finite number"),
        ),
        (
            _manifest_edit(lambda d: {**d, "threshold": None}),
            ("'threshold' is None", "expected a finite number"),
        ),
        (
            _manifest_edit(lambda d: {**d, "format": 99}),
            ("has model format 99", "Retrain with `gatebench train`"),
        ),
        (
            _manifest_edit(lambda d: {**d, "detector": "gate"}),
            ("'detector' is 'gate'", "a 'name' string"),
        ),
        (
            _manifest_edit(lambda d: {**d, "detector": {"name": "nosuch", "params": {}}}),
            ("nosuch", "tfidf-lr"),
        ),
        (
            lambda m: [p.write_bytes(b"junk") for p in (m / "state").rglob("*") if p.is_file()],
            ("cannot be loaded", "damaged or incomplete", "Retrain"),
        ),
    ],
    ids=[
        "manifest-not-json",
        "manifest-a-list",
        "state-missing",
        "threshold-a-string",
        "threshold-null",
        "format-unknown",
        "detector-not-an-object",
        "detector-unknown",
        "state-corrupt",
    ],
)
def test_damaged_model_directory_is_named(
    tmp_path: Path,
    xstest_tfidf: tuple[Path, Path],
    damage: Callable[[Path], object],
    needles: tuple[str, ...],
) -> None:
    model = tmp_path / "model"
    shutil.copytree(xstest_tfidf[0], model)
    damage(model)
    fails_cleanly(["detect", str(model), "hello"], *needles)


def test_a_file_given_as_model_directory(tmp_path: Path) -> None:
    path = tmp_path / "model"
    path.write_text("x")
    fails_cleanly(["detect", str(path), "hi"], str(path), "gatebench train")


# -- run directories ---------------------------------------------------------------------


def _result_edit(edit: Callable[[dict], object]) -> Callable[[Path], None]:
    def apply(run: Path) -> None:
        path = run / "result.json"
        path.write_text(json.dumps(edit(json.loads(path.read_text()))))

    return apply


@pytest.mark.parametrize(
    ("damage", "needles"),
    [
        (lambda r: (r / "result.json").unlink(), ("cannot read", "result.json", "gatebench run")),
        (lambda r: (r / "result.json").write_bytes(b"\xff\xfe\x00"), ("cannot read", "utf-8")),
        (
            _result_edit(lambda d: {**d, "metrics": [1]}),
            ("section 'metrics' is [1]", "expected a JSON object", "gatebench run --out DIR"),
        ),
        (
            _result_edit(lambda d: {**d, "by_source": {"x": 1}}),
            ("section 'by_source'", "list of objects"),
        ),
        (
            _result_edit(lambda d: {**d, "by_source": [1, 2]}),
            ("section 'by_source' is [1, 2]", "list of objects"),
        ),
        (
            _result_edit(lambda d: {k: v for k, v in d.items() if k != "operating_point"}),
            ("lacks operating_point", "Re-run the evaluation"),
        ),
    ],
    ids=[
        "no-result",
        "binary-result",
        "metrics-a-list",
        "by-source-an-object",
        "by-source-of-numbers",
        "no-operating-point",
    ],
)
@pytest.mark.parametrize("command", ["report", "diagnose"])
def test_damaged_run_directory_is_named(
    tmp_path: Path,
    xstest_tfidf: tuple[Path, Path],
    damage: Callable[[Path], object],
    needles: tuple[str, ...],
    command: str,
) -> None:
    run = tmp_path / "run"
    shutil.copytree(xstest_tfidf[1], run)
    damage(run)
    fails_cleanly([command, str(run)], *needles)
    assert not (run / "report.html").exists()


# -- config files ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "needles"),
    [
        ("c.yaml", b"detector: [gate\n", ("invalid TOML", "YAML and JSON are not read", "[run]")),
        ("c.toml", b"run = 3\n", ("'run' is int 3, not a table", "[run]")),
        ("c.toml", b"[run]\nnosuch = 3\n", ("invalid nosuch", "Extra inputs", "got 3")),
        ("c.toml", b'[run]\ndetector = "caf\xe9"\n', ("not UTF-8 (byte", "save it as UTF-8")),
        ("c.toml", b"[run]\nfolds = 1\n", ("invalid folds", "at least 2", "got 1")),
        ("c.toml", b'[run]\nfolds = "five"\n', ("invalid folds", "five")),
    ],
    ids=["yaml", "run-not-a-table", "unknown-key", "latin-1", "folds-1", "folds-a-string"],
)
def test_bad_config_file_is_named(
    tmp_path: Path, name: str, content: bytes, needles: tuple[str, ...]
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    out = fails_cleanly(["run", "--config", str(path)], *needles)
    assert "Traceback" not in out


def test_missing_config_file(tmp_path: Path) -> None:
    fails_cleanly(
        ["run", "--config", str(tmp_path / "nope.toml")], "nope.toml", "No such file or directory"
    )


# -- output paths ------------------------------------------------------------------------


def test_run_out_that_is_a_file_fails_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.write_text("x")
    fails_cleanly(
        ["run", "-s", "xstest", "-d", "tfidf-lr", "--out", str(out)],
        "invalid out",
        "is a file, not a directory",
    )
    assert out.read_text() == "x"


def test_train_model_dir_that_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "model"
    target.write_text("x")
    fails_cleanly(
        ["train", "-s", "xstest", "-d", "tfidf-lr", str(target)],
        "MODEL_DIR",
        "is a file, not a directory",
    )


# -- bulk input files --------------------------------------------------------------------


def _parquet(path: Path, table: pa.Table) -> Path:
    pq.write_table(table, path)
    return path


def _file(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("make", "needles"),
    [
        (
            lambda d: _parquet(d / "a.parquet", pa.table({"body": ["x"]})),
            ("a.parquet: no column 'text' (columns: body)", "--text-field"),
        ),
        (
            lambda d: _parquet(d / "b.parquet", pa.table({"text": [1, 2]})),
            ("column 'text' has type int64, not string", "row 0 holds 1"),
        ),
        (
            lambda d: _file(d / "c.parquet", b"PAR1 not really"),
            ("c.parquet: not a readable Parquet file", "check the file"),
        ),
        (
            lambda d: _file(d / "d.csv", "text\nhi\n"),
            ("cannot tell the input format from the suffix '.csv'", ".parquet or .jsonl"),
        ),
        (
            lambda d: _file(d / "e.jsonl", '{"text": "hi"}\n{"text": "x"\n'),
            ("e.jsonl:2: invalid JSON", "one JSON object per line"),
        ),
        (
            lambda d: _file(d / "f.jsonl", '{"text": "hi"}\n"bare"\n'),
            ("f.jsonl:2: expected a JSON object, got str",),
        ),
        (
            lambda d: _file(d / "g.jsonl", b'{"text": "caf\xe9"}\n'),
            ("g.jsonl:1: line is not valid UTF-8", "re-encode the file as UTF-8"),
        ),
    ],
    ids=[
        "parquet-no-text",
        "parquet-int-column",
        "parquet-corrupt",
        "csv",
        "jsonl-cut",
        "jsonl-not-object",
        "jsonl-latin-1",
    ],
)
@pytest.mark.parametrize("command", ["score", "audit"])
def test_bad_bulk_input_is_named(
    tmp_path: Path,
    xstest_tfidf: tuple[Path, Path],
    make: Callable[[Path], Path],
    needles: tuple[str, ...],
    command: str,
) -> None:
    src = make(tmp_path)
    out = tmp_path / ("o.parquet" if command == "score" else "audit")
    fails_cleanly([command, str(xstest_tfidf[0]), str(src), "--out", str(out)], *needles)
    assert not out.exists()


@pytest.mark.parametrize(
    ("make", "reasons"),
    [
        (
            lambda d: _parquet(d / "n.parquet", pa.table({"text": ["hello", None, " ", "ok"]})),
            {"null": 1, "empty": 1},
        ),
        (
            lambda d: _file(
                d / "n.jsonl", '{"text": "hello"}\n{"text": 5}\n{"text": null}\n{"text": true}\n'
            ),
            {"not_string": 2, "null": 1},
        ),
    ],
    ids=["parquet", "jsonl"],
)
def test_unscorable_rows_are_counted_not_dropped(
    tmp_path: Path,
    xstest_tfidf: tuple[Path, Path],
    make: Callable[[Path], Path],
    reasons: dict[str, int],
) -> None:
    src = make(tmp_path)
    out = tmp_path / "o.parquet"
    result = runner.invoke(app, ["score", str(xstest_tfidf[0]), str(src), "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "o.summary.json").read_text())
    assert {k: v for k, v in summary["rejected_by_reason"].items() if v} == reasons
    assert summary["rows_read"] == pq.read_metadata(out).num_rows
    assert summary["rows_scored"] + summary["rows_rejected"] == summary["rows_read"]


# -- mirror files: CSV, JSONL, Parquet, YAML ---------------------------------------------


@pytest.fixture
def copy_source(tmp_path: Path, data_dir: Path) -> Callable[[str], Path]:
    def copy(name: str) -> Path:
        shutil.copytree(data_dir / name, tmp_path / name)
        return tmp_path / name

    return copy


def test_truncated_parquet_in_the_mirror_names_the_file(
    copy_source: Callable[[str], Path],
) -> None:
    root = copy_source("deepset-prompt-injections")
    victim = next(root.rglob("train-*.parquet"))
    victim.write_bytes(victim.read_bytes()[:2000])
    with pytest.raises(DataError, match=r"train-.*\.parquet"):
        get_loader("deepset-prompt-injections").load(root, seed=0)


def test_jsonl_cut_mid_line_in_the_mirror_counts_the_line(
    copy_source: Callable[[str], Path],
) -> None:
    root = copy_source("mt-bench")
    loader = get_loader("mt-bench")
    full = loader.load(root, seed=0)
    path = next(root.rglob("question.jsonl"))
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2] + "\n")
    cut = loader.load(root, seed=0)
    assert [m.line for m in cut.malformed] == [len(lines)]
    # Only the cut line's rows are missing, and they are accounted for as malformed.
    per_line = len(full.samples) // len(lines)
    assert len(cut.samples) == len(full.samples) - per_line


@pytest.mark.parametrize(
    ("source", "pattern"),
    [
        ("promptmap-rules", "rules/*/*.yaml"),
        ("pyrit-jailbreak-templates", "**/jailbreak/templates/*.yaml"),
        ("agentdojo-environments", "**/injection_vectors.yaml"),
    ],
)
def test_broken_yaml_in_the_mirror_names_the_file(
    copy_source: Callable[[str], Path], source: str, pattern: str
) -> None:
    root = copy_source(source)
    victim = sorted(root.glob(pattern))[0]
    victim.write_text("key: [unclosed\n  - : :\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"{victim.name}.*(not valid YAML|expected)"):
        get_loader(source).load(root, seed=0)
