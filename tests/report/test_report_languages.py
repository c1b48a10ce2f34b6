"""Figure 21, the per-language forest plot: what it reads, what it draws, when it is left out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from figure_layout import draw, problems
from report_html import parse
from report_synthetic import edited

from gatebench.report import FIGURES, load_run
from gatebench.report.figures import Absent, Prepared
from gatebench.report.figures._style import style
from gatebench.report.figures.language import LANGUAGES

BY_NUMBER = {spec.number: spec for spec in FIGURES}


def test_it_is_registered_in_a_report_section() -> None:
    from gatebench.report.html import SECTIONS

    assert BY_NUMBER[21] is LANGUAGES
    assert any(21 in numbers for _, _, numbers in SECTIONS)


def test_rows_are_the_results_rows_grouped_by_metric(full_run: Path) -> None:
    run = load_run(full_run)
    got = LANGUAGES.extract(run)
    assert isinstance(got, Prepared)
    rows = got.data["rows"]
    stored = {r.language: r for r in run.result.by_language}
    assert len(rows) == len(stored)
    assert [r["group"] for r in rows] == sorted(
        (r["group"] for r in rows), key=["f1", "recall", "oda"].index
    )
    for r in rows:
        code = r["label"].split(" ", 1)[0]
        row = stored[code]
        assert r["estimate"] == row.primary and r["group"] == row.primary_metric
        assert row.primary_ci is not None
        assert (r["low"], r["high"]) == (row.primary_ci.low, row.primary_ci.high)
        assert f"n={row.n:,}" in r["label"]
    # The undetermined row closes its group.
    f1 = [r["label"].split(" ", 1)[0] for r in rows if r["group"] == "f1"]
    assert f1[-1] == "und" and f1[0] == "en"


def test_caption_says_where_languages_came_from_and_what_is_left_out(full_run: Path) -> None:
    run = load_run(full_run)
    got = LANGUAGES.extract(run)
    assert isinstance(got, Prepared)
    info = run.result.trace.languages
    assert f"{info['detected']:,} were identified by py3langid 0.4.0" in got.caption
    assert "1 languages with fewer than 20 prompts" in got.caption
    assert "95% bootstrap interval" in got.alt


def test_drawn_with_every_label_inside(full_run: Path) -> None:
    got = LANGUAGES.extract(load_run(full_run))
    assert isinstance(got, Prepared)
    with style():
        fig = LANGUAGES.draw(got.data)
        draw(fig)
        assert problems(fig) == []
    ticks = {t.get_text() for t in fig.axes[0].get_yticklabels()}
    assert any(t.startswith("de (German) · n=") for t in ticks)
    assert "RECALL · attacks only" in ticks and "ODA = 1 − FPR · benign only" in ticks


def _without_languages(result: dict[str, Any]) -> None:
    result.pop("by_language")
    result.pop("by_language_skipped")
    result["trace"].pop("languages")


def test_a_run_without_languages_leaves_it_out_with_a_reason(full_run: Path) -> None:
    got = LANGUAGES.extract(edited(load_run(full_run), _without_languages))
    assert isinstance(got, Absent)
    assert "no per-language results" in got.reason


def test_a_run_whose_languages_are_all_small_says_so(full_run: Path) -> None:
    def all_small(result: dict[str, Any]) -> None:
        result["by_language_skipped"] = {r["language"]: 5 for r in result["by_language"]}
        result["by_language"] = []

    got = LANGUAGES.extract(edited(load_run(full_run), all_small))
    assert isinstance(got, Absent)
    assert "reaches 20 headline prompts" in got.reason


def test_the_report_shows_it_in_the_per_dataset_section(full_report: Path) -> None:
    root = parse(full_report.read_text(encoding="utf-8"))
    fig = next(el for el in root.iter("figure") if el.attrs.get("data-figure") == "21")
    assert fig.find("svg") is not None
    caption = fig.find("figcaption")
    assert caption is not None and caption.text.startswith("Figure 21. Per-language forest plot")


def test_result_md_lists_every_language_row(full_run: Path) -> None:
    from gatebench.report.markdown import render_result_md

    run = load_run(full_run)
    text = render_result_md(run)
    assert "## Per language" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and " | " in line]
    for row in run.result.by_language:
        assert any(line.startswith(f"| {row.language} | {row.n} |") for line in rows), row.language
