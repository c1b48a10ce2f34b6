"""The dask backend gives byte-identical results to the local backend.

One ``LocalCluster`` of worker processes serves every test here: the CLI's
``gatebench run --backend dask`` on a capped trace, and the headline bootstrap
whose resample blocks are shipped to the workers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gatebench.cli import app
from gatebench.metrics.bootstrap import bootstrap_headline
from gatebench.metrics.bootstrap.resampler import _CHUNK_CELLS
from gatebench.parallel import Executor

distributed = pytest.importorskip("distributed")

CAPPED = ["-s", "xstest", "-s", "deepset-prompt-injections", "--cap", "xstest=200"]


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def _run(out: Path, data_dir: Path, cache: Path, *backend: str) -> Path:
    args = [
        "run",
        "--detector",
        "tfidf-lr",
        *CAPPED,
        "--data-dir",
        str(data_dir),
        "--folds",
        "3",
        "--bootstrap",
        "400",
        "--diagnostics",
        "none",
        "--out",
        str(out),
        *backend,
    ]
    result = CliRunner().invoke(app, args, env={"GATEBENCH_CACHE": str(cache)})
    assert result.exit_code == 0, result.output
    return out


def test_cli_run_on_dask_matches_local_byte_for_byte(
    tmp_path: Path, data_dir: Path, scheduler: str
) -> None:
    cache = tmp_path / "cache"
    local = _run(tmp_path / "local", data_dir, cache, "--backend", "local", "--jobs", "2")
    remote = _run(tmp_path / "dask", data_dir, cache, "--backend", "dask", "--scheduler", scheduler)
    oof = (remote / "oof.jsonl").read_bytes()
    assert oof == (local / "oof.jsonl").read_bytes()
    # both passes and every capped row made it through the cluster
    rows = [json.loads(line) for line in oof.splitlines()]
    assert {r["pass"] for r in rows} == {"strat", "sgk"}
    manifest = json.loads((remote / "manifest.json").read_text())
    assert manifest["config"]["backend"] == "dask"
    # the bootstrap blocks ran on the cluster too, and gave the same intervals
    ci = [
        json.loads((d / "result.json").read_text())["metrics"]["headline"]["micro"]["ci"]
        for d in (local, remote)
    ]
    assert ci[0] == ci[1]


def test_bootstrap_blocks_on_dask_equal_threads(scheduler: str) -> None:
    rng = np.random.default_rng(3)
    n, b = 4000, 3000
    assert b > _CHUNK_CELLS // n  # several blocks, so the cluster really splits the work
    y = rng.integers(0, 2, n)
    s = np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1)
    src = rng.choice(["a", "b", "c"], n)
    kw = {"thresholds": [0.5, 0.7], "seed": 11, "n_resamples": b, "return_replicates": True}
    threads = bootstrap_headline(y, s, src, n_jobs=2, **kw)  # type: ignore[arg-type]
    remote = bootstrap_headline(y, s, src, executor=Executor("dask", scheduler=scheduler), **kw)  # type: ignore[arg-type]
    assert threads.replicates is not None and remote.replicates is not None
    assert threads.replicates.keys() == remote.replicates.keys()
    for k, v in threads.replicates.items():
        np.testing.assert_array_equal(v, remote.replicates[k], err_msg=k)
    assert threads.at[0.5]["f1"].as_dict() == remote.at[0.5]["f1"].as_dict()
