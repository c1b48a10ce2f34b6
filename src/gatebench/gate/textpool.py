"""Per-text encoder calls spread over threads, each text's vector unchanged.

Both sentence encoders read one text per call, so that a vector never depends
on its batch-mates (:mod:`gatebench.gate.encoder`,
:mod:`gatebench.gate.multilingual`). Those calls are independent and their
heavy work (onnxruntime's graph, numpy's matrix products) runs outside the
GIL, so a batch's calls can run side by side on the process's cores: each
call still gets exactly the input it got alone, single-threaded inside, so
every vector is the one a sequential loop gives, byte for byte.

How many threads: ``GATEBENCH_ENCODER_THREADS`` when set; else the cores this
process may use, capped by ``OMP_NUM_THREADS`` when that is set. joblib's
and dask's worker processes set it to their share of the machine, so the
harness's parallel folds do not multiply their threads by the encoders'.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from functools import cache
from typing import Any, TypeVar

import numpy as np

from gatebench.errors import ConfigError
from gatebench.parallel import default_jobs

__all__ = [
    "THREADS_ENV",
    "Lane",
    "beside",
    "blas_single_threaded",
    "encode_rows",
    "encoder_threads",
]

T = TypeVar("T")

#: Environment variable that sets the encoders' thread count.
THREADS_ENV = "GATEBENCH_ENCODER_THREADS"


def _positive(raw: str, name: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{name}={raw!r} is not a positive whole number; set it to e.g. 1 or 2")
    return value


def encoder_threads() -> int:
    """Threads for a batch's encoder calls (see the module docstring for the rule)."""
    raw = os.environ.get(THREADS_ENV)
    if raw is not None and raw.strip():
        return _positive(raw.strip(), THREADS_ENV)
    threads = default_jobs()
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    if omp.isdigit() and int(omp) >= 1:
        threads = min(threads, int(omp))
    return threads


@contextmanager
def blas_single_threaded() -> Iterator[None]:
    """numpy's BLAS held at one thread for the duration, whatever callees do.

    A callee that limits BLAS itself saves and restores the count it found;
    under this context every such callee finds one, so one thread finishing
    cannot hand another, still running, the machine's full count.
    """
    with _controller().limit(limits=1, user_api="blas"):
        yield


@cache
def _controller() -> Any:
    """threadpoolctl's view of the loaded libraries, found once.

    Scanning them costs more than a short text's vector.
    """
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def encode_rows(
    texts: Sequence[str],
    encode_one: Callable[[str], np.ndarray],
    dims: int,
    *,
    threads: int | None = None,
) -> np.ndarray:
    """``(len(texts), dims)`` float32, row ``i`` being ``encode_one(texts[i])``.

    Parameters
    ----------
    texts : sequence of str
        The batch.
    encode_one : callable
        One text to its vector; must be safe to call from several threads.
    dims : int
        Vector width.
    threads : int, optional
        Defaults to :func:`encoder_threads`; one, or a one-text batch, runs
        in the calling thread.
    """
    out = np.empty((len(texts), dims), dtype=np.float32)
    n = min(threads or encoder_threads(), len(texts))
    if n <= 1:
        for i, text in enumerate(texts):
            out[i] = encode_one(text)
        return out

    def fill(i: int) -> None:
        out[i] = encode_one(texts[i])

    with ThreadPoolExecutor(max_workers=n) as pool:
        # list() re-raises the first failure here, in the caller's thread.
        list(pool.map(fill, range(len(texts))))
    return out


class Lane:
    """Work run in order on one thread beside the caller's, or at once in the caller's.

    Used as a context manager: :meth:`submit` queues ``work`` and returns the
    getter of its result (which re-raises its exception), and the context
    does not exit before every queued piece of work is done. Threaded,
    numpy's BLAS is held at one thread from the first :meth:`submit` on
    (:func:`blas_single_threaded`), so that no matrix product's thread count
    depends on which side ends first. With ``threaded=False`` or one encoder
    thread (:func:`encoder_threads`), ``work`` runs at once, in the caller's
    thread. A Lane nothing is submitted to starts no thread, so a caller can
    open a threaded one before knowing whether there will be work to overlap.
    """

    def __init__(self, *, threaded: bool = True) -> None:
        self.threaded = bool(threaded)
        self._stack = ExitStack()
        self._pool: ThreadPoolExecutor | None = None

    def __enter__(self) -> Lane:
        self.threaded = self.threaded and encoder_threads() > 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool = None
        self._stack.close()

    def submit(self, work: Callable[[], T]) -> Callable[[], T]:
        """Queue ``work``; the returned callable gives its result once it is done."""
        if self.threaded and self._pool is None:
            self._stack.enter_context(blas_single_threaded())
            self._pool = self._stack.enter_context(ThreadPoolExecutor(max_workers=1))
        if self._pool is not None:
            return self._pool.submit(work).result
        value = work()
        return lambda: value


@contextmanager
def beside(work: Callable[[], T], *, threaded: bool = True) -> Iterator[Callable[[], T]]:
    """One piece of ``work`` on a :class:`Lane`: yields the getter of its result."""
    with Lane(threaded=threaded) as lane:
        yield lane.submit(work)
