"""`gatebench detect` and `api.detect` with positions: a tool result is read as data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from service_fixtures import data_reader_model
from typer.testing import CliRunner

from cli_checks import fails_cleanly
from gatebench import api
from gatebench.cli import app
from gatebench.conversation import parse_conversation
from gatebench.errors import ConfigError
from position_reader import PLANTED

runner = CliRunner()


@pytest.fixture
def reader_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A model directory whose model reads positions (loading it is patched)."""
    monkeypatch.setattr(api, "served_model", lambda _: data_reader_model())
    return tmp_path


def _decisions(output: str) -> list[str]:
    return [json.loads(line)["decision"] for line in output.splitlines()]


def test_api_detect_passes_each_texts_position(reader_dir: Path) -> None:
    chat = parse_conversation([{"role": "tool", "content": PLANTED}])
    got = api.detect(reader_dir, [PLANTED, chat, PLANTED], positions=["tool", None, None])
    assert [r["decision"] for r in got] == ["block", "block", "allow"]
    assert [r["decision"] for r in api.detect(reader_dir, [PLANTED])] == ["allow"]
    with pytest.raises(ConfigError, match=r"positions\[1\] is 'tool' for a conversation"):
        api.detect(reader_dir, [PLANTED, chat], positions=[None, "tool"])
    with pytest.raises(ConfigError, match="got 1 for 2 inputs"):
        api.detect(reader_dir, [PLANTED, PLANTED], positions=["tool"])
    with pytest.raises(ConfigError, match=r"positions\[0\]: position 'inbox' is not one of"):
        api.detect(reader_dir, [PLANTED], positions=["inbox"])


def test_detect_takes_a_position_for_text_and_for_jsonl_lines(
    reader_dir: Path, tmp_path: Path
) -> None:
    one = runner.invoke(app, ["detect", str(reader_dir), PLANTED, "--position", "document"])
    assert one.exit_code == 0, one.output
    assert _decisions(one.output) == ["block"]
    assert _decisions(runner.invoke(app, ["detect", str(reader_dir), PLANTED]).output) == ["allow"]
    rows = [
        {"text": PLANTED},
        {"text": PLANTED, "position": "tool"},
        {"text": PLANTED, "position": None},
        {"messages": [{"role": "tool", "content": PLANTED}]},
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    plain = runner.invoke(app, ["detect", str(reader_dir), "--jsonl", str(src)])
    assert _decisions(plain.output) == ["allow", "block", "allow", "block"]
    # --position is every text line's default; a line's own position wins.
    as_tool = runner.invoke(
        app, ["detect", str(reader_dir), "--jsonl", str(src), "--position", "tool"]
    )
    assert _decisions(as_tool.output) == ["block", "block", "allow", "block"]


@pytest.mark.parametrize(
    ("args", "line", "needles"),
    [
        (["--position", "inbox"], None, ("--position: position 'inbox' is not one of",)),
        ([], {"text": "a", "position": "inbox"}, (":1:", "position 'inbox' is not one of")),
        (
            [],
            {"messages": [{"role": "user", "content": "a"}], "position": "tool"},
            (":1:", '"position" is for a "text" line'),
        ),
    ],
)
def test_detect_names_a_bad_position(
    reader_dir: Path, tmp_path: Path, args: list[str], line: object, needles: tuple[str, ...]
) -> None:
    cmd = ["detect", str(reader_dir), *args]
    if line is None:
        cmd.append("some text")
    else:
        src = tmp_path / "bad.jsonl"
        src.write_text(json.dumps(line) + "\n", encoding="utf-8")
        cmd += ["--jsonl", str(src)]
    fails_cleanly(cmd, *needles)
