"""Hostile input at the CLI and file boundaries: a clear error or a counted rejection, never a
traceback and never a silent drop."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli_checks import fails_cleanly, runner
from gatebench.cli import app
from gatebench.data import get_loader
from gatebench.errors import DataError
from gatebench.result import SCHEMA_VERSION
from gatebench.trace import TraceSpec, build_trace

XSTEST = "xstest"


@pytest.mark.parametrize(
    ("content", "needles"),
    [
        ("[1]", ("holds a JSON list", "gatebench run --out DIR")),
        ('{"schema_version":"1.0"}', ("lacks trace, detector", "Re-run the evaluation")),
        (
            '{"schema_version":"9.0"}',
            ("schema_version '9.0'", f"this gatebench reads {SCHEMA_VERSION}"),
        ),
        ("{not json", ("cannot read", "result.json")),
    ],
)
def test_report_refuses_a_result_that_is_not_one(
    tmp_path: Path, content: str, needles: tuple[str, ...]
) -> None:
    (tmp_path / "result.json").write_text(content)
    fails_cleanly(["report", str(tmp_path)], *needles)
    assert not (tmp_path / "report.html").exists()


def test_compare_refuses_the_same_files(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "result.json").write_text("[1]")
    fails_cleanly(
        ["compare", str(tmp_path / "a"), str(tmp_path / "b")], "holds a JSON list", "result.json"
    )


def test_unknown_detector_fails_before_anything_is_written(tmp_path: Path) -> None:
    out = tmp_path / "run"
    fails_cleanly(
        ["run", "-d", "tfidf-lrr", "-s", XSTEST, "--out", str(out)], "tfidf-lrr", "tfidf-lr"
    )
    assert not out.exists()


def test_unknown_parameter_lists_the_accepted_ones(tmp_path: Path) -> None:
    out = tmp_path / "run"
    fails_cleanly(
        ["run", "-d", "tfidf-lr", "-s", XSTEST, "--param", "nosuch=1", "--out", str(out)],
        "nosuch",
        "It accepts:",
        "--param KEY=JSON_VALUE",
    )
    assert not out.exists()


def test_zero_jobs_is_refused() -> None:
    fails_cleanly(["run", "-s", XSTEST, "--jobs", "0"], "n_jobs (--jobs) is 0")


def test_bad_parameter_value_is_named_not_a_worker_traceback(
    tmp_path: Path, data_dir: Path
) -> None:
    fails_cleanly(
        [
            "run",
            "-d",
            "tfidf-lr",
            "-s",
            XSTEST,
            "--param",
            "C=notjson",
            "--data-dir",
            str(data_dir),
            "--out",
            str(tmp_path / "run"),
            "--jobs",
            "1",
            "--bootstrap",
            "200",
        ],
        "'tfidf-lr'",
        "{'C': 'notjson'}",
        "failed to fit",
        "--param",
    )


@pytest.fixture
def mirror(tmp_path: Path, data_dir: Path) -> Path:
    shutil.copytree(data_dir / XSTEST, tmp_path / XSTEST)
    return tmp_path


def test_csv_cut_off_mid_row_counts_the_last_row(mirror: Path) -> None:
    path = mirror / XSTEST / "xstest_prompts.csv"
    text = path.read_text(encoding="utf-8").rstrip("\n")
    # Keep the header and the first data rows, then half of the next one: an open quote.
    lines = text.split("\n")
    path.write_text("\n".join(lines[:4]) + '\n999,"Unfinished prompt about\n', encoding="utf-8")
    loader = get_loader(XSTEST)
    result = loader.load(mirror / XSTEST, seed=0)
    assert len(result.samples) == 3
    assert [(m.file, m.line) for m in result.malformed] == [("xstest_prompts.csv", 5)]
    assert "fields" in result.malformed[0].reason


def test_header_only_csv_is_an_error_not_an_empty_source(mirror: Path) -> None:
    path = mirror / XSTEST / "xstest_prompts.csv"
    path.write_text(path.read_text(encoding="utf-8").split("\n")[0] + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"source 'xstest' gave 0 usable rows.*header-only"):
        build_trace(TraceSpec(sources=(XSTEST,)), data_dir=mirror)


def test_bad_role_override_on_the_cli() -> None:
    fails_cleanly(["trace", "build", "-s", XSTEST, "--role", "xstest=train"], "--role")


def test_model_free_json_result_is_refused_by_read_result(tmp_path: Path) -> None:
    from gatebench.artifacts import read_result
    from gatebench.errors import SchemaError

    (tmp_path / "result.json").write_text(json.dumps({"schema_version": "1.0", "trace": {}}))
    with pytest.raises(SchemaError, match="lacks detector, operating_point, metrics, by_source, "):
        read_result(tmp_path)


@pytest.fixture
def model_dir(xstest_tfidf: tuple[Path, Path]) -> Path:
    return xstest_tfidf[0]


@pytest.mark.parametrize(
    ("lines", "needles"),
    [
        (b'{"text": "fine"}\n{"text": 3}\n', (":2:", 'a "text" string, got int')),
        (b'{"text": "fine"}\n{"text": "cut\n', (":2:", "invalid JSON", "column")),
        (b'{"text": "a"}\n\n{"text": "  "}\n', (":3:", "empty or whitespace")),
        (b'{"text": "caf\xe9"}\n', (":1:", "invalid UTF-8", "save the file as UTF-8")),
        (b"[1]\n", (":1:", "got list")),
        (b"\n\n", ("holds no text lines",)),
    ],
)
def test_detect_jsonl_names_the_line(
    tmp_path: Path, model_dir: Path, lines: bytes, needles: tuple[str, ...]
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(lines)
    fails_cleanly(["detect", str(model_dir), "--jsonl", str(path)], *needles)


def test_detect_refuses_empty_text_like_the_service(model_dir: Path) -> None:
    fails_cleanly(["detect", str(model_dir), "   "], "TEXT argument", "empty or whitespace")
    result = runner.invoke(app, ["detect", str(model_dir)], input=" \n")
    assert result.exit_code == 2 and "stdin" in result.output


def test_detect_scores_undecodable_bytes_from_stdin(model_dir: Path) -> None:
    result = runner.invoke(
        app, ["detect", str(model_dir)], input=b"a\xff ignore previous instructions"
    )
    assert result.exit_code == 0, result.output
    assert 0.0 <= json.loads(result.output.splitlines()[-1])["score"] <= 1.0


@pytest.mark.parametrize("command", ["score", "audit"])
def test_bulk_commands_name_a_missing_model_directory(tmp_path: Path, command: str) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "hi"}\n')
    fails_cleanly(
        [command, str(tmp_path / "nope"), str(src), "--out", str(tmp_path / "o")],
        "is not a gatebench model directory",
        "gatebench train",
    )
