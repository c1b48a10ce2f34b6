"""Stratified bootstrap: exact replicates, interval rule, scipy agreement, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import confusion_matrix

from gatebench.errors import ConfigError
from gatebench.metrics import (
    bootstrap_headline,
    by_source_intervals,
    dataset_intervals,
    order_statistic_ranks,
    percentile_interval,
    resample_counts,
    subsample_interval,
)
from gatebench.metrics.frame import SourceMetricFrame
from gatebench.metrics.scores import f1_score


def reference_stats(w, y, s, src, thresholds):
    """Every headline metric of one resample, by brute force from its row weights."""
    out = {}
    pos, neg = y == 1, y == 0
    diff = s[pos][:, None] - s[neg][None, :]
    kernel = (diff > 0) + 0.5 * (diff == 0)
    wp, wn = w[pos], w[neg]
    out["auc"] = wp @ kernel @ wn / (wp.sum() * wn.sum())
    for ti, t in enumerate(thresholds):
        blocked = s >= t
        tp, fp = w[pos & blocked].sum(), w[neg & blocked].sum()
        fn, tn = w[pos].sum() - tp, w[neg].sum() - fp
        out[f"f1@{ti}"] = 2 * tp / (2 * tp + fp + fn)
        out[f"precision@{ti}"] = tp / (tp + fp) if tp + fp else np.nan
        out[f"recall@{ti}"] = tp / (tp + fn)
        out[f"fpr@{ti}"] = fp / (fp + tn)
        f1s, fprs = [], []
        for name in np.unique(src):
            m = src == name
            tp_s = w[m & pos & blocked].sum()
            fp_s = w[m & neg & blocked].sum()
            fn_s = w[m & pos].sum() - tp_s
            f1s.append(f1_score(tp_s, fp_s, fn_s))
            if w[m & neg].sum():
                fprs.append(fp_s / w[m & neg].sum())
        out[f"macro_f1@{ti}"] = np.nanmean(f1s) if not np.all(np.isnan(f1s)) else np.nan
        out[f"macro_fpr@{ti}"] = np.mean(fprs) if fprs else np.nan
    return out


@pytest.mark.parametrize("strata_kind", ["source_label", "label", "source", "random"])
def test_replicates_equal_brute_force_from_the_same_weights(data_factory, strata_kind):
    y, s, src = data_factory(21, n=160, n_sources=4, decimals=1)  # many cross-class ties
    strata = {
        "source_label": None,
        "label": y,
        "source": src,
        "random": np.random.default_rng(0).integers(0, 3, y.size),
    }[strata_kind]
    thresholds = [0.5, 0.71]
    kw = {"seed": 5, "strata": strata, "n_resamples": 40}
    res = bootstrap_headline(y, s, src, thresholds=thresholds, return_replicates=True, **kw)
    weights = resample_counts(y, s, src, **kw)
    for b in range(weights.shape[0]):
        ref = reference_stats(weights[b].astype(float), y, s, src, thresholds)
        for key, value in ref.items():
            got = res.replicates[key][b]
            assert got == pytest.approx(value, abs=1e-12, nan_ok=True), (key, b)


def test_point_estimates_equal_the_plain_metrics(data_factory):
    y, s, src = data_factory(22, n=300)
    res = bootstrap_headline(y, s, src, thresholds=[0.5], seed=0, n_resamples=50)
    ref = reference_stats(np.ones(y.size), y, s, src, [0.5])
    assert res.auc.estimate == pytest.approx(ref["auc"])
    for m in ("f1", "precision", "recall", "fpr", "macro_f1", "macro_fpr"):
        assert res.at[0.5][m].estimate == pytest.approx(ref[f"{m}@0"])
    assert res.macro_sources == tuple(sorted(set(src[y == 1])))
    assert res.macro_fpr_sources == tuple(sorted(set(src[y == 0])))


def test_macro_fpr_matches_sklearn_and_the_per_source_frame(data_factory):
    """Macro FPR: sklearn's per-source FPR averaged over sources with benign rows.

    ``s1`` is all-attack (no FPR), so it must drop out of the mean rather than
    count as 0; a small source with few benign rows counts as much as a big one.
    """
    y, s, src = data_factory(32, n=500, n_sources=5)
    small = np.flatnonzero((src == "s4") & (y == 0))[8:]
    keep = np.setdiff1d(np.arange(y.size), small)  # leave s4 with 8 benign rows
    y, s, src = y[keep], s[keep], src[keep]
    t = 0.55
    fprs = []
    for name in np.unique(src):
        m = src == name
        if not (y[m] == 0).any():
            continue
        tn, fp, _, _ = confusion_matrix(y[m], s[m] >= t, labels=[0, 1]).ravel()
        fprs.append(fp / (fp + tn))
    assert len(fprs) == 4 and int(((src == "s4") & (y == 0)).sum()) == 8
    res = bootstrap_headline(y, s, src, thresholds=[t], seed=2, n_resamples=2000)
    ci = res.at[t]["macro_fpr"]
    assert ci.estimate == pytest.approx(np.mean(fprs), abs=1e-12)
    frame = SourceMetricFrame(y, s, src, threshold=t)
    assert ci.estimate == pytest.approx(frame.macro["fpr"], abs=1e-12)
    assert ci.low < ci.estimate < ci.high and ci.n_undefined == 0
    # Same resamples as the micro twins: one B, one level.
    assert ci.n_resamples == res.at[t]["fpr"].n_resamples == 2000


@pytest.mark.parametrize("strata_kind", ["source_label", "random"])
def test_stratified_resample_preserves_cell_sizes_exactly(data_factory, strata_kind):
    y, s, src = data_factory(23, n=500)
    strata = None if strata_kind == "source_label" else np.arange(y.size) % 7
    w = resample_counts(y, s, src, seed=1, strata=strata, n_resamples=300)
    cells = (
        np.unique(np.char.add(src, y.astype(str)), return_inverse=True)[1]
        if strata is None
        else strata
    )
    for c in np.unique(cells):
        m = cells == c
        assert np.all(w[:, m].sum(axis=1) == m.sum())
    assert np.all(w.sum(axis=1) == y.size)
    # uniform within cells: every row is drawn once per resample on average
    assert abs(w.mean() - 1.0) < 1e-12
    assert np.abs(w.mean(axis=0) - 1.0).max() < 0.35


def test_order_statistic_rule():
    assert order_statistic_ranks(10_000, 0.95) == (250, 9750)
    assert order_statistic_ranks(10_000, 0.99) == (50, 9950)
    assert order_statistic_ranks(1000, 0.5) == (250, 750)
    assert order_statistic_ranks(40, 0.95) == (1, 39)
    assert order_statistic_ranks(41, 0.95) == (2, 39)  # ceil(1.025), floor(39.975)
    values = np.random.default_rng(0).permutation(np.arange(1.0, 10_001.0))
    assert percentile_interval(values, 0.95) == (250.0, 9750.0, 0)
    with_nan = np.r_[np.arange(40.0, 0.0, -1.0), [np.nan, np.nan]]
    assert percentile_interval(with_nan, 0.95) == (1.0, 39.0, 2)
    assert np.isnan(percentile_interval([np.nan], 0.95)[0])
    with pytest.raises(ConfigError, match="n_resamples=39 is too small"):
        order_statistic_ranks(39, 0.95)


def test_interval_agrees_with_scipy_percentile_bootstrap_on_one_stratum(data_factory):
    y, s, src = data_factory(24, n=400, decimals=2)
    t = 0.55
    res = bootstrap_headline(
        y, s, src, thresholds=[t], strata=np.zeros(y.size), seed=3, n_resamples=10_000
    )

    def f1_stat(yy, ss, axis=-1):
        blocked = ss >= t
        tp = np.sum(blocked & (yy == 1), axis=axis)
        fp = np.sum(blocked & (yy == 0), axis=axis)
        fn = np.sum(~blocked & (yy == 1), axis=axis)
        return 2 * tp / (2 * tp + fp + fn)

    def auc_stat(yy, ss, axis=-1):
        ranks = stats.rankdata(ss, axis=axis)
        n1 = yy.sum(axis=axis)
        n0 = yy.shape[axis] - n1
        return ((ranks * yy).sum(axis=axis) - n1 * (n1 + 1) / 2) / (n1 * n0)

    for stat, ci in ((f1_stat, res.at[t]["f1"]), (auc_stat, res.auc)):
        ref = stats.bootstrap(
            (y, s),
            stat,
            paired=True,
            vectorized=True,
            n_resamples=10_000,
            method="percentile",
            rng=np.random.default_rng(4),
        ).confidence_interval
        # Monte-Carlo error of a 2.5% endpoint at B = 10,000 is ~0.001 here.
        assert ci.low == pytest.approx(ref.low, abs=0.006)
        assert ci.high == pytest.approx(ref.high, abs=0.006)


def test_seeded_determinism_and_thread_independence(data_factory):
    y, s, src = data_factory(25, n=700)
    kw = {"thresholds": [0.4, 0.6], "n_resamples": 2000, "return_replicates": True}
    a = bootstrap_headline(y, s, src, seed=7, n_jobs=1, **kw)
    b = bootstrap_headline(y, s, src, seed=7, n_jobs=2, **kw)
    c = bootstrap_headline(y, s, src, seed=8, n_jobs=1, **kw)
    d = bootstrap_headline(y, s, src, seed=np.random.SeedSequence(7), n_jobs=1, **kw)
    for key in a.replicates:
        assert np.array_equal(a.replicates[key], b.replicates[key], equal_nan=True)
        assert np.array_equal(a.replicates[key], d.replicates[key], equal_nan=True)
    assert a.to_frame().equals(b.to_frame())
    assert not np.array_equal(a.replicates["auc"], c.replicates["auc"])
    assert (a.auc.low, a.auc.high) != (c.auc.low, c.auc.high)


def test_headline_ci_covers_estimate_and_twins_share_resamples(data_factory):
    y, s, src = data_factory(26, n=800)
    res = bootstrap_headline(
        y, s, src, thresholds=[0.5], seed=0, n_resamples=1000, return_replicates=True
    )
    for ci in [res.auc, *res.at[0.5].values()]:
        assert ci.low <= ci.estimate <= ci.high
        assert ci.n_resamples == 1000 and ci.level == 0.95
    reps = res.replicates
    # same draws: recall and F1 replicates move together
    assert np.corrcoef(reps["recall@0"], reps["f1@0"])[0, 1] > 0.3
    frame = res.to_frame()
    assert set(frame["metric"]) == {
        "auc",
        "f1",
        "precision",
        "recall",
        "fpr",
        "macro_f1",
        "macro_fpr",
    }


def test_dataset_intervals_match_row_resampling(data_factory):
    y, s, src = data_factory(27, n=2000)
    m = src == "s3"
    y, s = y[m], s[m]
    d = dataset_intervals(y, s, threshold=0.5, metric="f1", seed=0, n_resamples=10_000)
    row = bootstrap_headline(
        y, s, np.full(y.size, "x"), thresholds=[0.5], strata=y, seed=1, n_resamples=10_000
    )
    lo, hi = d.intervals[0.95]
    assert lo == pytest.approx(row.at[0.5]["f1"].low, abs=0.01)
    assert hi == pytest.approx(row.at[0.5]["f1"].high, abs=0.01)
    assert d.estimate == pytest.approx(row.at[0.5]["f1"].estimate)
    # nested intervals widen with the level
    widths = [d.intervals[lv][1] - d.intervals[lv][0] for lv in (0.5, 0.8, 0.95, 0.99)]
    assert widths == sorted(widths) and widths[0] > 0
    assert d.ci(0.95).low == lo
    assert d.small_n == (y.size < 200)


def test_by_source_intervals_flags_small_n_and_uses_primary_metric(data_factory):
    y, s, src = data_factory(28, n=1500, n_sources=10)
    table = by_source_intervals(y, s, src, threshold=0.5, seed=0, n_resamples=500)
    assert table.loc["s0", "metric"] == "oda" and table.loc["s1", "metric"] == "recall"
    assert (table["small_n"] == (table["n"] < 200)).all()
    assert table["small_n"].any()
    assert {"low_95", "high_95", "low_50", "high_99"} <= set(table.columns)
    assert (table["low_99"] <= table["low_95"]).all() and (table["low_95"] <= table["low_50"]).all()


def test_subsample_interval_matches_brute_force(data_factory):
    y, s, _ = data_factory(29, n=1000)
    n, t = 150, 0.5
    ci = subsample_interval(y, s, threshold=t, n=n, metric="recall", seed=0, n_resamples=4000)
    rng = np.random.default_rng(1)
    reps = []
    for _ in range(4000):
        idx = rng.choice(y.size, n, replace=False)
        yy, bb = y[idx], s[idx] >= t
        reps.append((bb & (yy == 1)).sum() / (yy == 1).sum())
    assert ci.low == pytest.approx(np.quantile(reps, 0.025), abs=0.03)
    assert ci.high == pytest.approx(np.quantile(reps, 0.975), abs=0.03)
    assert ci.method == "subsample"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"level": 1.0}, "level must be in (0, 1)"),
        ({"n_resamples": 0}, "n_resamples must be an integer >= 1"),
        ({"seed": -1}, "seed must be a non-negative int"),
        ({"seed": 1.5}, "seed must be a non-negative int"),
        ({"strata": [0, 1]}, "strata must be 1-D with one entry per row"),
    ],
)
def test_bad_bootstrap_arguments(data_factory, kwargs, needle):
    y, s, src = data_factory(30, n=100)
    args = {"thresholds": [0.5], "seed": 0, "n_resamples": 100} | kwargs
    with pytest.raises(ConfigError) as exc:
        bootstrap_headline(y, s, src, **args)
    assert needle in str(exc.value)


def test_subsample_rejects_bad_n_and_metric(data_factory):
    y, s, _ = data_factory(31, n=100)
    with pytest.raises(ConfigError, match="n=500 exceeds the 100 rows"):
        subsample_interval(y, s, threshold=0.5, n=500, metric="f1", seed=0)
    with pytest.raises(ConfigError, match="AUC needs row identity"):
        subsample_interval(y, s, threshold=0.5, n=50, metric="auc", seed=0)
