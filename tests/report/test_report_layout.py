"""Every figure the report builds keeps its artists where a reader can see them.

Each FigureSpec is drawn from the synthetic runs on the Agg canvas and checked
with :mod:`figure_layout`: whole markers inside the axes, legends and texts
inside the figure, no legend on top of data, no subscript spelled with ``_``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from figure_layout import clipped_points, draw, legends_over_data, problems
from matplotlib.figure import Figure
from report_synthetic import edited

from gatebench.report import FIGURES, load_run
from gatebench.report.figures import Prepared, prepare
from gatebench.report.figures._competitors import published_ranking
from gatebench.report.figures._style import style

BY_NUMBER = {spec.number: spec for spec in FIGURES}


@pytest.fixture(scope="module")
def prepared(full_run: Path, bare_run: Path) -> dict[str, dict[int, Prepared]]:
    out = {}
    for name, folder in (("full", full_run), ("bare", bare_run)):
        out[name] = {
            spec.number: got for spec, got in prepare(load_run(folder)) if isinstance(got, Prepared)
        }
    return out


def _drawn(number: int, data: Any) -> Figure:
    with style():
        return BY_NUMBER[number].draw(data)


@pytest.mark.parametrize("number", sorted(BY_NUMBER))
def test_artists_stay_inside(number: int, prepared: dict[str, dict[int, Prepared]]) -> None:
    drawn = [(run, got[number]) for run, got in prepared.items() if number in got]
    assert drawn, f"figure {number} has no data in the synthetic runs"
    for run, got in drawn:
        with style():
            found = problems(BY_NUMBER[number].draw(got.data))
        assert found == [], f"figure {number} ({run} run): " + "; ".join(found)


def test_the_check_sees_a_half_clipped_marker_and_a_covering_legend() -> None:
    """The checks fail on the defects they guard against (a test that cannot fail is no test)."""
    with style():
        fig = Figure()
        ax = fig.add_subplot()
        ax.scatter([0.0, 0.5], [0.5, 1.0], s=40, label="edge")
        ax.bar([0.1], [1.0], width=0.2)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.legend(loc="upper left")
        renderer = draw(fig)
        assert len(clipped_points(fig)) == 1
        assert legends_over_data(fig, renderer)


def test_adversarial_folds_are_grouped_by_pass(prepared: dict[str, dict[int, Prepared]]) -> None:
    """Ten bars labelled 0-4 twice are two passes: each group carries its pass's name."""
    data = prepared["full"][2].data
    assert [g["pass"] for g in data["groups"]] == ["strat", "sgk"]  # headline pass first
    assert [g["folds"] for g in data["groups"]] == [[0, 1, 2, 3, 4]] * 2
    fig = _drawn(2, data)
    draw(fig)
    texts = {t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))}
    assert {"StratifiedKFold (headline)", "StratifiedGroupKFold (leakage)"} <= texts
    assert "Bars are grouped by CV pass" in prepared["full"][2].caption


def test_adversarial_reads_labelled_folds_without_by_fold(full_run: Path) -> None:
    """Older layout: only the figure's ``"<pass> <fold>"`` labels; still grouped by pass."""

    def drop_by_fold(result: dict[str, Any]) -> None:
        for d in result["diagnostics"]:
            if d["name"] == "adversarial_validation":
                d["statistics"].pop("by_fold")

    got = BY_NUMBER[2].extract(edited(load_run(full_run), drop_by_fold))
    assert isinstance(got, Prepared)
    assert [(g["pass"], g["folds"]) for g in got.data["groups"]] == [
        ("strat", ["0", "1", "2", "3", "4"]),
        ("sgk", ["0", "1", "2", "3", "4"]),
    ]


def test_benign_fpr_draws_each_system_once(full_run: Path) -> None:
    """Two sources publish protectai-v2 on notinject: one bar, its best value, either schema."""
    run = load_run(full_run)
    row = next(r for r in run.comparison("leaderboard") if r["dataset"] == "notinject")
    assert [c["system"] for c in row["competitors"]].count("protectai-v2") == 2

    def drop_ranking(result: dict[str, Any]) -> None:
        for r in result["comparisons"]["leaderboard"]:
            r.pop("ranking")  # as written before the leaderboard stored its ranking

    for either in (run, edited(run, drop_ranking)):
        got = BY_NUMBER[18].extract(either)
        assert isinstance(got, Prepared)
        systems = [r["system"] for r in got.data["panels"][0]["rows"]]
        assert len(systems) == len(set(systems)), systems
        protect = next(r for r in got.data["panels"][0]["rows"] if r["system"] == "protectai-v2")
        assert protect["fpr"] == pytest.approx(1 - 0.6)  # the better of 0.6 and 0.5664
    assert [c["label"] for c in published_ranking(row)] == [
        c["label"] for c in row["ranking"] if c["metric"] == "oda"
    ]
