"""Shared fixtures: the real mirror is read through $GATEBENCH_DATA, never copied."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The benchmark mirror; tests that need it skip with a reason when it is absent."""
    env = os.environ.get("GATEBENCH_DATA")
    if not env or not Path(env).is_dir():
        pytest.skip("GATEBENCH_DATA is not set to the benchmark mirror (see README)")
    return Path(env).resolve()


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def xstest_tfidf(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> tuple[Path, Path]:
    """A small tfidf-lr model directory on xstest and the run it took its threshold from.

    Shared read-only: a test that damages a model or run copies it first.
    """
    from gatebench import api
    from gatebench.config import RunConfig

    tmp = tmp_path_factory.mktemp("xstest-tfidf")
    cfg = RunConfig(
        detector="tfidf-lr",
        sources=("xstest",),
        data_dir=data_dir,
        cache_dir=tmp / "cache",
        out=tmp / "run",
        bootstrap=200,
        folds=3,
        n_jobs=1,
        diagnostics="none",
    )
    return api.train(cfg, tmp / "model", operating_point="headline"), tmp / "run"
