"""Per-language results at the headline threshold, checked against sklearn; their schema."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score, recall_score

from gatebench.artifacts import jsonable
from gatebench.per_language import MIN_LANGUAGE_PROMPTS, by_language
from gatebench.result import EvaluationResult, LanguageRow

THRESHOLD = 0.5
B = 2000
#: language -> (attacks, benign); "sw" is below the minimum, None has no language.
MIX: dict[str | None, tuple[int, int]] = {
    "en": (140, 160),
    "de": (35, 25),
    "zh": (40, 0),
    "ja": (0, 35),
    "und": (12, 13),
    "sw": (6, 4),
    None: (9, 6),
}


def _prompts(seed: int = 0, mix: dict[str | None, tuple[int, int]] = MIX) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for lang, (n_att, n_ben) in mix.items():
        for label, n in ((1, n_att), (0, n_ben)):
            a, b = (4.0, 2.0) if label else (1.5, 4.0)
            for s in rng.beta(a, b, size=n):
                rows.append({"language": lang, "label": label, "score": float(s)})
    frame = pd.DataFrame(rows)
    return frame.assign(sample_id=[f"p{i}" for i in range(len(frame))], source="s")


@pytest.fixture(scope="module")
def head() -> pd.DataFrame:
    return _prompts()


@pytest.fixture(scope="module")
def got(head: pd.DataFrame) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    rows, skipped = by_language(head, threshold=THRESHOLD, seed=7, n_resamples=B)
    return {r["language"]: r for r in rows}, skipped


def _fpr(y: np.ndarray, pred: np.ndarray) -> float:
    # FPR = 1 - specificity, and specificity is sklearn's recall of the benign class.
    return 1.0 - float(recall_score(y, pred, pos_label=0))


def test_languages_below_the_minimum_are_counted_apart(
    got: tuple[dict[str, dict[str, Any]], dict[str, int]], head: pd.DataFrame
) -> None:
    rows, skipped = got
    assert MIN_LANGUAGE_PROMPTS == 20
    assert set(rows) == {"en", "de", "zh", "ja", "und"}
    assert skipped == {"sw": 10}
    # Prompts without a language are neither a row nor skipped.
    assert sum(r["n"] for r in rows.values()) + sum(skipped.values()) == head.language.notna().sum()


def test_order_puts_undetermined_last(head: pd.DataFrame) -> None:
    rows, _ = by_language(head, threshold=THRESHOLD, seed=7, n_resamples=200)
    assert [r["language"] for r in rows] == ["en", "de", "zh", "ja", "und"]


@pytest.mark.parametrize("lang", ["en", "de", "zh", "ja", "und"])
def test_counts_and_rates_equal_sklearn(
    lang: str, got: tuple[dict[str, dict[str, Any]], dict[str, int]], head: pd.DataFrame
) -> None:
    row = got[0][lang]
    part = head[head.language == lang]
    y = part.label.to_numpy()
    pred = (part.score.to_numpy() >= THRESHOLD).astype(int)
    assert (row["n"], row["n_attack"], row["n_benign"]) == (len(y), y.sum(), (y == 0).sum())
    if y.any():
        assert row["recall"] == pytest.approx(recall_score(y, pred))
    else:
        assert row["recall"] is None and row["recall_ci"] is None
    if (y == 0).any():
        assert row["fpr"] == pytest.approx(_fpr(y, pred))
    else:
        assert row["fpr"] is None and row["fpr_ci"] is None
    expected = {
        "f1": lambda: f1_score(y, pred),
        "recall": lambda: recall_score(y, pred),
        "oda": lambda: recall_score(y, pred, pos_label=0),  # ODA = 1 - FPR
    }
    metric = "f1" if y.any() and (y == 0).any() else ("recall" if y.any() else "oda")
    assert row["primary_metric"] == metric
    assert row["primary"] == pytest.approx(expected[metric]())


@pytest.mark.parametrize("key", ["primary", "recall", "fpr"])
def test_intervals_hold_the_estimate_at_95(
    key: str, got: tuple[dict[str, dict[str, Any]], dict[str, int]]
) -> None:
    for row in got[0].values():
        ci = row[f"{key}_ci"]
        if ci is None:
            continue
        assert ci["level"] == 0.95 and ci["n_resamples"] == B
        assert ci["low"] <= row[key] <= ci["high"]


def test_f1_interval_agrees_with_a_row_bootstrap_through_sklearn(
    got: tuple[dict[str, dict[str, Any]], dict[str, int]], head: pd.DataFrame
) -> None:
    """The count draw is exact in distribution: a label-stratified row bootstrap agrees."""
    part = head[head.language == "en"]
    y = part.label.to_numpy()
    pred = (part.score.to_numpy() >= THRESHOLD).astype(int)
    rng = np.random.default_rng(1)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    reps = []
    for _ in range(B):
        idx = np.concatenate([rng.choice(pos, pos.size), rng.choice(neg, neg.size)])
        reps.append(f1_score(y[idx], pred[idx]))
    low, high = np.percentile(reps, [2.5, 97.5])
    ci = got[0]["en"]["primary_ci"]
    assert ci["low"] == pytest.approx(low, abs=0.02)
    assert ci["high"] == pytest.approx(high, abs=0.02)


def test_intervals_are_seeded_by_language(head: pd.DataFrame) -> None:
    """Same seed, same intervals; a language leaving the trace moves no other interval."""
    first, _ = by_language(head, threshold=THRESHOLD, seed=3, n_resamples=400)
    again, _ = by_language(head, threshold=THRESHOLD, seed=3, n_resamples=400)
    assert first == again
    fewer, _ = by_language(
        head[head.language != "de"], threshold=THRESHOLD, seed=3, n_resamples=400
    )
    by_name = {r["language"]: r for r in first}
    for row in fewer:
        assert row == by_name[row["language"]]


def test_no_language_column_or_no_language_gives_nothing(head: pd.DataFrame) -> None:
    assert by_language(head.drop(columns="language"), threshold=0.5, seed=0, n_resamples=200) == (
        [],
        {},
    )
    none = head.assign(language=None)
    assert by_language(none, threshold=0.5, seed=0, n_resamples=200) == ([], {})


def test_rows_round_trip_through_result_json(head: pd.DataFrame, tmp_path: Path) -> None:
    landed = Path(__file__).parent / "fixtures" / "result-schema-1.0.json.gz"
    with gzip.open(landed, "rt", encoding="utf-8") as fh:
        payload = json.load(fh)
    rows, skipped = by_language(head, threshold=THRESHOLD, seed=7, n_resamples=200)
    payload["by_language"], payload["by_language_skipped"] = jsonable(rows), skipped
    result = EvaluationResult.from_json(payload)
    assert all(isinstance(r, LanguageRow) for r in result.by_language)
    assert [r.language for r in result.by_language] == [r["language"] for r in rows]
    zh = next(r for r in result.by_language if r.language == "zh")
    assert zh.fpr is None and zh.recall_ci is not None and zh.primary_metric == "recall"
    written = tmp_path / "result.json"
    written.write_text(json.dumps(result.to_json()))
    again = EvaluationResult.from_json(json.loads(written.read_text()))
    assert again == result
    assert again.by_language_skipped == {"sw": 10}


def test_a_seeded_interval_is_pinned(head: pd.DataFrame) -> None:
    """Per-language rows go through the shared per-group rule; its seeds must not move them."""
    rows, _ = by_language(head, threshold=THRESHOLD, seed=7, n_resamples=500)
    en = next(r for r in rows if r["language"] == "en")
    ci = en["primary_ci"]
    assert (ci["low"], ci["high"]) == pytest.approx((0.7637795275590551, 0.8602941176470589))
    assert en["recall_ci"]["low"] == pytest.approx(0.7)
