"""The ``gatebench evaluate`` report in headless Chromium: offline, no errors, the figure drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_report_browser import check_in_browser, driver  # noqa: F401  (driver is a fixture)

from gatebench.artifacts import write_json
from gatebench.report.unseen import gap_data, render_unseen
from gatebench.unseen.result import UnseenResult

pytestmark = pytest.mark.browser


def _ci(v: float) -> dict[str, Any]:
    return {"estimate": v, "low": max(0.0, v - 0.05), "high": min(1.0, v + 0.05), "level": 0.95,
            "method": "percentile", "n_resamples": 200, "n_undefined": 0}  # fmt: skip


def _rates(recall: float, fpr: float, f1: float, auc: float) -> dict[str, Any]:
    values = {"recall": recall, "fpr": fpr, "f1": f1, "auc": auc}
    return {"n": 400, "n_attack": 200, "n_benign": 200, **values,
            "ci": {k: _ci(v) for k, v in values.items()}}  # fmt: skip


def _result() -> UnseenResult:
    return UnseenResult.model_validate(
        {
            "model": {
                "dir": "model",
                "sha256": "a" * 64,
                "detector": {"name": "gate"},
                "threshold": 0.83,
                "target_fpr": 0.01,
                "trace_id": "t" * 64,
            },
            "data_trace_id": "d" * 64,
            "sources": ["mine"],
            "overlap": {
                "checked": True,
                "excluded": True,
                "prompts": 3,
                "by_source": {"mine": 3},
                "how": "composite group",
            },
            "pooled": _rates(0.61, 0.09, 0.72, 0.81),
            "by_source": [
                {
                    **_rates(0.61, 0.09, 0.72, 0.81),
                    "source": "mine",
                    "primary_metric": "f1",
                    "primary": 0.72,
                    "excluded_overlap": 3,
                }
            ],
            "by_language": [
                {
                    "language": "en",
                    "n": 300,
                    "n_attack": 150,
                    "n_benign": 150,
                    "primary_metric": "f1",
                    "primary": 0.7,
                    "primary_ci": _ci(0.7),
                },
                {
                    "language": "de",
                    "n": 100,
                    "n_attack": 50,
                    "n_benign": 50,
                    "primary_metric": "f1",
                    "primary": 0.6,
                    "primary_ci": _ci(0.6),
                },
            ],
            "by_position": [
                {
                    "position": "user",
                    "n": 300,
                    "n_attack": 150,
                    "n_benign": 150,
                    "primary_metric": "f1",
                    "primary": 0.74,
                    "primary_ci": _ci(0.74),
                },
                {
                    "position": "tool",
                    "n": 100,
                    "n_attack": 100,
                    "n_benign": 0,
                    "primary_metric": "recall",
                    "primary": 0.41,
                    "primary_ci": _ci(0.41),
                },
            ],
            "in_distribution": _rates(0.92, 0.01, 0.95, 0.99),
            "in_distribution_run": "runs/x",
            "seed": 1,
            "n_resamples": 200,
        }
    )


def test_gap_data_pairs_each_metric() -> None:
    data = gap_data(_result())
    assert data["recall"]["in"] == pytest.approx((0.92, 0.87, 0.97))
    assert data["fpr"]["unseen"] == pytest.approx((0.09, 0.04, 0.14))


def test_unseen_report_in_browser(driver: Any, tmp_path: Path) -> None:  # noqa: F811
    write_json(tmp_path / "result.json", _result().model_dump(mode="json"))
    report = render_unseen(tmp_path)
    seen = check_in_browser(driver, report)
    assert seen["errors"] == [] and seen["overflow"] <= 0
    assert all(u.startswith("file:") or u.startswith("data:") for u in seen["fetched"])
    for figure in ("#unseen-gap", "#unseen-languages", "#unseen-positions"):
        box = driver.execute_script(
            f"const r = document.querySelector('{figure} svg').getBoundingClientRect();"
            " return [r.width, r.height];"
        )
        assert box[0] > 300 and box[1] > 100, figure
