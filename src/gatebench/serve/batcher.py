"""Coalesce concurrent score requests into one scoring call (adaptive micro-batching).

A request never waits for company: a scoring runner takes whatever requests
are queued the moment it is free. At low load every request is scored alone,
as it arrives; under load the requests that queued while the previous call
ran are scored together. Gate's per-call overhead (sparse-matrix
construction, LightGBM and ONNX calls, Python dispatch) is then paid once per
call instead of once per request, which is where the service's throughput at
high concurrency comes from.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

__all__ = ["MicroBatcher"]

Results = list[dict[str, Any]]
#: A waiting request: its texts, their positions (None: user turns), its future.
Pending = tuple[list[str], list[str] | None, "asyncio.Future[Results]"]


class MicroBatcher:
    """Queue of pending requests served by a fixed number of scoring runners.

    Parameters
    ----------
    score : callable
        ``score(texts) -> results``, one result dict per text, in order
        (:meth:`gatebench.serve.model.ServedModel.score_details`). Called in a
        worker thread, as ``score(texts, positions)`` when a request in the
        batch gave its texts' positions (the others' texts are user turns).
    max_texts : int
        Most texts per scoring call. A single request larger than this is
        still scored, alone; 1 turns coalescing off.
    runners : int
        Scoring calls in flight at once (threads used).
    """

    def __init__(self, score: Callable[..., Results], *, max_texts: int, runners: int):
        if max_texts < 1 or runners < 1:
            raise ValueError(f"max_texts={max_texts} and runners={runners} must be >= 1")
        self._score = score
        self.max_texts = max_texts
        self.runners = runners
        self._pending: deque[Pending] = deque()
        self._ready: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.calls = 0
        self.requests = 0

    async def score(self, texts: list[str], positions: list[str] | None = None) -> Results:
        """Score one request's texts, possibly together with other requests'.

        ``positions``: each text's position (see :class:`~gatebench.types.Position`),
        for a detector that reads them; None, user turns.
        """
        self._start()
        assert self._ready is not None
        future: asyncio.Future[Results] = asyncio.get_running_loop().create_future()
        self._pending.append((texts, positions, future))
        self._ready.set()
        return await future

    def _start(self) -> None:
        # Runners live in the server's event loop, which exists only once the
        # first request arrives (the app is built before the loop starts).
        if not self._tasks:
            self._ready = asyncio.Event()
            self._tasks = [asyncio.create_task(self._run()) for _ in range(self.runners)]

    def _take(self) -> list[Pending]:
        batch = [self._pending.popleft()]
        n = len(batch[0][0])
        while self._pending and n + len(self._pending[0][0]) <= self.max_texts:
            item = self._pending.popleft()
            batch.append(item)
            n += len(item[0])
        return batch

    async def _run(self) -> None:
        assert self._ready is not None
        while True:
            while not self._pending:
                self._ready.clear()
                await self._ready.wait()
            # A client that went away leaves a cancelled future: skip its texts.
            batch = [item for item in self._take() if not item[2].done()]
            if not batch:
                continue
            texts = [t for item_texts, _, _ in batch for t in item_texts]
            call = functools.partial(self._score, texts)
            if any(where is not None for _, where, _ in batch):
                positions = [p for t, where, _ in batch for p in (where or ["user"] * len(t))]
                call = functools.partial(self._score, texts, positions)
            self.calls += 1
            self.requests += len(batch)
            try:
                # One call per runner at a time: at most ``runners`` scoring threads.
                results = await anyio.to_thread.run_sync(call)
            except Exception as exc:  # each waiting request gets the scorer's error
                for _, _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            k = 0
            for item_texts, _, future in batch:
                part = results[k : k + len(item_texts)]
                k += len(item_texts)
                if not future.done():
                    for r in part:
                        r["batched_texts"] = len(texts)
                    future.set_result(part)

    async def aclose(self) -> None:
        """Stop the runners (after the server has finished its requests)."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
