"""Loaders record where their texts sit in an agent's input; checked on the real mirror."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from loader_helpers import _mirror

from gatebench.data import get_loader
from gatebench.data.loaders._base import RowSink
from gatebench.errors import DataError
from gatebench.types import Position


@pytest.mark.parametrize(
    ("name", "position", "attack", "benign"),
    [
        # Clean and injected alike: the position is where the text sits, not whether it attacks.
        ("bipia", "document", 250, 1200),
        ("injecagent", "tool", 1054, 17),
        ("agentdojo-environments", "tool", 120, 149),
    ],
)
def test_every_row_of_an_agent_source_has_its_position(
    name: str, position: str, attack: int, benign: int, data_dir: Path
) -> None:
    result = _mirror(name, data_dir)
    got = Counter((s.position, s.label) for s in result.samples)
    assert got == {(position, 1): attack, (position, 0): benign}
    # The card says so, and its version moved with the output.
    card = get_loader(name).card
    assert f"Position: {position}" in card.construction
    assert card.version == 2


@pytest.mark.parametrize("name", ["xstest", "deepset-prompt-injections", "advbench"])
def test_other_sources_leave_it_to_the_user_turn_default(name: str, data_dir: Path) -> None:
    result = _mirror(name, data_dir)
    assert result.samples and {s.position for s in result.samples} == {None}


def test_a_row_can_override_the_sinks_position(tmp_path: Path) -> None:
    sink = RowSink("mixed", tmp_path, position=Position.TOOL)
    path = tmp_path / "rows.jsonl"
    a = sink.add("a tool result", 0, path=path, line=1, sample_id="0")
    b = sink.add("a pasted page", 1, path=path, line=2, sample_id="1", position="document")
    plain = RowSink("plain", tmp_path).add("hello", 0, path=path, line=1, sample_id="0")
    assert a is not None and b is not None and plain is not None
    # Stored as plain strings, so a frame column compares equal to "tool".
    assert (a.position, b.position, plain.position) == ("tool", "document", None)
    assert type(a.position) is str


def test_an_unknown_position_names_source_row_and_value(tmp_path: Path) -> None:
    sink = RowSink("mixed", tmp_path)
    with pytest.raises(DataError) as err:
        sink.add("text", 1, path=tmp_path / "data" / "rows.jsonl", line=7, sample_id="6",
                 position="email")  # fmt: skip
    message = str(err.value)
    assert "source 'mixed'" in message and "data/rows.jsonl row 7" in message
    assert "position 'email'" in message and "['user', 'tool', 'document']" in message
    assert not sink.result.samples
