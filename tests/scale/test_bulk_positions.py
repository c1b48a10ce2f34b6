"""Positions in `gatebench score`: a tool result in a file is read as the service reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from cli_checks import fails_cleanly
from gatebench.bulk import score as bulk_score
from gatebench.bulk import score_file
from gatebench.cli import app
from gatebench.errors import DataError
from gatebench.modeldir import LoadedModel
from position_reader import PLANTED, DataReader

runner = CliRunner()


@pytest.fixture
def reader(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Path, DataReader]:
    """A model directory whose loading is patched to give the position-reading detector."""
    det = DataReader()
    loaded = LoadedModel(det, {"threshold": 0.5, "detector": det.name})  # type: ignore[arg-type]
    monkeypatch.setattr(bulk_score, "_model", lambda _: loaded)
    return tmp_path / "model", det


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_each_text_row_is_scored_at_its_position(
    reader: tuple[Path, DataReader], tmp_path: Path
) -> None:
    model_dir, _ = reader
    rows: list[dict[str, object]] = [
        {"id": "plain", "text": PLANTED},
        {"id": "tool", "text": PLANTED, "position": "tool"},
        {"id": "null", "text": PLANTED, "position": None},
        {"id": "doc", "text": PLANTED, "position": "document"},
        {"id": "user", "text": PLANTED, "position": "user"},
        {"id": "chat", "messages": [{"role": "tool", "content": PLANTED}]},
        {"id": "inbox", "text": PLANTED, "position": "inbox"},
        {"id": "number", "text": PLANTED, "position": 3},
        {"id": "chat-placed", "messages": [{"role": "user", "content": "hi"}], "position": "tool"},
    ]
    out = tmp_path / "out.parquet"
    summary = score_file(model_dir, _jsonl(tmp_path / "in.jsonl", rows), out, batch_rows=4)
    table = pq.read_table(out).to_pandas()
    assert table["flagged"].tolist() == [False, True, False, True, False, True, None, None, None]
    assert table["rejected"].tolist()[6:] == ["bad_position"] * 3
    assert summary["rejected_by_reason"]["bad_position"] == 3
    assert summary["text_positions"] == {"user": 3, "tool": 1, "document": 1}
    assert summary["input"]["position_field"] is None
    assert summary["input"]["positions_read_from"] == "position"
    assert [r["id"] for r in summary["rejected_rows"]] == ["inbox", "number", "chat-placed"]


def test_plain_traffic_reaches_the_detector_without_positions(
    reader: tuple[Path, DataReader], tmp_path: Path
) -> None:
    # A detector that takes no positions must see exactly the calls it saw before.
    model_dir, det = reader
    rows = [{"text": PLANTED}, {"text": "What is the capital of France?", "position": None}]
    summary = score_file(model_dir, _jsonl(tmp_path / "in.jsonl", rows), tmp_path / "o.parquet")
    assert det.calls == [None]
    assert summary["flagged"] == 0 and summary["text_positions"]["user"] == 2


def test_parquet_position_column_and_a_named_field(
    reader: tuple[Path, DataReader], tmp_path: Path
) -> None:
    model_dir, _ = reader
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"text": [PLANTED] * 3, "where": ["tool", None, "document"]}), src)
    out = tmp_path / "out.parquet"
    summary = score_file(model_dir, src, out, position_field="where")
    assert pq.read_table(out).column("flagged").to_pylist() == [True, False, True]
    assert summary["text_positions"] == {"user": 1, "tool": 1, "document": 1}
    # Without --position-field the column is not `position`, so every row is a user turn.
    plain = score_file(model_dir, src, tmp_path / "plain.parquet")
    assert plain["flagged"] == 0 and plain["input"]["positions_read_from"] is None
    assert summary["input"]["positions_read_from"] == "where"


def test_a_long_tool_result_is_read_as_data_in_every_window(
    reader: tuple[Path, DataReader], tmp_path: Path
) -> None:
    model_dir, det = reader
    long_text = "Shipping notes. " * 400 + PLANTED  # several windows, the to-do in the last
    rows = [{"text": long_text, "position": "tool"}]
    out = tmp_path / "out.parquet"
    score_file(model_dir, _jsonl(tmp_path / "in.jsonl", rows), out)
    got = pq.read_table(out).to_pylist()[0]
    assert got["n_chunks"] > 1 and got["flagged"] is True
    assert det.calls[-1] == ["tool"] * got["n_chunks"]


def test_bad_position_columns_stop_with_the_file_and_the_fix(
    reader: tuple[Path, DataReader], tmp_path: Path
) -> None:
    model_dir, _ = reader
    numbers = tmp_path / "numbers.parquet"
    pq.write_table(pa.table({"text": ["a", "b"], "position": [1, 2]}), numbers)
    with pytest.raises(DataError, match=r"numbers\.parquet: column 'position' has type int64"):
        score_file(model_dir, numbers, tmp_path / "o.parquet")
    missing = tmp_path / "missing.parquet"
    pq.write_table(pa.table({"text": ["a"]}), missing)
    with pytest.raises(DataError, match=r"no column 'where' for --position-field"):
        score_file(model_dir, missing, tmp_path / "o.parquet", position_field="where")


def test_cli_score_reads_positions_and_reports_them(
    reader: tuple[Path, DataReader], tmp_path: Path
) -> None:
    model_dir, _ = reader
    rows = [{"text": PLANTED, "kind": "tool"}, {"text": PLANTED}]
    src = _jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.parquet"
    args = ["score", str(model_dir), str(src), "--out", str(out), "--position-field", "kind"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "text rows by position: user 1, tool 1, document 0" in result.output
    assert pq.read_table(out).column("flagged").to_pylist() == [True, False]
    fails_cleanly(
        ["score", str(model_dir), str(tmp_path / "no.parquet"), "--out", str(out)],
        "no.parquet",
    )


def test_assume_position_places_the_rows_without_one(
    reader: tuple[Path, DataReader], tmp_path: Path
) -> None:
    # A file of retrieved documents is read as documents without being rewritten;
    # a row's own position and a conversation's roles still place it.
    model_dir, _ = reader
    rows: list[dict[str, object]] = [
        {"id": "plain", "text": PLANTED},
        {"id": "null", "text": PLANTED, "position": None},
        {"id": "user", "text": PLANTED, "position": "user"},
        {"id": "chat", "messages": [{"role": "user", "content": PLANTED}]},
    ]
    src = _jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.parquet"
    summary = score_file(model_dir, src, out, assume_position="document")
    assert pq.read_table(out).column("flagged").to_pylist() == [True, True, False, False]
    assert summary["text_positions"] == {"user": 1, "tool": 0, "document": 2}
    assert summary["input"]["assume_position"] == "document"
    parquet = tmp_path / "in.parquet"
    pq.write_table(pa.table({"text": [PLANTED, PLANTED], "position": [None, "user"]}), parquet)
    got = score_file(model_dir, parquet, tmp_path / "p.parquet", assume_position="tool")
    assert got["text_positions"] == {"user": 1, "tool": 1, "document": 0}
    args = ["score", str(model_dir), str(src), "--out", str(tmp_path / "cli.parquet")]
    result = runner.invoke(app, [*args, "--assume-position", "tool"])
    assert result.exit_code == 0, result.output
    assert "text rows by position: user 1, tool 2, document 0" in result.output
    fails_cleanly([*args, "--assume-position", "inbox"], "--assume-position inbox", "'document'")
