"""Plain texts over HTTP with their position: a tool result or document is read as data."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from service_fixtures import SETTINGS, data_reader_model, line_reader_model

from gatebench.serve.client import GatebenchClient
from gatebench.serve.server import ServerThread
from position_reader import PLANTED


@pytest.fixture(scope="module")
def served() -> Iterator[ServerThread]:
    with ServerThread(data_reader_model(), SETTINGS) as running:
        yield running


def _post(server: ServerThread, payload: object) -> httpx.Response:
    headers = {"content-type": "application/json"}
    body = json.dumps(payload).encode()
    return httpx.post(server.url + "/v1/score", content=body, headers=headers, timeout=30)


def test_a_texts_position_reaches_the_detector(served: ServerThread) -> None:
    with GatebenchClient(served.url) as client:
        assert client.score(PLANTED)["decision"] == "allow"  # a user turn by default
        assert client.score(PLANTED, position="tool")["decision"] == "block"
        assert client.score(PLANTED, position="user")["decision"] == "allow"
        batch = client.score_batch([PLANTED] * 3, positions=["document", None, "user"])
        assert [r["decision"] for r in batch] == ["block", "allow", "allow"]
    # A long tool result is windowed, and every window keeps the text's position.
    long = "Shipping log line.\n" * 400 + PLANTED
    r = _post(served, {"texts": [long], "positions": ["tool"]}).json()["results"][0]
    assert r["decision"] == "block" and r["chunk"]["n_chunks"] > 1


def test_a_result_names_the_line_that_set_its_score_in_texts_and_conversations() -> None:
    long = "Shipping log line.\n" * 400 + PLANTED
    todo = PLANTED.splitlines()[1]
    with ServerThread(line_reader_model(), SETTINGS) as running:
        r = _post(running, {"texts": [long, long], "positions": ["tool", "user"]}).json()
        tool, user = r["results"]
        assert tool["stage"] == "segment" and tool["chunk"]["index"] > 0
        assert long[tool["segment"]["start"] : tool["segment"]["end"]] == todo
        assert tool["segment"]["text"] == todo
        assert "segment" not in user  # a user turn is not flagged, and names no line
        chat = [
            {"role": "user", "content": "Where is my order?"},
            {"role": "tool", "content": long},
        ]
        result = _post(running, {"messages": chat}).json()
    driver = result["driver"]
    assert driver["message"] == 1 and driver["segment"]["message"] == 1
    assert result["messages"][1]["segment"] == driver["segment"]
    assert "segment" not in result["messages"][0]
    assert long[driver["segment"]["start"] : driver["segment"]["end"]] == todo


def test_the_openapi_example_of_a_tool_result_is_scored_as_one(served: ServerThread) -> None:
    doc = httpx.get(served.url + "/openapi.json").json()
    body = doc["paths"]["/v1/score"]["post"]["requestBody"]["content"]["application/json"]
    shapes = {s["required"][0]: s for s in body["schema"]["oneOf"]}
    assert "position" in shapes["text"]["properties"]
    responses = doc["paths"]["/v1/score"]["post"]["responses"]["200"]["content"]
    assert "segment" in json.dumps(responses["application/json"]["schema"])
    assert "positions" in shapes["texts"]["properties"]
    example = body["examples"]["text_tool"]["value"]
    assert _post(served, example).json()["decision"] == "block"


@pytest.mark.parametrize(
    ("payload", "needle"),
    [
        ({"texts": ["a"], "position": "tool"}, '"position" applies to "text" only'),
        ({"text": "a", "positions": ["tool"]}, '"positions" applies to "texts" only'),
        ({"messages": [{"role": "user", "content": "a"}], "position": "tool"}, '"position"'),
        ({"text": "a", "scan": ["user"]}, '"scan" applies to "messages" and "conversations"'),
        ({"text": "a", "position": "inbox"}, "position is 'inbox', not a position; use one of"),
        ({"text": "a", "position": 3}, "position is int, not a position"),
        ({"texts": ["a", "b"], "positions": ["tool"]}, '"positions" has 1 entries for 2 texts'),
        ({"texts": ["a"], "positions": "tool"}, '"positions" must be a list'),
        ({"texts": ["a", "b"], "positions": [None, "x" * 500]}, "positions[1] is 'xxx"),
    ],
)
def test_bad_positions_are_refused_with_the_field_and_the_fix(
    served: ServerThread, payload: object, needle: str
) -> None:
    r = _post(served, payload)
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert needle in detail and len(detail) < 300
