"""Run one function over a stream of partitions, in order, with bounded memory.

At most ``max_in_flight`` partitions are submitted and not yet collected, so
the driver never reads far ahead of the workers; results come back in input
order (a slow partition holds back the ones behind it, never reorders them).
"""

from __future__ import annotations

import multiprocessing
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Protocol, TypeVar

from gatebench.errors import ConfigError
from gatebench.parallel import Executor as GatebenchExecutor

__all__ = ["Pool", "gatebench_version", "open_pool"]

T = TypeVar("T")
R = TypeVar("R")


class _Future(Protocol):
    def result(self) -> Any: ...


@dataclass
class Pool:
    """Where partitions run: inline, in local worker processes, or on dask.

    Attributes
    ----------
    backend : str
        ``local`` or ``dask``.
    workers : int
        Parallel workers (1 when inline).
    description : str
        One line for the summary, e.g. ``dask tcp://10.0.0.5:8786 (8 workers)``.
    """

    backend: str
    workers: int
    description: str
    _submit: Callable[..., _Future] | None = None
    wait_s: float = 0.0

    def imap(
        self,
        fn: Callable[..., R],
        items: Iterable[T],
        *,
        max_in_flight: int | None = None,
        **kwargs: Any,
    ) -> Iterator[R]:
        """``fn(item, **kwargs)`` for each item, yielded in input order.

        Parameters
        ----------
        fn : callable
            A module-level function (it is pickled for worker processes).
        items : iterable
            Consumed lazily: only ``max_in_flight`` items are held at a time.
        max_in_flight : int, optional
            Submitted but uncollected items; default twice the workers.
        **kwargs
            Passed to every call.
        """
        if self._submit is None:
            yield from (fn(item, **kwargs) for item in items)
            return
        limit = max_in_flight or 2 * self.workers
        pending: deque[_Future] = deque()
        for item in items:
            pending.append(self._submit(fn, item, **kwargs))
            while len(pending) >= limit:
                yield self._collect(pending.popleft())
        while pending:
            yield self._collect(pending.popleft())

    def _collect(self, future: _Future) -> Any:
        """The future's result; time spent blocked on it goes to ``wait_s``."""
        t0 = time.perf_counter()
        try:
            return future.result()
        finally:
            self.wait_s += time.perf_counter() - t0


def gatebench_version() -> str:
    """The installed gatebench version, which the driver and every dask worker must share."""
    try:
        return version("gatebench")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


@contextmanager
def open_pool(
    executor: GatebenchExecutor,
    *,
    worker_version: Callable[[], str] = gatebench_version,
) -> Iterator[Pool]:
    """Open the workers for a bulk run and close them afterwards.

    Parameters
    ----------
    executor : gatebench.parallel.Executor
        ``local`` runs in this process (``n_jobs`` unset or 1) or in
        ``n_jobs`` worker processes; ``sequential`` runs in this process;
        ``dask`` submits to the executor's scheduler or local cluster.
    worker_version : callable
        A module-level function that every dask worker runs before the first
        partition; it returns the gatebench version (a worker that differs from
        the driver is refused). Pass one defined in the module of the function
        the workers will run: unpickling it imports that module on each worker
        up front, so the first partition does not pay for the import.
    """
    jobs = executor.n_jobs
    if not executor.is_dask:
        if executor.backend == "sequential" or not jobs or jobs == 1:
            yield Pool("local", 1, "local (in process)")
            return
        # spawn, not fork: the driver may already run pyarrow/BLAS threads.
        processes: Executor = ProcessPoolExecutor(
            max_workers=jobs, mp_context=multiprocessing.get_context("spawn")
        )
        try:
            yield Pool("local", jobs, f"local ({jobs} processes)", _submit_to(processes))
        finally:
            processes.shutdown(wait=True, cancel_futures=True)
        return
    with executor.client() as client:
        _check_workers(client, worker_version)
        workers = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())

        def submit(fn: Callable[..., Any], item: Any, **kwargs: Any) -> Any:
            return client.submit(fn, item, pure=False, **kwargs)

        yield Pool("dask", max(workers, 1), f"{executor.describe()} ({workers} workers)", submit)


def _submit_to(executor: Executor) -> Callable[..., Future[Any]]:
    def submit(fn: Callable[..., Any], item: Any, **kwargs: Any) -> Future[Any]:
        return executor.submit(fn, item, **kwargs)

    return submit


def _check_workers(client: Any, worker_version: Callable[[], str]) -> None:
    """Warm every worker up and refuse workers running another gatebench version."""
    here = worker_version()
    try:
        versions = client.run(worker_version)
    except ImportError as exc:
        raise ConfigError(
            f"a dask worker cannot import gatebench ({exc}); install the same gatebench "
            f"({here}) on every worker"
        ) from exc
    other = {w: v for w, v in versions.items() if v != here}
    if other:
        raise ConfigError(
            f"dask workers run another gatebench version ({other}); this driver runs {here}. "
            "Install the same version everywhere"
        )
