"""What the report says: system names from the run, n/a where a metric is undefined,
the macro FPR with its interval, and captions that match what a check measures."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from report_html import Element, parse
from report_synthetic import edited
from sklearn.metrics import confusion_matrix

from gatebench.report import FIGURES, RunData, load_run, render_report
from gatebench.report.figures import Prepared, names, prepare
from gatebench.report.fmt import ci, pct
from gatebench.report.summary import macro_fpr
from gatebench.report.tables import leaderboard_rows

BY_NUMBER = {spec.number: spec for spec in FIGURES}


def _tree(path: Path) -> Element:
    return parse(path.read_text(encoding="utf-8"))


def _by_id(root: Element, ident: str) -> Element:
    return next(el for el in root.iter() if el.attrs.get("id") == ident)


def _renamed(run: RunData, detector: str) -> RunData:
    def rename(result: dict[str, Any]) -> None:
        result["detector"]["name"] = detector

    return edited(run, rename)


# -- names ------------------------------------------------------------------------------


def test_titles_and_captions_name_the_runs_detector(full_run: Path, full_report: Path) -> None:
    """The synthetic run is tfidf-lr: no caption or title may call it Gate or 'this detector'."""
    result = json.loads((full_run / "result.json").read_text())
    assert result["detector"]["name"] == "tfidf-lr"
    root = _tree(full_report)
    captions = {
        int(el.attrs["data-figure"]): el.find("figcaption").text  # type: ignore[union-attr]
        for el in root.iter("figure")
        if "data-figure" in el.attrs
    }
    for n, text in captions.items():
        assert not re.search(r"\bGate\b", text), (n, text)
        assert "this detector" not in text.lower(), (n, text)
    assert captions[19].startswith("Figure 19. tfidf-lr vs lakera-guard at matched FPR")
    for n in (16, 17, 18, 19, 20):
        assert "tfidf-lr" in captions[n], n
    toc = next(el for el in root.iter("nav")).text
    assert "Figure 19. tfidf-lr vs lakera-guard at matched FPR" in toc
    svg19 = (full_run / "figures" / f"{BY_NUMBER[19].slug}.svg").read_text()
    assert "tfidf-lr vs lakera-guard at matched FPR" in svg19 and "Gate" not in svg19
    header = [el.text for el in _by_id(root, "competitors-table").iter("th")]
    assert "vs lakera-guard" in header


def test_names_follow_the_run_not_the_code(full_run: Path) -> None:
    """Rename the detector in result.json: every caption, legend and title follows."""
    run = _renamed(load_run(full_run), "gate")
    assert names(run) == {"detector": "gate", "competitor": "lakera-guard"}
    assert BY_NUMBER[19].heading(names(run)) == "gate vs lakera-guard at matched FPR"
    got = {spec.number: p for spec, p in prepare(run) if isinstance(p, Prepared)}
    for n in (16, 17, 18, 19, 20):
        assert "gate" in got[n].caption and "tfidf-lr" not in got[n].caption, n
        assert got[n].data["detector"] == "gate"
    # A blank name in result.json gives neutral words, never another system's name.
    assert _renamed(run, " ").detector == "this detector"


# -- leaderboard ------------------------------------------------------------------------


def _leaderboard_cells(root: Element) -> dict[str, dict[str, str]]:
    table = _by_id(root, "leaderboard-table")
    heads = [th.text for th in table.iter("th")]
    out = {}
    for tr in table.iter("tr")[1:]:
        cells = [td.text for td in tr.iter("td")]
        out[cells[0].replace(" small n", "")] = dict(zip(heads, cells, strict=True))
    return out


def test_undefined_leaderboard_metrics_read_na(full_run: Path, full_report: Path) -> None:
    """notinject has no attacks: result.json stores precision 0.0, the table shows n/a."""
    stored = {
        r["source"]: r for r in json.loads((full_run / "result.json").read_text())["by_source"]
    }
    assert stored["notinject"]["n_pos"] == 0 and stored["notinject"]["precision"] == 0.0
    cells = _leaderboard_cells(_tree(full_report))
    benign = cells["notinject"]
    assert (benign["F1"], benign["precision"], benign["recall"], benign["AUC"]) == ("n/a",) * 4
    assert benign["FPR"] == pct(stored["notinject"]["fpr"], 2)
    attack = cells["advbench"]
    assert (attack["FPR"], attack["AUC"]) == ("n/a", "n/a")
    assert attack["precision"] == pct(stored["advbench"]["precision"])
    balanced = cells["xstest"]
    assert balanced["precision"] == pct(stored["xstest"]["precision"]) != "n/a"


def test_undefined_rule_does_not_hide_values_of_runs_without_counts(full_run: Path) -> None:
    def drop_counts(result: dict[str, Any]) -> None:
        for r in result["by_source"]:
            r.pop("n_pos"), r.pop("n_neg")

    rows = {r["source"]: r for r in leaderboard_rows(edited(load_run(full_run), drop_counts))[0]}
    assert rows["xstest"]["precision"] != "n/a"


# -- macro FPR --------------------------------------------------------------------------


def _reference_macro_fpr(run_dir: Path, threshold: float) -> float:
    """sklearn's per-source FPR on the headline pass, averaged over sources with benign rows."""
    oof = pd.read_parquet(run_dir / "oof.parquet")
    head = oof[oof["pass"] == "strat"]
    rates = []
    for _, part in head.groupby("source"):
        if (part["label"] == 0).any():
            tn, fp, _, _ = confusion_matrix(
                part["label"], part["score"] >= threshold, labels=[0, 1]
            ).ravel()
            rates.append(fp / (fp + tn))
    return float(np.mean(rates))


def test_macro_fpr_has_an_interval_that_matches_a_reference(
    full_run: Path, full_report: Path
) -> None:
    result = json.loads((full_run / "result.json").read_text())
    head = result["metrics"]["headline"]
    value, interval = head["macro"]["fpr"], head["macro"]["ci"]["fpr"]
    assert value == pytest.approx(_reference_macro_fpr(full_run, head["threshold"]), abs=1e-12)
    assert interval["estimate"] == pytest.approx(value, abs=1e-12)
    assert interval["low"] < value < interval["high"]
    assert interval["n_resamples"] == head["micro"]["ci"]["fpr"]["n_resamples"]
    root = _tree(full_report)
    cell = next(
        td
        for td in _by_id(root, "headline-table").iter("td")
        if td.attrs.get("data-key") == "metrics.headline.macro.fpr"
    )
    assert float(cell.attrs["data-ci-low"]) == interval["low"]
    assert ci(interval["low"], interval["high"], 2) in cell.text
    line = _by_id(root, "summary-macro-fpr")
    assert pct(value, 2) in line.text and ci(interval["low"], interval["high"], 2) in line.text
    assert float(line.attrs["data-ci-high"]) == interval["high"]
    # Small-n drivers: fewer than 200 benign prompts and an FPR above the mean.
    drivers = sorted(
        (r for r in result["by_source"] if 0 < (r["n_neg"] or 0) < 200 and r["fpr"] > value),
        key=lambda r: -r["fpr"],
    )
    flagged = [el.text for el in line.iter("span") if "flag-source" in el.attrs.get("class", "")]
    assert flagged == [r["source"] for r in drivers] and flagged
    caption = _by_id(root, "headline-table").find("caption")
    assert caption is not None and "stored for F1 and FPR only" in caption.text


def test_a_run_without_the_macro_fpr_interval_still_reads(full_run: Path, tmp_path: Path) -> None:
    """Runs written before the interval existed: the value shows, marked as without one."""
    result = json.loads((full_run / "result.json").read_text())
    for point in ("headline", "natural"):
        del result["metrics"][point]["macro"]["ci"]["fpr"]
    (tmp_path / "result.json").write_text(json.dumps(result))
    root = _tree(render_report(tmp_path, write_files=False))
    line = _by_id(root, "summary-macro-fpr")
    assert "no interval recorded" in line.text and "data-ci-low" not in line.attrs
    caption = _by_id(root, "headline-table").find("caption")
    assert caption is not None and "stored for F1 only" in caption.text


def test_macro_fpr_names_the_small_source_driving_it(full_run: Path) -> None:
    """Hand case: 8 benign rows at FPR 50% lift a mean of 1% and 2% sources to 17.67%."""
    sources: list[dict[str, Any]] = [
        {"source": "big", "n_pos": 500, "n_neg": 1000, "fpr": 0.01},
        {"source": "tiny", "n_pos": 4, "n_neg": 8, "fpr": 0.5},
        {"source": "mid", "n_pos": 0, "n_neg": 150, "fpr": 0.02},
        {"source": "attacks", "n_pos": 300, "n_neg": 0, "fpr": None},
    ]
    mean = (0.01 + 0.5 + 0.02) / 3

    def hand_case(result: dict[str, Any]) -> None:
        macro = result["metrics"]["headline"]["macro"]
        macro["fpr"] = mean
        macro["ci"]["fpr"].update(low=0.05, high=0.3, estimate=mean)
        result["by_source"] = [
            {**s, "n": s["n_pos"] + s["n_neg"], "primary_metric": "f1"} for s in sources
        ]

    got = macro_fpr(edited(load_run(full_run), hand_case))
    assert got is not None
    assert (got["text"], got["ci"], got["n_sources"]) == ("17.67%", "[5.00, 30.00]", 3)
    assert got["drivers"] == [
        {"source": "tiny", "fpr": "50.00%", "n_neg": "8", "share": "16.67 pp"}
    ]


# -- captions ---------------------------------------------------------------------------


def test_random_label_caption_describes_a_metric_check(full_run: Path) -> None:
    """The cheap control cannot see leakage (its own reason says so): nor may its caption."""
    run = load_run(full_run)
    got = BY_NUMBER[8].extract(run)
    assert isinstance(got, Prepared)
    text = got.caption
    assert "cannot detect leakage" in text and "metric code" in text
    assert not re.search(r"\bis leakage\b", text)
    assert "tfidf-lr" in text
