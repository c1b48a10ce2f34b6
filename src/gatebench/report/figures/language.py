"""Per-language forest plot (21): the primary metric of every prompt language at θ_op with
its 95% bootstrap interval, grouped by the metric the language's label mix gives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from gatebench.language import UNDETERMINED
from gatebench.per_language import MIN_LANGUAGE_PROMPTS
from gatebench.report.figures._slices import draw_slices, slice_rows
from gatebench.report.figures._spec import Absent, FigureSpec, Prepared
from gatebench.result import LanguageRow
from gatebench.rundata import RunData

__all__ = ["LANGUAGES", "draw_languages", "forest_rows"]

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
        order, grouped by ``group`` (a key of ``_slices.GROUPS``).
    """
    return draw_slices(
        {**data, "title": r"Primary metric per prompt language at $\theta_{\mathrm{op}}$"}
    )


def _name(r: LanguageRow) -> str:
    name = "short or mixed" if r.language == UNDETERMINED else NAMES.get(r.language)
    return f"{r.language} ({name})" if name else r.language


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
    return slice_rows(by_language, name=_name, order=lambda r: (r.language == UNDETERMINED, -r.n))


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
