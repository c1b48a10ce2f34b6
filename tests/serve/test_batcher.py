"""Micro-batching: concurrent requests share scoring calls and keep their own results."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from gatebench.serve.batcher import MicroBatcher


class SlowScorer:
    """Records every call; each call takes 20 ms so that requests queue behind it."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.fail_on = fail_on
        self.lock = threading.Lock()

    def __call__(self, texts: list[str]) -> list[dict[str, Any]]:
        with self.lock:
            self.calls.append(list(texts))
        time.sleep(0.02)
        if self.fail_on is not None and self.fail_on in texts:
            raise RuntimeError(f"scorer failed on {self.fail_on!r}")
        return [{"score": float(len(t)), "text": t} for t in texts]


def _gather(batcher: MicroBatcher, requests: list[list[str]]) -> list[Any]:
    async def main() -> list[Any]:
        try:
            return await asyncio.gather(
                *(batcher.score(r) for r in requests), return_exceptions=True
            )
        finally:
            await batcher.aclose()

    return asyncio.run(main())


def test_concurrent_requests_are_coalesced_in_order() -> None:
    scorer = SlowScorer()
    batcher = MicroBatcher(scorer, max_texts=8, runners=1)
    requests = [[f"r{i}-{j}" for j in range(1 + i % 3)] for i in range(12)]
    out = _gather(batcher, requests)
    # every request gets exactly its own texts back, in order
    for req, res in zip(requests, out, strict=True):
        assert [r["text"] for r in res] == req
        assert all(r["batched_texts"] >= len(req) for r in res)
    # requests that queued together share calls, within the limit
    assert len(scorer.calls) < len(requests)
    assert all(len(c) <= 8 for c in scorer.calls)
    assert sorted(t for c in scorer.calls for t in c) == sorted(t for r in requests for t in r)
    assert batcher.requests == len(requests) and batcher.calls == len(scorer.calls)


def test_a_request_larger_than_the_limit_is_scored_alone() -> None:
    scorer = SlowScorer()
    batcher = MicroBatcher(scorer, max_texts=2, runners=1)
    big = [f"b{i}" for i in range(5)]
    out = _gather(batcher, [["a"], big, ["c"]])
    assert [r["text"] for r in out[1]] == big
    assert big in scorer.calls


def test_limit_of_one_turns_coalescing_off() -> None:
    scorer = SlowScorer()
    out = _gather(MicroBatcher(scorer, max_texts=1, runners=2), [[str(i)] for i in range(6)])
    assert len(scorer.calls) == 6 and [r[0]["text"] for r in out] == [str(i) for i in range(6)]


def test_scorer_error_reaches_the_requests_of_its_call_and_the_runner_survives() -> None:
    scorer = SlowScorer(fail_on="bad")
    batcher = MicroBatcher(scorer, max_texts=64, runners=1)

    async def main() -> tuple[list[Any], list[Any]]:
        try:
            together = await asyncio.gather(
                *(batcher.score(r) for r in (["x"], ["bad"], ["y"])), return_exceptions=True
            )
            later = await batcher.score(["z"])
            return together, later
        finally:
            await batcher.aclose()

    together, later = asyncio.run(main())
    assert len(scorer.calls[0]) == 3  # one call held the three requests
    assert all(isinstance(o, RuntimeError) and "failed on 'bad'" in str(o) for o in together)
    assert later[0]["text"] == "z"


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="max_texts=0"):
        MicroBatcher(SlowScorer(), max_texts=0, runners=1)


def test_positions_travel_with_their_texts_and_plain_texts_are_user_turns() -> None:
    calls: list[tuple[list[str], list[str] | None]] = []

    def scorer(texts: list[str], positions: list[str] | None = None) -> list[dict[str, Any]]:
        calls.append((list(texts), positions))
        time.sleep(0.02)
        where = positions or [None] * len(texts)
        return [{"text": t, "position": p} for t, p in zip(texts, where, strict=True)]

    batcher = MicroBatcher(scorer, max_texts=16, runners=1)

    async def main() -> list[Any]:
        try:
            first = asyncio.ensure_future(batcher.score(["warm"]))
            await asyncio.sleep(0.005)  # the runner is busy: the next two queue together
            rest = await asyncio.gather(
                batcher.score(["a", "b"]), batcher.score(["t", "d"], ["tool", "document"])
            )
            return [await first, *rest]
        finally:
            await batcher.aclose()

    warm, plain, placed = asyncio.run(main())
    # A batch without positions is scored as before; one with them gets them all.
    assert calls[0] == (["warm"], None) and warm[0]["position"] is None
    assert calls[1] == (["a", "b", "t", "d"], ["user", "user", "tool", "document"])
    assert [r["position"] for r in plain] == ["user", "user"]
    assert [(r["text"], r["position"]) for r in placed] == [("t", "tool"), ("d", "document")]
