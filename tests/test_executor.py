"""The executor: one object for where tasks run, whose choice never changes a result."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from gatebench.errors import ConfigError
from gatebench.parallel import SCHEDULER_ENV, Executor


def _square(x: int, *, offset: int = 0) -> int:
    return x * x + offset


def _native_threads(_: int) -> int:
    return max(pool["num_threads"] for pool in threadpool_info())


def _gram(seed: int) -> bytes:
    x = np.random.default_rng(seed).normal(size=(6000, 256)).astype(np.float32)
    return (x.T @ x).tobytes()


@pytest.mark.parametrize("executor", [Executor.sequential(), Executor("local", 2)])
def test_map_gives_every_result_whatever_the_backend(executor: Executor) -> None:
    got = sorted(executor.map(_square, list(range(7)), shared={"offset": 1}))
    assert got == [x * x + 1 for x in range(7)]


@pytest.mark.parametrize(
    "executor", [Executor.sequential(), Executor("local", 1), Executor("local", 2)]
)
def test_every_task_runs_on_one_native_thread_and_the_count_comes_back(
    executor: Executor,
) -> None:
    with threadpool_limits(limits=2):
        before = _native_threads(0)
        assert set(executor.map(_native_threads, [0, 1, 2])) == {1}
        assert _native_threads(0) == before


def test_a_tasks_matrix_product_does_not_depend_on_the_callers_thread_count() -> None:
    # OpenBLAS orders a product's sums by its thread count; held at one, a
    # task gives the bytes a one-threaded caller gets, whatever the caller has.
    with threadpool_limits(limits=1):
        alone = _gram(3)
    with threadpool_limits(limits=2):
        assert list(Executor.sequential().map(_gram, [3])) == [alone]


def test_unknown_backend_and_bad_jobs_are_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError, match="--backend 'spark' is unknown; choose one of local"):
        Executor("spark")
    for jobs in (0, -1, True):
        with pytest.raises(ConfigError, match="--jobs"):
            Executor("local", jobs)


def test_jobs_and_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SCHEDULER_ENV, raising=False)
    assert Executor.sequential().jobs == 1
    assert Executor("local", 3).jobs == 3
    assert Executor("dask").address is None
    monkeypatch.setenv(SCHEDULER_ENV, "tcp://10.0.0.5:8786")
    assert Executor("dask").address == "tcp://10.0.0.5:8786"
    assert Executor("dask", scheduler="tcp://h:1").address == "tcp://h:1"
    assert Executor("dask", scheduler="tcp://h:1").describe() == "dask tcp://h:1"


def test_run_config_builds_the_one_executor() -> None:
    from gatebench.config import RunConfig

    cfg = RunConfig(backend="sequential", n_jobs=2, scheduler=None)
    assert cfg.executor() == Executor("sequential", 2, None)


def test_unreachable_scheduler_names_the_address_and_the_fix() -> None:
    dask = pytest.importorskip("dask")
    pytest.importorskip("distributed")
    executor = Executor("dask", scheduler="tcp://127.0.0.1:1")
    match = r"cannot reach the dask scheduler 'tcp://127.0.0.1:1'"
    quick = dask.config.set({"distributed.comm.timeouts.connect": "1s"})
    with quick, pytest.raises(ConfigError, match=match), executor.client():
        pass
