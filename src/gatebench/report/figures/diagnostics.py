"""Diagnostic figures (paper §2.8): LODO (7), random-label control (8), length bias (9),
permutation importance (10) and head agreement (11).

Each reads the ``figure`` (falling back to ``statistics``) of its diagnostic in
``result.diagnostics``. Expected layouts, either records or columns:

* ``lodo``: ``per_source`` rows ``{source, value | f1, n, metric, delta?}`` and ``macro_mean``;
* ``random_label``: ``f1`` (shuffled), ``chance_f1``, ``auc``; optional ``f1_true``,
  ``null_f1`` (per-permutation F1s);
* ``length_bias``: ``overall`` ρ, ``per_source`` rows ``{source, rho, n?}``, ``limit`` (0.3);
* ``permutation_importance``: ``features`` rows ``{feature, drop, std?}``;
* ``head_agreement``: ``heads`` and a square ``kappa`` matrix, or ``pairs`` rows
  ``{a, b, kappa}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from gatebench.report.figures._common import (
    as_records,
    diag_figure,
    finite,
    first,
    missing_diag,
)
from gatebench.report.figures._spec import Absent, FigureSpec, Prepared
from gatebench.report.figures._style import BLUE, GREY, ORANGE, RED, new_figure
from gatebench.report.fmt import is_num, num, pct
from gatebench.result import DiagnosticRecord
from gatebench.rundata import RunData

__all__ = ["KAPPA", "LENGTH_BIAS", "LODO", "PERMUTATION", "RANDOM_LABEL"]


def _not_applicable(item: DiagnosticRecord, what: str) -> Absent:
    return Absent(
        f"the {what} diagnostic is {item.status} and stores no "
        f"figure data: {item.reason or 'no reason recorded'}"
    )


# -- 7. LODO delta bars -------------------------------------------------------------------


def draw_lodo(data: Mapping[str, Any]) -> Figure:
    """Per held-out source, its LODO score minus the macro mean, in percentage points.

    Parameters
    ----------
    data : mapping
        ``sources``, ``value``, ``delta``, ``n``, ``metric`` (equal length); ``macro_mean``.
    """
    names = list(data["sources"])
    delta = 100 * np.asarray(data["delta"], float)
    fig = new_figure(6.4, 0.9 + 0.3 * len(names))
    ax = fig.add_subplot()
    y = np.arange(len(names))
    ax.barh(y, delta, color=[BLUE if d >= 0 else RED for d in delta], height=0.6)
    ax.axvline(0, color="black", lw=1)
    # Score and n ride in the tick label: one text per row keeps layout cheap.
    labels = [
        f"{n}  ({data['metric'][i] or 'F1'} {100 * data['value'][i]:.1f}%, n={data['n'][i]:,})"
        for i, n in enumerate(names)
    ]
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    span = max(5.0, float(np.abs(delta).max()) * 1.15)
    ax.set_xlim(-span, span)
    ax.set_xlabel(f"held-out score − macro mean ({100 * data['macro_mean']:.1f}%), pp")
    ax.set_title("Leave-one-dataset-out")
    return fig


def _extract_lodo(run: RunData) -> Prepared | Absent:
    item = run.diagnostic("lodo", "leave_one_dataset_out", "leave_one_source_out")
    if item is None:
        return Absent(missing_diag("lodo", bool(run.result.diagnostics)))
    fig = diag_figure(item)
    rows = as_records(first(fig, "per_source", "by_source", "sources_table", default=[]))
    macro = first(fig, "macro_mean", "macro")
    rows = [r for r in rows if is_num(first(r, "value", "f1", "primary"))]
    if not rows or not is_num(macro):
        return _not_applicable(item, "LODO")
    value = [first(r, "value", "f1", "primary") for r in rows]
    delta = [
        r["delta"] if is_num(r.get("delta")) else v - macro
        for r, v in zip(rows, value, strict=True)
    ]
    order = np.argsort(delta)[::-1]
    data: dict[str, Any] = {
        "sources": [str(rows[i].get("source")) for i in order],
        "value": [value[i] for i in order],
        "delta": [delta[i] for i in order],
        "n": [int(rows[i].get("n") or 0) for i in order],
        "metric": [rows[i].get("metric") for i in order],
        "macro_mean": macro,
    }
    alt = (
        f"Bars of each held-out source's LODO score minus the macro mean {pct(macro)}; "
        f"lowest {data['sources'][-1]} at {100 * data['delta'][-1]:+.1f} points."
    )
    caption = (
        "Each source is held out of training in turn and scored only on itself. Bars show "
        "its score (F1, or the primary metric for single-class sources) minus the macro mean "
        "over sources, in percentage points: blue at or above the mean, red below. The score "
        "and n are in brackets after each name. A long red bar is a source whose distribution the "
        f"other sources do not teach. Status: {item.status}."
    )
    return Prepared(data, alt, caption)


LODO = FigureSpec(
    7, "lodo", "Leave-one-dataset-out delta", "paper Fig. 7", _extract_lodo, draw_lodo
)


# -- 8. random-label control --------------------------------------------------------------


def draw_random_label(data: Mapping[str, Any]) -> Figure:
    """Permuted-label F1 against the chance F1 (and the true F1), and AUC against 0.5.

    Parameters
    ----------
    data : mapping
        ``f1``, ``chance_f1``, ``auc``; optional ``f1_true`` and ``null_f1``.
    """
    fig = new_figure(6.4, 3.5)
    left, right = fig.subplots(1, 2, width_ratios=[2, 1])
    null = data.get("null_f1")
    if null:
        left.hist(null, bins=30, color=GREY, alpha=0.7, label="F1, each permutation")
        left.axvline(data["chance_f1"], color="black", ls="--", label="chance F1")
        left.axvline(data["f1"], color=BLUE, lw=2, label="mean F1, permuted labels")
        if is_num(data.get("f1_true")):
            left.axvline(data["f1_true"], color=ORANGE, lw=2, label="F1, true labels")
        left.set_xlabel("F1")
        left.set_ylabel("permutations")
    else:
        names = ["shuffled", "chance"] + (["true labels"] if is_num(data.get("f1_true")) else [])
        vals = [data["f1"], data["chance_f1"]] + (
            [data["f1_true"]] if is_num(data.get("f1_true")) else []
        )
        left.bar(names, vals, color=[BLUE, GREY, ORANGE][: len(vals)], width=0.6)
        for i, v in enumerate(vals):
            left.annotate(
                f"{100 * v:.1f}%",
                (i, v),
                ha="center",
                va="bottom",
                fontsize=8,
                xytext=(0, 2),
                textcoords="offset points",
            )
        left.set_ylim(0, 1.1)
        left.set_ylabel("F1")
    left.set_title("F1 under permuted labels")
    if null:
        # Below the panels, not over them: the null histogram and the true-label
        # line can sit anywhere on the F1 axis.
        fig.legend(loc="outside lower center", ncols=4, frameon=False)
    if is_num(data.get("auc")):
        right.bar(["shuffled"], [data["auc"]], color=BLUE, width=0.5)
        right.axhline(0.5, color="black", ls="--", lw=1)
        right.annotate(
            f"{data['auc']:.3f}",
            (0, data["auc"]),
            ha="center",
            va="bottom",
            fontsize=8,
            xytext=(0, 2),
            textcoords="offset points",
        )
        right.set_ylim(0, 1)
        right.set_title("AUC (chance 0.5)")
    else:
        right.set_axis_off()
    return fig


def _extract_random_label(run: RunData) -> Prepared | Absent:
    item = run.diagnostic("random_label", "random_label_control", "random_labels")
    if item is None:
        return Absent(missing_diag("random_label", bool(run.result.diagnostics)))
    fig = diag_figure(item)
    f1 = first(fig, "f1", "f1_shuffled", "observed_f1")
    chance = first(fig, "chance_f1", "f1_chance")
    if not (is_num(f1) and is_num(chance)):
        return _not_applicable(item, "random-label")
    data: dict[str, Any] = {
        "f1": f1,
        "chance_f1": chance,
        "auc": first(fig, "auc", "auc_shuffled"),
        "f1_true": first(fig, "f1_true", "true_f1"),
        "null_f1": fig.get("null_f1") if finite(fig.get("null_f1") or []) else None,
    }
    alt = f"Random-label control: F1 against permuted labels {pct(f1)} vs chance {pct(chance)}" + (
        f"; AUC {num(data['auc'])}." if is_num(data["auc"]) else "."
    )
    caption = (
        f"{run.detector}'s existing hard predictions at θ_op are scored against randomly "
        "permuted labels. A permutation makes the labels independent of any fixed "
        "prediction, so the permuted F1 must sit at the chance value 2·p_y·p_ŷ/(p_y + p_ŷ) "
        "(p_y: attack rate, p_ŷ: flag rate) and the AUC at 0.5: this checks the metric code "
        "against theory. A value away from chance means the metric code disagrees with "
        "theory, not leakage; this control cannot detect leakage by construction (the "
        "retraining variant, random_label_retrain, can). The true-label F1 is drawn for "
        f"scale. Status: {item.status}."
    )
    return Prepared(data, alt, caption)


RANDOM_LABEL = FigureSpec(
    8,
    "random-label",
    "Random-label control",
    "paper Fig. 8",
    _extract_random_label,
    draw_random_label,
)


# -- 9. length bias -----------------------------------------------------------------------


def draw_length_bias(data: Mapping[str, Any]) -> Figure:
    """Pearson ρ(length, score) overall and per source, with the ±limit band.

    Parameters
    ----------
    data : mapping
        ``sources``, ``rho`` (equal length; the first row may be ``overall``); ``limit``.
    """
    names, rho = list(data["sources"]), np.asarray(data["rho"], float)
    limit = float(data.get("limit") or 0.3)
    fig = new_figure(6.0, 0.9 + 0.28 * len(names))
    ax = fig.add_subplot()
    y = np.arange(len(names))
    colours = [
        RED if abs(r) > limit else (ORANGE if n == "overall" else BLUE)
        for n, r in zip(names, rho, strict=True)
    ]
    ax.barh(y, rho, color=colours, height=0.6)
    ax.axvspan(-limit, limit, color=GREY, alpha=0.12, label=f"|ρ| ≤ {limit:g} passes")
    ax.axvline(0, color="black", lw=1)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlim(-1, 1)
    ax.set_xlabel("Pearson ρ(input length, score)")
    ax.set_title("Length bias")
    fig.legend(loc="outside lower center", ncols=3, frameon=False)
    return fig


def _extract_length_bias(run: RunData) -> Prepared | Absent:
    item = run.diagnostic("length_bias", "length")
    if item is None:
        return Absent(missing_diag("length_bias", bool(run.result.diagnostics)))
    fig = diag_figure(item)
    rows = [
        r
        for r in as_records(first(fig, "per_source", "by_source", default=[]))
        if is_num(first(r, "rho", "pearson"))
    ]
    overall = first(fig, "overall", "rho", "overall_rho")
    if not rows and not is_num(overall):
        return _not_applicable(item, "length-bias")
    names = (["overall"] if is_num(overall) else []) + [str(r.get("source")) for r in rows]
    rho = ([overall] if is_num(overall) else []) + [first(r, "rho", "pearson") for r in rows]
    limit = first(fig, "limit", "threshold", default=0.3)
    flagged = [n for n, r in zip(names, rho, strict=True) if abs(r) > limit]
    alt = (
        f"Bars of the length–score correlation overall ({num(overall, 2)}) and for "
        f"{len(rows)} sources; {len(flagged)} beyond ±{limit:g}."
    )
    caption = (
        "Pearson correlation between input length and score, for all prompts (orange) and per "
        f"source (blue). |ρ| > {limit:g} (red) flags a detector that may be partly a length "
        "heuristic; per-source bars matter because opposite biases can cancel in the overall "
        f"value. Status: {item.status}." + (f" Flagged: {', '.join(flagged)}." if flagged else "")
    )
    return Prepared({"sources": names, "rho": rho, "limit": limit}, alt, caption)


LENGTH_BIAS = FigureSpec(
    9,
    "length-bias",
    "Length-bias ρ per source",
    "paper Fig. 9",
    _extract_length_bias,
    draw_length_bias,
)


# -- 10. permutation importance -----------------------------------------------------------


def draw_permutation(data: Mapping[str, Any]) -> Figure:
    """Drop in OOF F1 when each feature group or head is permuted, largest first.

    Parameters
    ----------
    data : mapping
        ``features``, ``drop`` (equal length); optional ``std``.
    """
    names, drop = list(data["features"]), 100 * np.asarray(data["drop"], float)
    fig = new_figure(6.0, 0.9 + 0.28 * len(names))
    ax = fig.add_subplot()
    y = np.arange(len(names))
    std = data.get("std")
    ax.barh(
        y,
        drop,
        xerr=None if std is None else 100 * np.asarray(std, float),
        color=[BLUE if d >= 0 else GREY for d in drop],
        height=0.6,
    )
    ax.axvline(0, color="black", lw=1)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlabel("drop in held-out F1 when permuted (pp)")
    ax.set_title("Permutation importance")
    return fig


def _extract_permutation(run: RunData) -> Prepared | Absent:
    item = run.diagnostic("permutation_importance", "permutation")
    if item is None:
        return Absent(missing_diag("permutation_importance", bool(run.result.diagnostics)))
    fig = diag_figure(item)
    rows = [
        r
        for r in as_records(first(fig, "features", "importances", default=[]))
        if is_num(first(r, "drop", "delta_f1", "importance"))
    ]
    if not rows:
        return _not_applicable(item, "permutation-importance")
    rows.sort(key=lambda r: -first(r, "drop", "delta_f1", "importance"))
    rows = rows[:20]
    std = [r.get("std") for r in rows]
    data: dict[str, Any] = {
        "features": [str(first(r, "feature", "name")) for r in rows],
        "drop": [first(r, "drop", "delta_f1", "importance") for r in rows],
        "std": std if finite(std) else None,
    }
    alt = (
        f"Bars of the F1 drop for the top {len(rows)} permuted features; the largest is "
        f"{data['features'][0]} at {100 * data['drop'][0]:.1f} points."
    )
    caption = (
        "Each bar is the drop in out-of-fold F1 when one feature group (or ensemble head) is "
        "randomly permuted across rows, largest first (top 20). A large drop means the "
        "detector relies on that input in the held-out regime; a near-zero bar is a feature "
        f"the model does not use out of fold. Status: {item.status}."
    )
    return Prepared(data, alt, caption)


PERMUTATION = FigureSpec(
    10,
    "permutation-importance",
    "Permutation importance",
    "paper Fig. 10",
    _extract_permutation,
    draw_permutation,
)


# -- 11. Cohen's kappa heatmap ------------------------------------------------------------


def draw_kappa(data: Mapping[str, Any]) -> Figure:
    """Heatmap of pairwise Cohen's κ between the heads' hard predictions.

    Parameters
    ----------
    data : mapping
        ``heads`` (k names) and ``kappa`` (k × k, diagonal 1).
    """
    heads, k = list(data["heads"]), np.asarray(data["kappa"], float)
    size = 2.2 + 0.5 * len(heads)
    fig = new_figure(size + 0.8, size)
    ax = fig.add_subplot()
    im = ax.imshow(k, vmin=0, vmax=1, cmap="Blues")
    for i in range(len(heads)):
        for j in range(len(heads)):
            if np.isfinite(k[i, j]):
                ax.text(
                    j,
                    i,
                    f"{k[i, j]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if k[i, j] > 0.6 else "black",
                )
    ax.set_xticks(range(len(heads)), heads, rotation=30, ha="right")
    ax.set_yticks(range(len(heads)), heads)
    ax.grid(False)
    fig.colorbar(im, ax=ax, label="Cohen's κ", shrink=0.8)
    ax.set_title("Head agreement")
    return fig


def _kappa_matrix(fig: Mapping[str, Any]) -> tuple[list[str], list[list[float]]] | None:
    heads, mat = fig.get("heads"), fig.get("kappa")
    if heads and isinstance(mat, list) and all(isinstance(r, list) for r in mat):
        return [str(h) for h in heads], mat
    pairs = as_records(fig.get("pairs"))
    if not pairs:
        return None
    names = sorted(
        {str(first(p, "a", "head_a")) for p in pairs}
        | {str(first(p, "b", "head_b")) for p in pairs}
    )
    idx = {n: i for i, n in enumerate(names)}
    out = np.full((len(names), len(names)), np.nan)
    np.fill_diagonal(out, 1.0)
    for p in pairs:
        i, j = idx[str(first(p, "a", "head_a"))], idx[str(first(p, "b", "head_b"))]
        out[i, j] = out[j, i] = float(p["kappa"])
    return names, out.tolist()


def _extract_kappa(run: RunData) -> Prepared | Absent:
    item = run.diagnostic("head_agreement", "cohen_kappa", "kappa", "classifier_head_agreement")
    if item is None:
        return Absent(missing_diag("head_agreement", bool(run.result.diagnostics)))
    got = _kappa_matrix(diag_figure(item))
    if got is None or len(got[0]) < 2:
        return _not_applicable(item, "head-agreement")
    heads, mat = got
    off = [
        mat[i][j]
        for i in range(len(heads))
        for j in range(len(heads))
        if i < j and is_num(mat[i][j])
    ]
    alt = (
        f"Heatmap of Cohen's κ between {len(heads)} heads; off-diagonal κ from "
        f"{min(off):.2f} to {max(off):.2f}."
    )
    caption = (
        "Pairwise Cohen's κ between the hard predictions of the detector's heads "
        "(κ = (p_o − p_e)/(1 − p_e): agreement beyond chance). Low κ means the heads carry "
        "different signal worth combining; κ near 1 means they are redundant. "
        f"Status: {item.status}."
    )
    return Prepared({"heads": heads, "kappa": mat}, alt, caption)


KAPPA = FigureSpec(
    11, "head-agreement", "Cohen's κ between heads", "paper Fig. 11", _extract_kappa, draw_kappa
)
