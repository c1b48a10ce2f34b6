"""Matched-FPR lines between runs, on small hand-computed cases.

Dataset ``ds`` (5 attacks, 10 benign):

=====  ==========================  ==========================================
run    attacks                     benign
=====  ==========================  ==========================================
a      .9 .8 .7 .4 .2              .85 .6 .5 .3 .1 x6            θ = 0.75
b      1 1 1 1 0  (boolean)        1 1 0 x8                       θ = 0.5
c      .95 .55 .45 .35 .25         .5 .4 .3 .2 .15 .1 .05 .02 .01 0   θ = 0.52
=====  ==========================  ==========================================

At their own thresholds: a TP 2 FP 1 (FPR .1, F1 4/8), b TP 4 FP 2 (FPR .2,
F1 8/11), c TP 2 FP 0 (FPR 0, F1 4/7). Matching allows ``k = FPR * 10`` FPs;
the lowest threshold blocks the rows above the (k+1)-th largest benign score:

* a at b's .2 (k 2): above .5 -> θ .6, TP 3 FP 2, F1 = P = R = 0.6
* a at c's 0 (k 0): above .85 -> θ .9, TP 1 FP 0, F1 2/6
* c at a's .1 (k 1): above .4 -> θ .45, TP 3 FP 1, F1 6/9
* c at b's .2 (k 2): above .3 -> θ .35, TP 4 FP 2, F1 8/11 (equal to b)
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import f1_score

from gatebench.compare import compare_runs, format_compare
from gatebench.compare.matched_runs import (
    ALL_ATTACK_NOTE,
    ALL_BENIGN_NOTE,
    BOOLEAN_NOTE,
    RunScores,
    _matched_rows,
    pooled_matched_line,
)
from gatebench.errors import ConfigError
from gatebench.seeding import child_sequence
from gatebench.threshold import matched_fpr_threshold

DS = "ds"
Y = [1] * 5 + [0] * 10
A = [0.9, 0.8, 0.7, 0.4, 0.2, 0.85, 0.6, 0.5, 0.3] + [0.1] * 6
B = [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0] + [0.0] * 8
C = [0.95, 0.55, 0.45, 0.35, 0.25, 0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.05, 0.02, 0.01, 0.0]


def _runs(make_run):
    return [
        make_run({DS: (Y, A)}, threshold=0.75, detector="a"),
        make_run({DS: (Y, B)}, threshold=0.5, detector="b"),
        make_run({DS: (Y, C)}, threshold=0.52, detector="c"),
    ]


def rng_scores(n_pos: int, n_neg: int, seed: int) -> tuple[list[int], list[float]]:
    """Attacks ~ Beta(5, 2), benign ~ Beta(2, 5), rounded to 3 places."""
    rng = np.random.default_rng(seed)
    s = np.r_[rng.beta(5, 2, n_pos), rng.beta(2, 5, n_neg)].round(3)
    return [1] * n_pos + [0] * n_neg, s.tolist()


def _line(res, run, against):
    return next(m for m in res["matched"] if (m["run"], m["against"]) == (run, against))


def test_pooled_hand_values(make_run, tmp_path) -> None:
    res = compare_runs(_runs(make_run), published=tmp_path / "none.csv", n_resamples=200)
    pairs = {(m["run"], m["against"]) for m in res["matched"]}
    # b is boolean-only: matched to, never re-thresholded.
    assert pairs == {("a", "b"), ("a", "c"), ("c", "a"), ("c", "b")}
    assert "b" in res["matched_note"]
    ab = _line(res, "a", "b")
    assert (ab["target_fpr"], ab["threshold"], ab["fpr"], ab["tp"], ab["fp"]) == (
        0.2,
        0.6,
        0.2,
        3,
        2,
    )
    assert (ab["f1"], ab["precision"], ab["recall"]) == pytest.approx((0.6, 0.6, 0.6))
    assert ab["against_f1"] == pytest.approx(8 / 11) and ab["against_boolean_only"]
    assert ab["difference"]["value"] == pytest.approx(0.6 - 8 / 11)
    ac, ca, cb = _line(res, "a", "c"), _line(res, "c", "a"), _line(res, "c", "b")
    assert (ac["target_fpr"], ac["threshold"], ac["fpr"]) == (0.0, 0.9, 0.0)
    assert ac["f1"] == pytest.approx(1 / 3) and ac["against_f1"] == pytest.approx(4 / 7)
    assert (ca["target_fpr"], ca["threshold"], ca["f1"]) == (0.1, 0.45, pytest.approx(2 / 3))
    assert ca["against_f1"] == pytest.approx(0.5)
    assert (cb["threshold"], cb["fpr"]) == (0.35, 0.2)
    assert cb["difference"]["value"] == pytest.approx(0.0) and cb["within_noise"]
    for m in res["matched"]:
        d = m["difference"]
        assert d["low"] <= d["value"] <= d["high"]
        assert m["within_noise"] == (d["low"] <= 0 <= d["high"])
        assert m["caveat"].startswith("threshold re-picked")


def test_per_dataset_hand_values(make_run, tmp_path) -> None:
    res = compare_runs(_runs(make_run), published=tmp_path / "none.csv", n_resamples=200)
    entry = res["per_dataset"][0]
    cells = entry["runs"]
    assert cells["b"]["matched_runs_note"] == BOOLEAN_NOTE and "matched_runs" not in cells["b"]
    assert [m["against"] for m in cells["a"]["matched_runs"]] == ["b", "c"]
    ab = cells["a"]["matched_runs"][0]
    assert (ab["metric"], ab["target_fpr"], ab["threshold"], ab["fpr"]) == ("f1", 0.2, 0.6, 0.2)
    assert ab["value"] == pytest.approx(0.6) and ab["against_value"] == pytest.approx(8 / 11)
    assert ab["low"] <= ab["value"] <= ab["high"]
    assert ab["within_noise"] == (ab["low"] <= ab["against_value"] <= ab["high"])
    ca = cells["c"]["matched_runs"][0]
    assert (ca["against"], ca["threshold"], ca["value"]) == ("a", 0.45, pytest.approx(2 / 3))
    assert entry["matched_runs_caveat"].startswith("threshold re-picked")


def test_all_attack_and_all_benign_datasets_get_a_note(make_run, tmp_path) -> None:
    attack = ([1, 1, 1], {"a": [0.9, 0.2, 0.8], "b": [1.0, 0.0, 1.0], "c": [0.1, 0.6, 0.7]})
    benign = ([0, 0], {"a": [0.9, 0.1], "b": [0.0, 0.0], "c": [0.3, 0.2]})
    dirs = [
        make_run(
            {DS: (Y, s), "aa": (attack[0], attack[1][n]), "bb": (benign[0], benign[1][n])},
            threshold=t,
            detector=n,
        )
        for n, s, t in (("a", A, 0.75), ("b", B, 0.5), ("c", C, 0.52))
    ]
    res = compare_runs(dirs, published=tmp_path / "none.csv", n_resamples=100)
    by = {e["dataset"]: e for e in res["per_dataset"]}
    for lab in "abc":
        assert by["aa"]["runs"][lab]["matched_runs_note"] == ALL_ATTACK_NOTE
        assert by["bb"]["runs"][lab]["matched_runs_note"] == ALL_BENIGN_NOTE
        assert "matched_runs" not in by["aa"]["runs"][lab]
    assert "matched_runs_caveat" not in by["aa"]
    text = format_compare(res)
    assert "aa       recall  all  no benign prompts: FPR is undefined" in text
    json.dumps(res)


def test_interval_is_deterministic_for_a_seed(make_run, tmp_path) -> None:
    dirs = _runs(make_run)
    kw = {"published": tmp_path / "none.csv", "n_resamples": 100}
    first = compare_runs(dirs, seed=3, **kw)
    assert compare_runs(dirs, seed=3, **kw)["matched"] == first["matched"]
    other = compare_runs(dirs, seed=4, **kw)
    assert [m["difference"] for m in other["matched"]] != [
        m["difference"] for m in first["matched"]
    ]
    # The pair's interval comes from its named child seed, whatever the other runs.
    direct = pooled_matched_line(
        Y,
        [DS] * 15,
        RunScores("a", np.asarray(A), 0.75),
        RunScores("b", np.asarray(B), 0.5, boolean_only=True),
        seed=child_sequence(3, "compare", "matched_runs", "pooled", "a", "b"),
        n_resamples=100,
    )
    assert direct == _line(first, "a", "b")


def test_within_noise_flips_with_a_large_difference(make_run, tmp_path) -> None:
    y, s = rng_scores(120, 120, seed=1)
    rng = np.random.default_rng(2)
    close = (np.asarray(s) + rng.normal(0, 0.02, 240)).round(3).tolist()
    poor = rng.random(240).round(3).tolist()
    dirs = [
        make_run({DS: (y, s)}, threshold=0.6, detector="good"),
        make_run({DS: (y, close)}, threshold=0.6, detector="close"),
        make_run({DS: (y, poor)}, threshold=0.6, detector="poor"),
    ]
    res = compare_runs(dirs, published=tmp_path / "none.csv", n_resamples=400)
    near, far = _line(res, "good", "close"), _line(res, "good", "poor")
    assert near["within_noise"] and near["difference"]["low"] <= 0 < near["difference"]["high"]
    assert not far["within_noise"] and far["difference"]["low"] > 0.2
    cells = res["per_dataset"][0]["runs"]["good"]["matched_runs"]
    assert [m["within_noise"] for m in cells] == [True, False]


def test_pooled_f1_matches_sklearn_at_the_matched_threshold(make_run, tmp_path) -> None:
    y1, s1 = rng_scores(40, 60, seed=3)
    y2, s2 = rng_scores(30, 25, seed=4)
    rng = np.random.default_rng(5)
    other = {"x": rng.random(100).round(2).tolist(), "y": rng.random(55).round(2).tolist()}
    dirs = [
        make_run({"x": (y1, s1), "y": (y2, s2)}, threshold=0.7, detector="p"),
        make_run({"x": (y1, other["x"]), "y": (y2, other["y"])}, threshold=0.8, detector="q"),
    ]
    res = compare_runs(dirs, published=tmp_path / "none.csv", n_resamples=100)
    y, s, q = np.r_[y1, y2], np.r_[s1, s2], np.r_[other["x"], other["y"]]
    for m in res["matched"]:
        ours, theirs = (s, q) if m["run"] == "p" else (q, s)
        their_t = 0.7 if m["against"] == "p" else 0.8
        assert m["target_fpr"] == np.mean(theirs[y == 0] >= their_t)
        t = m["threshold"]
        assert m["f1"] == pytest.approx(f1_score(y, ours >= t))
        assert m["against_f1"] == pytest.approx(f1_score(y, theirs >= their_t))
        assert m["fpr"] == np.mean(ours[y == 0] >= t) <= m["target_fpr"]
        # Lowest such threshold: the next observed score down exceeds the target.
        below = ours[ours < t]
        assert below.size == 0 or np.mean(ours[y == 0] >= below.max()) > m["target_fpr"]


def test_resample_closed_form_equals_repicking_the_threshold() -> None:
    rng = np.random.default_rng(0)
    pos, neg = rng.random((30, 7)).round(1), rng.random((30, 9)).round(1)
    k = rng.integers(0, 11, 30)
    tp, fp = _matched_rows(pos, neg, k)
    for i in range(30):
        op = matched_fpr_threshold([1] * 7 + [0] * 9, np.r_[pos[i], neg[i]], min(k[i] / 9, 1.0))
        assert (tp[i], fp[i]) == (op.tp, op.fp)


def test_boolean_run_is_never_rethresholded() -> None:
    with pytest.raises(ConfigError, match="'b' is boolean-only"):
        pooled_matched_line(
            Y,
            [DS] * 15,
            RunScores("b", np.asarray(B), 0.5, boolean_only=True),
            RunScores("a", np.asarray(A), 0.75),
            seed=0,
            n_resamples=100,
        )


def test_bad_input_names_the_value() -> None:
    a = RunScores("a", np.asarray(A), 0.75)
    with pytest.raises(ConfigError, match=r"n_resamples=10 .* >= 40"):
        pooled_matched_line(
            Y, [DS] * 15, a, RunScores("c", np.asarray(C), 0.5), seed=0, n_resamples=10
        )
    with pytest.raises(ConfigError, match="run 'c' has 3 scores for 15 prompts"):
        pooled_matched_line(Y, [DS] * 15, a, RunScores("c", np.ones(3), 0.5), seed=0)
    with pytest.raises(ConfigError, match="run 'x' has threshold nan"):
        RunScores("x", np.asarray(A), float("nan"))


def test_render_shows_both_matched_sections(make_run, tmp_path) -> None:
    res = compare_runs(_runs(make_run), published=tmp_path / "none.csv", n_resamples=100)
    text = format_compare(res)
    assert "Matched FPR (pooled): each run re-thresholded to the other's FPR" in text
    assert "ΔF1 [95% CI]" in text and "b (bool)" in text
    assert "@b FPR 20.0%: 60.0 [" in text and "vs 72.7" in text
    assert BOOLEAN_NOTE in text
    # the existing tables are still there
    assert "ΔF1 vs ref (paired)" in text and "vs best comp." in text


def test_single_run_has_no_matched_lines(make_run, tmp_path) -> None:
    res = compare_runs(_runs(make_run)[:1], published=tmp_path / "none.csv", n_resamples=100)
    assert res["matched"] == [] and "one run" in res["matched_note"]
    assert "matched_runs" not in res["per_dataset"][0]["runs"]["a"]
    assert "Matched FPR" not in format_compare(res)
