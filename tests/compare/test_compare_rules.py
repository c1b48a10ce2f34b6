"""The §3 table rules on small hand-computed cases.

Dataset (the ``balanced`` fixture): attacks score 0.95, 0.90, ..., 0.00;
benign 0.62, 0.61, 0.30, 0.29, ..., 0.13 (20 each). At the headline
threshold 0.7: TP 6, FP 0, FN 14, so F1 = 12/26 = 0.4615. Matching FPR:

* 0.00 (0 FPs allowed): block > 0.62 -> TP 7, FP 0 -> F1 14/27 = 0.5185
* 0.05 (1 FP):          block > 0.61 -> TP 7, FP 1 -> F1 14/28 = 0.5
* 0.10 (2 FPs):         block > 0.30 -> TP 13, FP 2 -> F1 26/35 = 0.7429
"""

from __future__ import annotations

import numpy as np
import pytest

from gatebench.compare.competitors import Entry, lakera_mode, ranked, walk
from gatebench.compare.leaderboard import dataset_row
from gatebench.compare.matching import (
    allowed_false_positives,
    matched_counts,
    matched_value,
    sample_size_interval,
)
from gatebench.compare.published import load_published
from gatebench.rundata import load_run
from gatebench.threshold import matched_fpr_threshold

DS = "deepset-prompt-injections"
F1_HEAD = 12 / 26


def _entry(system: str, value: float, fpr: float | None, *, self_eval: bool = False) -> Entry:
    return Entry(system, "f1", value, fpr, None, self_eval, "paper", "T", "", 1)


def _matched(y, s):
    def at(target: float) -> float:
        yy, ss = np.asarray(y), np.asarray(s)
        t = matched_fpr_threshold(yy, ss, target).threshold
        tp = int(((ss >= t) & (yy == 1)).sum())
        fp = int(((ss >= t) & (yy == 0)).sum())
        return 2 * tp / (2 * tp + fp + (yy == 1).sum() - tp)

    return at


def test_hand_values(balanced) -> None:
    at = _matched(*balanced)
    assert at(0.0) == pytest.approx(14 / 27)
    assert at(0.05) == pytest.approx(0.5)
    assert at(0.10) == pytest.approx(26 / 35)


def test_walk_skips_lakera_and_competitors_without_fpr(balanced) -> None:
    ranking = ranked(
        [
            _entry("c", 0.80, 0.10),
            _entry("lakera-guard", 0.99, 0.0),
            _entry("a", 0.95, None),
            _entry("b", 0.90, 0.05),
        ],
        "f1",
    )
    assert [e.system for e in ranking] == ["lakera-guard", "a", "b", "c"]
    w = walk(ranking, "f1", F1_HEAD, _matched(*balanced))
    assert w.chosen is not None and w.chosen.system == "b"
    assert [s.get("skipped") for s in w.steps] == [
        "excluded (own column)",
        "publishes no FPR",
        None,
    ]
    assert w.steps[-1]["ours_matched"] == pytest.approx(0.5)


def test_walk_falls_through_when_a_retune_does_not_improve(balanced) -> None:
    y, s = balanced
    # Headline threshold 0.3: TP 14, FP 3 -> F1 28/37 = 0.7568; no match beats it.
    head = 28 / 37
    ranking = ranked([_entry("a", 0.95, 0.0), _entry("b", 0.9, 0.10)], "f1")
    w = walk(ranking, "f1", head, _matched(y, s))
    assert w.chosen is None
    assert w.reason == "every retune to a published FPR would not improve our headline value"
    # ...while a worse-ranked competitor whose FPR does improve us is picked.
    ranking = ranked([_entry("a", 0.95, 0.0), _entry("b", 0.9, 0.10)], "f1")
    w = walk(ranking, "f1", F1_HEAD, _matched(y, s))
    assert w.chosen is not None and w.chosen.system == "a"


def test_walk_drops_the_line_without_fpr_and_on_degenerate_metrics(balanced) -> None:
    ranking = ranked([_entry("a", 0.95, None), _entry("self", 0.99, 0.0, self_eval=True)], "f1")
    assert [e.system for e in ranking] == ["a"]  # self-evaluations are not ranked by default
    w = walk(ranking, "f1", F1_HEAD, _matched(*balanced))
    assert w.chosen is None and w.reason.startswith("no non-Lakera competitor publishes an FPR")
    w = walk(ranking, "oda", 0.9, _matched(*balanced))
    assert w.chosen is None and "degenerate" in w.reason


def test_lakera_marks() -> None:
    no_fpr = _entry("lakera-guard", 0.87, None)
    with_fpr = _entry("lakera-guard", 0.87, 0.2)
    assert lakera_mode("oda", with_fpr, True) == ("†", "headline")
    assert lakera_mode("f1", no_fpr, True) == ("‡", "surrogate")
    assert lakera_mode("f1", with_fpr, True) == ("", "matched")
    assert lakera_mode("recall", with_fpr, False) == ("", "headline")
    assert lakera_mode("f1", None, True) is None


def test_dataset_row_end_to_end(make_run, table, row, balanced) -> None:
    run = load_run(
        make_run(
            {DS: balanced},
            threshold=0.7,
            by_source={DS: {"metric": "f1", "estimate": F1_HEAD, "low_95": 0.30, "high_95": 0.60}},
        )
    )
    t = load_published(
        table(
            [
                row("lakera-guard", "deepset", "f1", 0.99),  # no FPR -> ‡ at 1%
                row("a", "deepset", "f1", 0.95),
                row("b", "deepset", "f1", 0.50, fpr=0.05, n=10),  # inside our CI
                row("b", "deepset", "recall", 0.40, fpr=0.05, n=10),
                row("mine", "deepset", "f1", 0.99, fpr=0.0, self_eval=1),
                row("c", "deepset", "accuracy", 0.9),  # not comparable on a balanced set
            ]
        )
    )
    r = dataset_row(run, DS, t, seed=0, n_resamples=400)
    assert (r["rank"], r["rank_total"]) == (4, 4)  # lakera, a, b are better
    assert r["n_competitors"] == 3 and r["n_self_eval"] == 1
    assert r["vs_best"]["competitor"] == "lakera-guard"
    assert r["vs_best"]["within_noise"] is False
    m = r["matched"]
    assert m["competitor"] == "b" and m["ours"]["value"] == pytest.approx(0.5)
    assert m["within_noise"] == (m["ours"]["low"] <= 0.5 <= m["ours"]["high"])
    assert m["caveat"].startswith("threshold re-picked") and r["caveat"] == m["caveat"]
    lak = r["lakera"]
    assert (lak["mark"], lak["how"], lak["target_fpr"]) == ("‡", "surrogate", 0.01)
    assert lak["ours"]["value"] == pytest.approx(14 / 27)
    assert [e["label"] for e in r["self_reported"]] == ["mine*"]
    assert {(x["competitor"], x["metric"], x["n_theirs"]) for x in r["sample_size"]} == {
        ("b", "f1", 10),
        ("b", "recall", 10),
    }


def test_within_noise_on_the_main_line(make_run, table, row, balanced) -> None:
    run = load_run(
        make_run(
            {DS: balanced},
            threshold=0.7,
            by_source={DS: {"metric": "f1", "estimate": F1_HEAD, "low_95": 0.30, "high_95": 0.60}},
        )
    )
    inside = dataset_row(run, DS, load_published(table([row("x", "deepset", "f1", 0.6)])), seed=0)
    outside = dataset_row(run, DS, load_published(table([row("x", "deepset", "f1", 0.61)])), seed=0)
    assert inside["vs_best"]["within_noise"] is True
    assert outside["vs_best"]["within_noise"] is False
    assert inside["vs_best"]["delta"] == pytest.approx(F1_HEAD - 0.6)


def test_dagger_on_an_all_benign_set(make_run, table, row) -> None:
    y, s = [0] * 10, [0.1] * 9 + [0.9]
    run = load_run(make_run({"notinject": (y, s)}, threshold=0.5))
    t = load_published(
        table(
            [
                row("lakera-guard", "notinject", "oda", 0.8761, n=339),
                row("p", "notinject", "fpr", 0.2),
            ]
        )
    )
    r = dataset_row(run, "notinject", t, seed=0, n_resamples=400)
    assert r["ours"]["value"] == pytest.approx(0.9)  # one of ten benign blocked
    assert r["lakera"]["mark"] == "†" and r["lakera"]["ours"]["value"] == pytest.approx(0.9)
    assert r["matched"] is None and "degenerate" in r["matched_reason"]
    # FPR 0.2 becomes ODA 0.8; ours (0.9) ranks first of three.
    assert (r["rank"], r["rank_total"]) == (1, 3)
    assert r["sample_size"] == []  # their n (339) is not smaller than ours (10)


def test_all_attack_sets_have_no_matched_line(make_run, table, row) -> None:
    run = load_run(make_run({"advbench": ([1] * 10, [0.9] * 5 + [0.1] * 5)}, threshold=0.5))
    t = load_published(table([row("lakera-guard", "advbench", "recall", 0.7, fpr=0.1)]))
    r = dataset_row(run, "advbench", t, seed=0, n_resamples=400)
    assert r["matched"] is None and r["matched_reason"].startswith("no benign rows")
    assert (r["lakera"]["mark"], r["lakera"]["how"]) == ("", "headline")


def test_matched_interval_re_picks_the_threshold(balanced) -> None:
    y, s = balanced
    m = matched_value(y, s, target_fpr=0.05, metric="f1", seed=3, n_resamples=2000)
    assert (m.threshold, m.fpr, m.value) == (0.62, 0.05, 0.5)
    assert m.low < 0.5 < m.high


def test_closed_form_equals_matched_fpr_threshold() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        n_pos, n_neg = rng.integers(1, 30), rng.integers(1, 30)
        pos = rng.integers(0, 8, n_pos) / 8  # heavy ties
        neg = rng.integers(0, 8, n_neg) / 8
        target = float(rng.choice([0.0, 0.05, 0.1, 0.3, 1.0]))
        y = np.r_[np.ones(n_pos), np.zeros(n_neg)]
        s = np.r_[pos, neg]
        op = matched_fpr_threshold(y, s, target)
        k = allowed_false_positives(target, n_neg)
        tp, fp = matched_counts(pos[None, :], neg[None, :], k)
        assert (int(tp[0]), int(fp[0])) == (op.tp, op.fp)


def test_sample_size_interval_hand_case() -> None:
    # Four attacks, two blocked. Subsamples of two: recall 1 (1/6), 0 (1/6), 0.5 (4/6).
    y, s = [1, 1, 1, 1], [0.9, 0.9, 0.1, 0.1]
    wide = sample_size_interval(
        y, s, threshold=0.5, n=2, metric="recall", seed=0, n_resamples=4000, level=0.9
    )
    narrow = sample_size_interval(
        y, s, threshold=0.5, n=2, metric="recall", seed=0, n_resamples=4000, level=0.5
    )
    whole = sample_size_interval(y, s, threshold=0.5, n=4, metric="recall", seed=0, n_resamples=100)
    assert (wide["low"], wide["high"]) == (0.0, 1.0)
    assert (narrow["low"], narrow["high"]) == (0.5, 0.5)
    assert (whole["low"], whole["high"], whole["estimate"]) == (0.5, 0.5, 0.5)


def test_ranking_keeps_one_entry_per_system(make_run, table, row) -> None:
    """Two sources publishing one system on one dataset give one ranking entry, its best.

    ``competitors`` keeps both rows (provenance); a self-evaluation stays its own
    entry beside the same system's third-party number.
    """
    y, s = [0] * 10, [0.1] * 9 + [0.9]
    run = load_run(make_run({"notinject": (y, s)}, threshold=0.5))
    t = load_published(
        table(
            [
                row("protectai-v2", "notinject", "accuracy", 0.6, source="paper A"),
                row("protectai-v2", "notinject", "oda", 0.5664, source="repo log B"),
                row("prompt-guard", "notinject", "oda", 0.0088, source="paper A"),
                row("prompt-guard", "notinject", "oda", 0.0029, source="repo log B"),
                row("injecguard", "notinject", "oda", 0.87, source="paper A", self_eval=1),
                row("injecguard", "notinject", "oda", 0.80, source="paper C"),
            ]
        )
    )
    r = dataset_row(run, "notinject", t, seed=0, n_resamples=400)
    assert len(r["competitors"]) == 6
    got = [(e["label"], e["value"]) for e in r["ranking"]]
    assert got == [
        ("injecguard*", 0.87),
        ("injecguard", 0.80),
        ("protectai-v2", 0.6),
        ("prompt-guard", 0.0088),
    ]
    assert len({(e["system"], e["self_eval"]) for e in r["ranking"]}) == len(r["ranking"])
    # The rank counts the same one-per-system third-party list.
    assert r["rank_total"] == 1 + sum(not e["self_eval"] for e in r["ranking"])
