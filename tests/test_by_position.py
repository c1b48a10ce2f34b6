"""Results per position in an agent's input: checked against sklearn, kept in result.json
(schema 1.2) and in an evaluation's result, while older results still load."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score, recall_score

from gatebench.artifacts import jsonable
from gatebench.per_position import MIN_POSITION_PROMPTS, by_position
from gatebench.result import SCHEMA_VERSION, EvaluationResult, PositionRow
from gatebench.unseen.result import UnseenResult

THRESHOLD = 0.5
LANDED = Path(__file__).parent / "fixtures" / "result-schema-1.0.json.gz"
#: position -> (attacks, benign); "document" is below the minimum, None has no position.
MIX: dict[str | None, tuple[int, int]] = {
    "user": (120, 150),
    "tool": (60, 25),
    "document": (8, 4),
    None: (7, 5),
}


def _prompts(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for position, (n_att, n_ben) in MIX.items():
        for label, n in ((1, n_att), (0, n_ben)):
            a, b = (4.0, 2.0) if label else (1.5, 4.0)
            for s in rng.beta(a, b, size=n):
                rows.append({"position": position, "label": label, "score": float(s)})
    frame = pd.DataFrame(rows)
    return frame.assign(sample_id=[f"p{i}" for i in range(len(frame))], source="s")


@pytest.fixture(scope="module")
def head() -> pd.DataFrame:
    return _prompts()


@pytest.fixture(scope="module")
def got(head: pd.DataFrame) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    rows, skipped = by_position(head, threshold=THRESHOLD, seed=7, n_resamples=1000)
    return {r["position"]: r for r in rows}, skipped


def test_small_positions_are_skipped_and_unknown_ones_left_out(
    got: tuple[dict[str, dict[str, Any]], dict[str, int]], head: pd.DataFrame
) -> None:
    rows, skipped = got
    assert MIN_POSITION_PROMPTS == 20
    assert list(rows) == ["user", "tool"]
    assert skipped == {"document": 12}
    assert sum(r["n"] for r in rows.values()) + 12 == head["position"].notna().sum()


@pytest.mark.parametrize("position", ["user", "tool"])
def test_counts_and_rates_equal_sklearn(
    position: str, got: tuple[dict[str, dict[str, Any]], dict[str, int]], head: pd.DataFrame
) -> None:
    row = got[0][position]
    part = head[head["position"] == position]
    y = part["label"].to_numpy()
    pred = (part["score"].to_numpy() >= THRESHOLD).astype(int)
    n_att, n_ben = MIX[position]
    assert (row["n"], row["n_attack"], row["n_benign"]) == (n_att + n_ben, n_att, n_ben)
    assert row["primary_metric"] == "f1"
    assert row["primary"] == pytest.approx(f1_score(y, pred))
    assert row["recall"] == pytest.approx(recall_score(y, pred))
    # FPR = 1 - specificity, and specificity is sklearn's recall of the benign class.
    assert row["fpr"] == pytest.approx(1.0 - recall_score(y, pred, pos_label=0))
    for key in ("primary", "recall", "fpr"):
        ci = row[f"{key}_ci"]
        assert ci["level"] == 0.95 and ci["n_resamples"] == 1000
        assert ci["low"] <= row[key] <= ci["high"] and ci["low"] < ci["high"]


def test_an_attack_only_position_has_recall_and_no_fpr(head: pd.DataFrame) -> None:
    attacks = head[(head["position"] != "tool") | (head["label"] == 1)]
    rows, _ = by_position(attacks, threshold=THRESHOLD, seed=7, n_resamples=200)
    tool = next(r for r in rows if r["position"] == "tool")
    y = attacks.loc[attacks["position"] == "tool", "score"].to_numpy() >= THRESHOLD
    assert tool["primary_metric"] == "recall" and tool["primary"] == pytest.approx(y.mean())
    assert tool["fpr"] is None and tool["fpr_ci"] is None


def test_intervals_are_seeded_by_position_and_apart_from_languages(head: pd.DataFrame) -> None:
    first, _ = by_position(head, threshold=THRESHOLD, seed=3, n_resamples=400)
    without_tool = head[head["position"] != "tool"]
    fewer, _ = by_position(without_tool, threshold=THRESHOLD, seed=3, n_resamples=400)
    assert fewer == [first[0]]  # the user row does not move when the tool row leaves
    # The same values under the language column draw from other seeds.
    from gatebench.per_language import by_language

    langs, _ = by_language(
        head.rename(columns={"position": "language"}), threshold=THRESHOLD, seed=3, n_resamples=400
    )
    user = next(r for r in langs if r["language"] == "user")
    assert user["primary"] == first[0]["primary"]
    assert user["primary_ci"] != first[0]["primary_ci"]


def test_no_position_column_gives_nothing(head: pd.DataFrame) -> None:
    assert by_position(head.drop(columns="position"), threshold=0.5, seed=0, n_resamples=50) == (
        [],
        {},
    )


# --- result.json -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def landed() -> dict[str, Any]:
    with gzip.open(LANDED, "rt", encoding="utf-8") as fh:
        payload: dict[str, Any] = json.load(fh)
    return payload


def test_rows_round_trip_through_result_json(
    landed: dict[str, Any], head: pd.DataFrame, tmp_path: Path
) -> None:
    assert SCHEMA_VERSION == "1.2"
    rows, skipped = by_position(head, threshold=THRESHOLD, seed=7, n_resamples=200)
    payload = {**copy.deepcopy(landed), "schema_version": SCHEMA_VERSION}
    payload["by_position"], payload["by_position_skipped"] = jsonable(rows), skipped
    result = EvaluationResult.from_json(payload)
    assert all(isinstance(r, PositionRow) for r in result.by_position)
    assert [r.position for r in result.by_position] == ["user", "tool"]
    written = tmp_path / "result.json"
    written.write_text(json.dumps(result.to_json()))
    again = EvaluationResult.from_json(json.loads(written.read_text()))
    assert again == result and again.by_position_skipped == {"document": 12}
    assert again.by_position[1].recall == pytest.approx(rows[1]["recall"])


@pytest.mark.parametrize("version", ["1.0", "1.1"])
def test_results_written_before_positions_still_load(landed: dict[str, Any], version: str) -> None:
    result = EvaluationResult.from_json({**landed, "schema_version": version})
    assert result.by_position == [] and result.by_position_skipped == {}


def test_a_position_row_must_name_its_position(landed: dict[str, Any], head: pd.DataFrame) -> None:
    from gatebench.errors import SchemaError

    rows, _ = by_position(head, threshold=THRESHOLD, seed=7, n_resamples=50)
    bad = jsonable(rows)
    bad[0]["language"] = bad[0].pop("position")
    with pytest.raises(SchemaError, match=r"by_position\.0"):
        EvaluationResult.from_json({**landed, "by_position": bad})


def test_an_unseen_result_keeps_positions_and_reads_without_them(tmp_path: Path) -> None:
    base = {
        "schema_version": "1.0",
        "model": {"dir": "m", "sha256": "a" * 64, "detector": {"name": "x"}, "threshold": 0.5,
                  "target_fpr": None, "trace_id": None},
        "data_trace_id": "d" * 64, "sources": ["s"],
        "overlap": {"checked": False, "excluded": False},
        "pooled": {"n": 3, "n_attack": 2, "n_benign": 1}, "by_source": [],
        "seed": 0, "n_resamples": 10,
    }  # fmt: skip
    (tmp_path / "old.json").write_text(json.dumps(base))
    assert UnseenResult.read(tmp_path / "old.json").by_position == []
    row = {"position": "tool", "n": 30, "n_attack": 30, "n_benign": 0, "primary_metric": "recall",
           "primary": 0.5}  # fmt: skip
    new = {**base, "schema_version": "1.1", "by_position": [row]}
    (tmp_path / "new.json").write_text(json.dumps(new))
    assert UnseenResult.read(tmp_path / "new.json").by_position[0].position == "tool"
