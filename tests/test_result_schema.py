"""result.json is one typed, versioned model: what one version writes, the next reads or refuses.

``fixtures/result-schema-1.0.json.gz`` is a result.json written by the version
before the typed model existed (a 3-fold tfidf-lr run on the offline fixture
source; paths neutralised). It must keep loading as long as the major schema
version is 1.
"""

from __future__ import annotations

import copy
import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from gatebench.artifacts import read_result, write_json
from gatebench.errors import SchemaError
from gatebench.result import SCHEMA_VERSION, EvaluationResult

LANDED = Path(__file__).parent / "fixtures" / "result-schema-1.0.json.gz"


@pytest.fixture(scope="module")
def landed() -> dict[str, Any]:
    with gzip.open(LANDED, "rt", encoding="utf-8") as fh:
        payload: dict[str, Any] = json.load(fh)
    return payload


def _write(tmp_path: Path, payload: Any) -> Path:
    (tmp_path / "result.json").write_text(json.dumps(payload))
    return tmp_path


def test_a_result_written_before_the_typed_model_loads(
    landed: dict[str, Any], tmp_path: Path
) -> None:
    result = read_result(_write(tmp_path, landed))
    assert result.schema_version == "1.0"
    assert SCHEMA_VERSION.split(".")[0] == "1"  # a minor of the same major reads it
    assert result.by_language == [] and result.by_language_skipped == {}
    assert result.operating_point.threshold == landed["operating_point"]["threshold"]
    assert result.headline.micro.f1 == landed["metrics"]["headline"]["micro"]["f1"]
    ci = landed["metrics"]["headline"]["micro"]["ci"]["f1"]
    assert (result.headline.micro.ci["f1"].low, result.headline.micro.ci["f1"].high) == (
        ci["low"],
        ci["high"],
    )
    assert [r.source for r in result.by_source] == [r["source"] for r in landed["by_source"]]
    row = result.by_source[0]
    assert row.get("low_95") == landed["by_source"][0]["low_95"]  # per-run columns survive
    assert [d.name for d in result.diagnostics] == [d["name"] for d in landed["diagnostics"]]
    assert result.trace.trace_id == landed["trace"]["trace_id"]


def test_every_number_survives_a_write_and_read(landed: dict[str, Any], tmp_path: Path) -> None:
    result = EvaluationResult.from_json(landed)
    write_json(tmp_path / "result.json", result.to_json())
    again = json.loads((tmp_path / "result.json").read_text())

    def leaves(x: Any, path: str = "") -> dict[str, Any]:
        if isinstance(x, dict):
            return {k: v for key, val in x.items() for k, v in leaves(val, f"{path}.{key}").items()}
        if isinstance(x, list):
            return {k: v for i, val in enumerate(x) for k, v in leaves(val, f"{path}[{i}]").items()}
        return {path: x}

    before, after = leaves(landed), leaves(again)
    assert {k: after[k] for k in before} == before  # every value the old file held is kept
    assert all(v in (None, 0, 0.0, True) for k, v in after.items() if k not in before)


def test_another_major_version_is_refused_by_its_number(
    landed: dict[str, Any], tmp_path: Path
) -> None:
    future = {**landed, "schema_version": "2.0"}
    reads = re.escape(f"schema_version '2.0'; this gatebench reads {SCHEMA_VERSION}")
    with pytest.raises(SchemaError, match=reads):
        read_result(_write(tmp_path, future))


def test_a_misshapen_section_is_named_with_its_value(
    landed: dict[str, Any], tmp_path: Path
) -> None:
    bad = copy.deepcopy(landed)
    bad["metrics"]["headline"]["micro"]["f1"] = "high"
    with pytest.raises(SchemaError, match=r"metrics\.headline\.micro\.f1 is \"high\""):
        read_result(_write(tmp_path, bad))
    unknown = {**landed, "verdict": "great"}
    with pytest.raises(SchemaError, match=r"verdict is \"great\": extra inputs"):
        read_result(_write(tmp_path, unknown))
