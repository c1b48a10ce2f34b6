"""Figure 22, the per-position forest plot, and the per-position table of result.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from figure_layout import draw, problems
from report_html import parse
from report_synthetic import edited

from gatebench.report import FIGURES, load_run
from gatebench.report.figures import Absent, Prepared
from gatebench.report.figures._style import style
from gatebench.report.figures.position import POSITIONS

BY_NUMBER = {spec.number: spec for spec in FIGURES}


def test_it_is_registered_in_a_report_section() -> None:
    from gatebench.report.html import SECTIONS

    assert BY_NUMBER[22] is POSITIONS
    assert max(BY_NUMBER) == 22
    assert any(22 in numbers for _, _, numbers in SECTIONS)


def test_rows_are_the_results_rows_grouped_by_metric(full_run: Path) -> None:
    run = load_run(full_run)
    stored = {r.position: r for r in run.result.by_position}
    # The synthetic run puts advbench (attacks only) in tool results, half of deepset in documents.
    assert set(stored) == {"user", "tool", "document"}
    assert stored["tool"].primary_metric == "recall" and stored["tool"].n == 150
    assert stored["document"].n == 150 and stored["document"].n_attack == 70
    got = POSITIONS.extract(run)
    assert isinstance(got, Prepared)
    rows = got.data["rows"]
    assert [r["label"].split(" · ")[0] for r in rows] == ["user turn", "document", "tool result"]
    assert [r["group"] for r in rows] == ["f1", "f1", "recall"]
    for r, name in zip(rows, ("user", "document", "tool"), strict=True):
        row = stored[name]
        assert row.primary_ci is not None
        assert (r["estimate"], r["low"], r["high"]) == (
            row.primary,
            row.primary_ci.low,
            row.primary_ci.high,
        )
        assert f"n={row.n:,}" in r["label"]


def test_caption_names_the_sources_that_are_not_user_turns(full_run: Path) -> None:
    got = POSITIONS.extract(load_run(full_run))
    assert isinstance(got, Prepared)
    assert "tool result: advbench; document: deepset-prompt-injections" in got.caption
    assert "3 positions in an agent's input" in got.alt and "95% bootstrap interval" in got.alt


def test_drawn_with_every_label_inside(full_run: Path) -> None:
    got = POSITIONS.extract(load_run(full_run))
    assert isinstance(got, Prepared)
    with style():
        fig = POSITIONS.draw(got.data)
        draw(fig)
        assert problems(fig) == []
    ticks = {t.get_text() for t in fig.axes[0].get_yticklabels()}
    assert any(t.startswith("tool result · n=150") for t in ticks)
    assert "RECALL · attacks only" in ticks and "F1 · attacks and benign" in ticks
    assert "position" in fig.axes[0].get_title()


def _without_positions(result: dict[str, Any]) -> None:
    result.pop("by_position")
    result.pop("by_position_skipped")


def test_a_run_without_positions_leaves_it_out_with_a_reason(full_run: Path) -> None:
    got = POSITIONS.extract(edited(load_run(full_run), _without_positions))
    assert isinstance(got, Absent)
    assert "no per-position results" in got.reason


def test_a_run_whose_positions_are_all_small_says_so(full_run: Path) -> None:
    def all_small(result: dict[str, Any]) -> None:
        result["by_position_skipped"] = {r["position"]: 5 for r in result["by_position"]}
        result["by_position"] = []

    got = POSITIONS.extract(edited(load_run(full_run), all_small))
    assert isinstance(got, Absent)
    assert "no position reaches 20 headline prompts (3 positions" in got.reason


def test_the_report_shows_it_in_the_per_dataset_section(full_report: Path) -> None:
    root = parse(full_report.read_text(encoding="utf-8"))
    fig = next(el for el in root.iter("figure") if el.attrs.get("data-figure") == "22")
    assert fig.find("svg") is not None
    caption = fig.find("figcaption")
    assert caption is not None and caption.text.startswith("Figure 22. Per-position forest plot")


def test_result_md_lists_every_position_row(full_run: Path) -> None:
    from gatebench.report.markdown import render_result_md

    run = load_run(full_run)
    text = render_result_md(run)
    assert "## Per position in the input" in text
    lines = text.splitlines()
    for row in run.result.by_position:
        line = next(x for x in lines if x.startswith(f"| {row.position} | {row.n} |"))
        assert f"| {row.n_attack} | {row.n_benign} | {row.primary_metric} |" in line
    without = edited(run, _without_positions)
    assert "## Per position" not in render_result_md(without)
