"""The HTML report: one self-contained file, every figure it can draw, exact numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from report_html import Element, parse

from gatebench.errors import ConfigError, SchemaError
from gatebench.report import FIGURES, render_report, report_command
from gatebench.report.fmt import ci, num, pct, rate_digits

ALL = {spec.number for spec in FIGURES}
#: Figures that need diagnostics or comparisons, which a bare engine run lacks.
NEED_EXTRAS = {2, 7, 8, 9, 10, 11, 16, 17, 18, 19}
URL_ATTRS = {"src", "href", "xlink:href", "action", "poster", "srcset", "data", "formaction"}


def _tree(path: Path) -> Element:
    return parse(path.read_text(encoding="utf-8"))


def _resolve(result: dict[str, Any], key: str) -> Any:
    node: Any = result
    for part in key.split("."):
        node = node[part]
    return node


def _external_refs(root: Element) -> list[str]:
    """Every attribute or stylesheet reference that would leave the page."""
    bad = []
    for el in root.iter():
        for name, value in el.attrs.items():
            v = value.strip().lower()
            if name in URL_ATTRS and v and not (v.startswith("#") or v.startswith("data:")):
                bad.append(f"<{el.tag} {name}={value!r}>")
            if name == "style" and "url(" in v and "url(#" not in v:
                bad.append(f"<{el.tag} style={value!r}>")
        if el.tag in {"script", "link", "iframe", "object", "embed", "img", "base"}:
            bad.append(f"<{el.tag}>")
    return bad


@pytest.mark.parametrize("which", ["full_report", "bare_report"])
def test_one_self_contained_file(which: str, request: pytest.FixtureRequest) -> None:
    path: Path = request.getfixturevalue(which)
    assert path.name == "report.html"
    assert sorted(p.name for p in path.parent.glob("*.html")) == ["report.html"]
    text = path.read_text(encoding="utf-8")
    root = parse(text)
    assert _external_refs(root) == []
    styles = " ".join(el.text for el in root.iter("style"))
    assert "@import" not in styles and "@font-face" not in styles
    assert re.findall(r"url\((?!#)", styles) == []
    # No DOCTYPE or RDF block of an inlined SVG survived (both cite http URLs).
    assert "svg11.dtd" not in text and "rdf:resource" not in text


def test_ids_are_unique(full_report: Path) -> None:
    ids = [el.attrs["id"] for el in _tree(full_report).iter() if "id" in el.attrs]
    dupes = {i for i in ids if ids.count(i) > 1}
    assert not dupes, sorted(dupes)[:10]


def _figures(root: Element) -> dict[int, Element]:
    out = {}
    for el in root.iter():
        if "data-figure" in el.attrs:
            n = int(el.attrs["data-figure"])
            assert n not in out, f"figure {n} appears twice"
            out[n] = el
    return out


def test_every_figure_with_data_is_drawn(full_report: Path) -> None:
    figs = _figures(_tree(full_report))
    assert set(figs) == ALL
    assert {n for n, el in figs.items() if el.tag == "figure" and el.find("svg")} == ALL


def test_every_figure_has_alt_text_and_caption(full_report: Path) -> None:
    for n, el in _figures(_tree(full_report)).items():
        svg = el.find("svg")
        assert svg is not None, n
        assert svg.attrs.get("role") == "img"
        alt = svg.attrs.get("aria-label", "")
        assert len(alt) > 30, (n, alt)
        title = svg.find("title")
        assert title is not None and title.text == " ".join(alt.split())
        caption = el.find("figcaption")
        assert caption is not None
        assert caption.text.startswith(f"Figure {n}.")
        assert len(caption.text) > 120, (n, caption.text)


def test_absent_figures_are_one_line_reasons(bare_report: Path) -> None:
    figs = _figures(_tree(bare_report))
    assert set(figs) == ALL
    absent = {n for n, el in figs.items() if el.attrs.get("data-absent") == "true"}
    assert absent == NEED_EXTRAS
    for n in absent:
        el = figs[n]
        assert el.tag == "p" and el.find("svg") is None
        text = el.text
        assert text.startswith(f"Figure {n}.") and " left out: " in text
        reason = text.split(" left out: ", 1)[1]
        assert reason and "\n" not in reason and len(reason) < 300
    drawn = ALL - absent
    assert all(figs[n].tag == "figure" for n in drawn)


@pytest.mark.parametrize("which", ["full", "bare"])
def test_headline_table_equals_result_json(which: str, request: pytest.FixtureRequest) -> None:
    report: Path = request.getfixturevalue(f"{which}_report")
    result = json.loads((report.parent / "result.json").read_text())
    table = next(el for el in _tree(report).iter("table") if el.attrs.get("id") == "headline-table")
    cells = [el for el in table.iter("td") if "data-key" in el.attrs]
    seen = set()
    for cell in cells:
        key = cell.attrs["data-key"]
        expected = _resolve(result, key)
        seen.add(key)
        if key.endswith(".threshold"):
            assert float(cell.attrs["data-value"]) == expected
            assert cell.text == num(expected, 4)
            continue
        metric = key.rsplit(".", 1)[1]
        assert float(cell.attrs["data-value"]) == expected, key
        value_text = cell.find("span").text  # type: ignore[union-attr]
        assert value_text == pct(expected, rate_digits(metric)), key
        interval = _resolve(result, key.rsplit(".", 1)[0]).get("ci", {}).get(metric)
        if interval:
            assert float(cell.attrs["data-ci-low"]) == interval["low"]
            assert float(cell.attrs["data-ci-high"]) == interval["high"]
            assert ci(interval["low"], interval["high"], rate_digits(metric)) in cell.text
    for point in ("headline", "natural"):
        for agg in ("micro", "macro"):
            for metric in ("f1", "precision", "recall", "fpr"):
                assert f"metrics.{point}.{agg}.{metric}" in seen
    # Every interval result.json stores is shown, and only those: micro for every
    # metric, macro for F1 and FPR.
    stored = sum(
        len(result["metrics"][p][agg].get("ci", {}))
        for p in ("headline", "natural")
        for agg in ("micro", "macro")
    )
    assert stored == 2 * (4 + 2)
    assert sum("data-ci-low" in c.attrs for c in cells) == stored


def test_operating_point_stated_plainly(bare_report: Path) -> None:
    result = json.loads((bare_report.parent / "result.json").read_text())
    op = result["operating_point"]
    root = _tree(bare_report)
    section = next(el for el in root.iter("section") if el.attrs.get("id") == "operating-point")
    text = section.text
    # θ_op is typeset as θ<sub>op</sub>; the parsed text reads "θ op".
    assert f"θ op = {op['threshold']:.4f}" in text
    assert f"τ = {pct(op['target_fpr'], 2)}" in text
    assert f"Achieved FPR {pct(op['fpr'], 2)}" in text
    header = next(el for el in root.iter("dl") if el.attrs.get("id") == "provenance").text
    assert result["trace"]["trace_id"] in header
    assert str(result["config"]["seed"]) in header and "numpy" in header


def test_tables_present(full_report: Path) -> None:
    root = _tree(full_report)
    ids = {el.attrs.get("id") for el in root.iter()}
    for table in (
        "leaderboard-table",
        "competitors-table",
        "diagnostics-table",
        "conflicts-table",
        "licences-table",
        "composition-table",
    ):
        assert table in ids
    assert len([t for t in root.iter("table") if "fold-table" in t.attrs.get("class", "")]) == 2
    statuses = [el.attrs["data-status"] for el in root.iter("tr") if "data-status" in el.attrs]
    assert statuses[0] == "FAIL" and "NOT_APPLICABLE" in statuses
    glossary = next(el for el in root.iter("dl") if "glossary" in el.attrs.get("class", ""))
    terms = {dt.text for dt in glossary.iter("dt")}
    for term in ("F1", "FPR", "ODA", "AUC", "ECE", "Brier score", "Micro", "Macro"):
        assert term in terms
    # Text from the run is escaped, never interpreted as markup.
    assert "<system>" in full_report.read_text().replace("&lt;system&gt;", "<system>")
    assert "<system>" not in full_report.read_text()


def test_figure_files_written(full_report: Path) -> None:
    folder = full_report.parent / "figures"
    for spec in FIGURES:
        png, svg = folder / f"{spec.slug}.png", folder / f"{spec.slug}.svg"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
        assert svg.read_text().lstrip().startswith("<?xml"), svg


def test_result_md(full_report: Path, bare_report: Path) -> None:
    full = (full_report.parent / "result.md").read_text()
    result = json.loads((full_report.parent / "result.json").read_text())
    assert pct(result["metrics"]["headline"]["micro"]["f1"]) in full
    for row in result["by_source"]:
        assert row["source"] in full
    assert "**FAIL** `length_bias`" in full and "**WARN** `lodo`" in full
    assert "[report.html](report.html)" in full
    bare = (bare_report.parent / "result.md").read_text()
    assert "No diagnostics are recorded" in bare
    assert "10 left out" in bare


def test_out_path_and_errors(
    bare_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    # The wiring only: rendering itself is covered by the session fixtures.
    monkeypatch.setattr(
        "gatebench.report.render_report", lambda run_dir, out: calls.append((run_dir, out)) or out
    )
    assert report_command(bare_run, tmp_path / "r.html") == tmp_path / "r.html"
    assert calls == [(bare_run, tmp_path / "r.html")]
    monkeypatch.undo()
    with pytest.raises(ConfigError, match="not a directory"):
        report_command(tmp_path / "missing")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "result.json").write_text('{"schema_version": "0.1"}')
    with pytest.raises(SchemaError, match="schema_version"):
        report_command(tmp_path / "old")


def test_odd_diagnostic_layout_costs_one_figure(bare_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "odd"
    run.mkdir()
    result = json.loads((bare_run / "result.json").read_text())
    # Valid records whose figure data a plug-in laid out in a way no figure reads.
    verdict = {"status": "PASS", "tier": "cheap", "reason": "", "criterion": ""}
    result["diagnostics"] = [
        {"name": "lodo", **verdict, "figure": {"per_source": "not a table"}},
        {"name": "length_bias", **verdict, "figure": {"overall": "high"}},
    ]
    (run / "result.json").write_text(json.dumps(result))
    root = _tree(render_report(run, write_files=False))
    figs = _figures(root)
    assert figs[7].attrs.get("data-absent") == "true"
    assert figs[9].attrs.get("data-absent") == "true"
    assert figs[4].tag == "figure"
    assert not (run / "figures").exists() and not (run / "result.md").exists()


def test_real_run(real_run: Path, tmp_path: Path) -> None:
    """On a real run directory ($GATEBENCH_REPORT_RUN): the same structural guarantees."""
    report = render_report(real_run, tmp_path / "report.html", write_files=False)
    root = _tree(report)
    assert _external_refs(root) == []
    figs = _figures(root)
    assert set(figs) == ALL
    for n, el in figs.items():
        if el.tag == "figure":
            assert el.find("svg").attrs.get("aria-label")  # type: ignore[union-attr]
            assert el.find("figcaption") is not None
        else:
            assert " left out: " in el.text, n
    for n in (1, 3, 4, 5, 6, 12, 13, 14, 15):
        assert figs[n].tag == "figure", f"figure {n} has data in every engine run"


def test_pool_draws_the_same_figures(bare_run: Path, bare_report: Path, tmp_path: Path) -> None:
    """Drawing in two spawned processes gives the same page as drawing here."""
    pooled = render_report(bare_run, tmp_path / "pooled.html", write_files=False, n_jobs=2)
    a, b = _figures(_tree(bare_report)), _figures(_tree(pooled))
    assert {n: el.tag for n, el in a.items()} == {n: el.tag for n, el in b.items()}
    for n, el in a.items():
        if el.tag == "figure":
            assert el.find("svg").attrs["aria-label"] == b[n].find("svg").attrs["aria-label"]  # type: ignore[union-attr]


def test_summary_comes_first_and_lists_every_non_passing_check(full_report: Path) -> None:
    text = full_report.read_text(encoding="utf-8")
    result = json.loads((full_report.parent / "result.json").read_text())
    assert text.index('id="summary"') < text.index('id="provenance"')
    assert text.index('id="summary"') < text.index('id="operating-point"')
    root = _tree(full_report)
    listed = {el.attrs["data-status"]: el for el in root.iter("li") if "data-status" in el.attrs}
    items = [el for el in root.iter("li") if "data-status" in el.attrs]
    expected = sorted(
        d["name"] for d in result["diagnostics"] if d["status"].upper() in ("WARN", "FAIL")
    )
    assert expected, "the synthetic run should carry at least one non-passing check"
    names = sorted(
        a.attrs["href"].removeprefix("#diag-")
        for li in items
        for a in li.iter("a")
        if a.attrs.get("href", "").startswith("#diag-")
    )
    assert names == expected
    ids = {el.attrs.get("id") for el in root.iter("tr")}
    assert all(f"diag-{n}" in ids for n in names)
    assert set(listed) <= {"WARN", "FAIL"}
    f1 = result["metrics"]["headline"]["micro"]["f1"]
    assert pct(f1) in text[text.index('id="summary"') : text.index('id="provenance"')]


def test_the_summary_names_the_rows_the_trace_refused(full_report: Path, bare_report: Path) -> None:
    root = _tree(full_report)
    (line,) = [el for el in root.iter("p") if el.attrs.get("id") == "summary-refused"]
    text = " ".join(line.text.split())
    assert "5 input rows refused and left out of every number (the first 3)" in text
    assert "mine.jsonl:4: missing text; mine.jsonl:9" in text and "mine.jsonl:23" not in text
    assert "trace_info.json" in text
    html = full_report.read_text(encoding="utf-8")
    assert html.index('id="summary-refused"') < html.index('id="provenance"')
    assert 'id="summary-refused"' not in bare_report.read_text(encoding="utf-8")
    markdown = (full_report.parent / "result.md").read_text(encoding="utf-8")
    assert "**Refused input rows.** 5 input rows refused" in markdown
    assert "Refused input rows" not in (bare_report.parent / "result.md").read_text()
