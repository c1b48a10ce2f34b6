"""Per-language forest plot (21): the primary metric of every prompt language at θ_op with
its 95% bootstrap interval, grouped by the metric the language's label mix gives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from gatebench.language import UNDETERMINED
from gatebench.per_language import MIN_LANGUAGE_PROMPTS
from gatebench.report.figures._common import estimate_ticks, grouped_layout, label_groups
from gatebench.report.figures._spec import Absent, FigureSpec, Prepared
from gatebench.report.figures._style import BLUE, new_figure
from gatebench.report.fmt import is_num, pct
from gatebench.result import LanguageRow
from gatebench.rundata import RunData

__all__ = ["LANGUAGES", "draw_languages", "forest_rows"]

#: Group headings, in drawing order: the metric each group's rows are read on.
GROUPS = {
    "f1": "F1 · attacks and benign",
    "recall": "RECALL · attacks only",
    "oda": "ODA = 1 − FPR · benign only",
}

#: English names of the codes a trace is likely to hold; others show as the code alone.
NAMES = {
    "ar": "Arabic", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan", "cs": "Czech",
    "da": "Danish", "de": "German", "el": "Greek", "en": "English", "es": "Spanish",
    "et": "Estonian", "fa": "Persian", "fi": "Finnish", "fr": "French", "he": "Hebrew",
    "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian", "id": "Indonesian", "it": "Italian",
    "ja": "Japanese", "ko": "Korean", "la": "Latin", "lt": "Lithuanian", "lv": "Latvian",
    "ms": "Malay", "nl": "Dutch", "no": "Norwegian", "pl": "Polish", "pt": "Portuguese",
    "ro": "Romanian", "ru": "Russian", "sk": "Slovak", "sl": "Slovenian", "sr": "Serbian",
    "sv": "Swedish", "sw": "Swahili", "ta": "Tamil", "te": "Telugu", "th": "Thai",
    "tl": "Tagalog", "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese",
    "zh": "Chinese",
}  # fmt: skip


def draw_languages(data: Mapping[str, Any]) -> Figure:
    """Forest plot of per-language estimates with 95% interval bars.

    Parameters
    ----------
    data : mapping
        ``rows``: records ``{label, group, estimate, low, high}`` in drawing
        order, grouped by ``group`` (a key of :data:`GROUPS`).
    """
    rows = data["rows"]
    ys, headers = grouped_layout(rows, "group")
    # Wider than the per-dataset forest: the row labels carry recall and FPR too.
    fig = new_figure(8.4, 1.4 + 0.3 * (len(ys) + len(headers)))
    ax = fig.add_subplot()
    bars = [
        (y, r["low"], r["high"])
        for y, r in zip(ys, rows, strict=True)
        if is_num(r.get("low")) and is_num(r.get("high"))
    ]
    if bars:
        yy, lo, hi = zip(*bars, strict=True)
        ax.hlines(yy, lo, hi, color=BLUE, lw=4.0, alpha=0.45, capstyle="butt")
    estimate_ticks(ax, ys, rows)
    label_groups(
        ax, ys, headers, [r["label"] for r in rows], [GROUPS.get(h[1], h[1]) for h in headers]
    )
    ax.set_xlim(-0.03, 1.05)
    ax.set_xlabel(r"primary metric at $\theta_{\mathrm{op}}$ (F1, recall, or ODA = 1 − FPR)")
    ax.set_title(r"Primary metric per prompt language at $\theta_{\mathrm{op}}$")
    handles = [
        ax.plot([], [], color=BLUE, lw=4.0, alpha=0.45, label="95% CI")[0],
        ax.plot([], [], "|", color="#0b2545", ms=10, mew=2, label="estimate")[0],
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, frameon=False)
    return fig


def _label(r: LanguageRow) -> str:
    name = "short or mixed" if r.language == UNDETERMINED else NAMES.get(r.language)
    code = f"{r.language} ({name})" if name else r.language
    if not (r.n_attack and r.n_benign):
        return f"{code} · n={r.n:,}"
    # The benign count beside the FPR: 0.00% of 2 prompts is not 0.00% of 2,000.
    return (
        f"{code} · n={r.n:,} ({r.n_benign:,} benign) · recall {pct(r.recall)}, FPR {pct(r.fpr, 2)}"
    )


def _provenance(run: RunData) -> str:
    """Where the languages came from: the loaders, and how many were detected and by what."""
    info = run.result.trace.languages or run.trace_info.get("languages") or {}
    if not isinstance(info, Mapping) or "detected" not in info:
        return ""
    given, detected = int(info.get("given") or 0), int(info.get("detected") or 0)
    und = int(info.get("undetermined") or 0)
    return (
        f"Of the trace's {given + detected:,} prompts, {given:,} carry the language their "
        f"loader states and {detected:,} were identified by {info.get('detector', 'a detector')} "
        f"({und:,} of them undetermined). "
    )


def forest_rows(by_language: Sequence[LanguageRow]) -> list[dict[str, Any]]:
    """The languages with a defined primary metric, as :func:`draw_languages` takes them.

    Grouped by metric, the undetermined row last in its group, larger first.
    """
    order = {g: i for i, g in enumerate(GROUPS)}
    chosen = sorted(
        (r for r in by_language if is_num(r.primary)),
        key=lambda r: (order.get(r.primary_metric, 9), r.language == UNDETERMINED, -r.n),
    )
    return [
        {
            "label": _label(r),
            "group": r.primary_metric,
            "estimate": r.primary,
            "low": r.primary_ci.low if r.primary_ci else None,
            "high": r.primary_ci.high if r.primary_ci else None,
        }
        for r in chosen
    ]


def _extract_languages(run: RunData) -> Prepared | Absent:
    result = run.result
    if not result.by_language:
        if result.by_language_skipped:
            return Absent(
                f"no prompt language reaches {MIN_LANGUAGE_PROMPTS} headline prompts "
                f"({len(result.by_language_skipped)} languages, all smaller)."
            )
        return Absent(
            "result.json has no per-language results (`by_language`): the run predates "
            "them or its trace records no language."
        )
    rows = forest_rows(result.by_language)
    if not rows:
        return Absent("result.json `by_language` has no language with a defined primary metric.")
    skipped = result.by_language_skipped
    few = (
        f"{len(skipped)} languages with fewer than {MIN_LANGUAGE_PROMPTS} prompts "
        f"({sum(skipped.values()):,} prompts) have no row. "
        if skipped
        else ""
    )
    alt = (
        f"Forest plot of the primary metric for {len(rows)} prompt languages at θ_op = "
        f"{run.threshold:.3f}, each with its 95% bootstrap interval, grouped by metric."
    )
    caption = (
        "Each row is one prompt language, scored at the single global threshold θ_op on the "
        "metric its label mix allows: F1 where the language has attacks and benign prompts "
        "(the row adds recall and FPR), recall where it has only attacks, ODA = 1 − FPR "
        "where it has only benign prompts. The bar is the label-stratified 95% bootstrap "
        "interval, the dark tick the estimate. Sources differ by language, so a gap between "
        "two rows mixes language with source. " + _provenance(run) + few
    )
    return Prepared({"rows": rows}, alt, caption)


LANGUAGES = FigureSpec(
    21,
    "languages",
    "Per-language forest plot",
    "not in the paper",
    _extract_languages,
    draw_languages,
)
