"""Where independent units of work run: in this process, local worker processes, or dask.

Every task carries its own seed, so an :class:`Executor` can only change where
and in which order tasks run, never their results. One executor is built from
the command line or the config and passed down to cross-validation, the
diagnostics' refits, the bootstrap and bulk scoring, so that the choice is
made once and there is one dask set-up.

Every task runs with the native thread pools (BLAS, OpenMP) held at one
thread (:func:`one_native_thread`): a matrix product's sums are ordered by its
thread count, and a fit grows those last bits into other trees, so without
the hold a fold fitted in a worker process would differ from the same fold
fitted here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from gatebench.errors import ConfigError

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["BACKENDS", "SCHEDULER_ENV", "Executor", "default_jobs", "one_native_thread"]

T = TypeVar("T")
R = TypeVar("R")

BACKENDS = ("local", "sequential", "dask")
#: Where a dask scheduler is found when none is given.
SCHEDULER_ENV = "GATEBENCH_SCHEDULER"
#: Workers of the local dask cluster started when no scheduler is given.
LOCAL_CLUSTER_WORKERS = 2


def default_jobs() -> int:
    """Worker processes for the local backend: one per available core."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


@contextmanager
def one_native_thread() -> Iterator[None]:
    """Every native thread pool loaded in this process held at one thread, then restored.

    OpenBLAS splits a matrix product's sums by its thread count, so a model
    fitted with two threads differs in the last bits from one fitted with
    one, and boosting and early stopping grow those bits into other trees
    (on a small trace, fold scores moved by up to 0.1). One thread everywhere
    makes a result independent of the backend, ``--jobs`` and the machine's
    core count. The libraries are looked up on each entry (about 2 ms), so
    one loaded since the last call is held too.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


def _on_one_thread(fn: Callable[..., R], task: T, **shared: Any) -> R:
    with one_native_thread():
        return fn(task, **shared)


@dataclass(frozen=True)
class Executor:
    """How to run independent tasks.

    Parameters
    ----------
    backend : {"local", "sequential", "dask"}
        ``local`` uses joblib worker processes; ``sequential`` runs in this
        process (debugging, tiny inputs); ``dask`` submits to a
        dask.distributed scheduler.
    n_jobs : int, optional
        Local worker processes (default: one per core), or the size of the
        local dask cluster started when no scheduler is given.
    scheduler : str, optional
        ``tcp://host:port`` of a dask scheduler; else ``$GATEBENCH_SCHEDULER``;
        else a local cluster.
    """

    backend: str = "local"
    n_jobs: int | None = None
    scheduler: str | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ConfigError(
                f"--backend {self.backend!r} is unknown; choose one of {', '.join(BACKENDS)}"
            )
        if self.n_jobs is not None and (isinstance(self.n_jobs, bool) or self.n_jobs < 1):
            raise ConfigError(f"--jobs {self.n_jobs!r} is invalid; use a positive number")

    @classmethod
    def sequential(cls) -> Executor:
        """Everything in this process, in order."""
        return cls("sequential")

    @property
    def is_dask(self) -> bool:
        """True when tasks go to a dask scheduler."""
        return self.backend == "dask"

    @property
    def jobs(self) -> int:
        """Local worker processes this executor uses (1 when sequential)."""
        return 1 if self.backend == "sequential" else (self.n_jobs or default_jobs())

    @property
    def address(self) -> str | None:
        """The dask scheduler's address, or None for a local cluster."""
        return self.scheduler or os.environ.get(SCHEDULER_ENV) or None

    def map(
        self, fn: Callable[..., R], tasks: Sequence[T], *, shared: dict[str, Any] | None = None
    ) -> Iterator[R]:
        """``fn(task, **shared)`` for each task, yielded as they finish.

        Each call runs under :func:`one_native_thread`, wherever it runs, so
        the backend and ``--jobs`` change where tasks run, never their results.

        Parameters
        ----------
        fn : callable
            A module-level function (it must pickle for process backends).
        tasks : sequence
            One argument per call.
        shared : dict, optional
            Keyword arguments passed to every call (large arrays go here once;
            dask broadcasts them to every worker).
        """
        shared = shared or {}
        fn = partial(_on_one_thread, fn)
        if (
            self.backend == "sequential"
            or len(tasks) <= 1
            or (self.backend == "local" and self.jobs == 1)
        ):
            yield from (fn(t, **shared) for t in tasks)
        elif self.backend == "local":
            from joblib import Parallel, delayed

            parallel = Parallel(n_jobs=self.jobs, backend="loky", return_as="generator_unordered")
            yield from parallel(delayed(fn)(t, **shared) for t in tasks)
        else:
            yield from self._map_dask(fn, tasks, shared)

    def _map_dask(
        self, fn: Callable[..., R], tasks: Iterable[T], shared: dict[str, Any]
    ) -> Iterator[R]:
        from distributed import as_completed

        with self.client() as client:
            scattered = {k: client.scatter(v, broadcast=True) for k, v in shared.items()}
            futures = [client.submit(fn, t, pure=False, **scattered) for t in tasks]
            for future in as_completed(futures):
                yield future.result()

    @contextmanager
    def client(self) -> Iterator[Client]:
        """A dask client for this executor's scheduler (or a local cluster), closed after use."""
        try:
            from distributed import Client, LocalCluster
        except ImportError as exc:
            raise ConfigError(
                "backend='dask' needs dask.distributed: pip install 'gatebench[dask]'"
            ) from exc
        address = self.address
        cluster = None
        if address is None:
            cluster = LocalCluster(
                n_workers=self.n_jobs or LOCAL_CLUSTER_WORKERS,
                threads_per_worker=1,
                dashboard_address=None,
            )
        try:
            client = Client(address or cluster)
        except (OSError, TimeoutError) as exc:
            if cluster is not None:
                cluster.close()
            raise ConfigError(
                f"cannot reach the dask scheduler {address!r} ({exc}); start it with "
                f"`dask scheduler` or fix --scheduler / ${SCHEDULER_ENV}"
            ) from exc
        try:
            yield client
        finally:
            client.close()
            if cluster is not None:
                cluster.close()

    def describe(self) -> str:
        """One line for logs and summaries, e.g. ``dask tcp://10.0.0.5:8786``."""
        if self.is_dask:
            return f"dask {self.address or 'local cluster'}"
        return "sequential" if self.backend == "sequential" else f"local ({self.jobs} processes)"
