"""Cross-validation figures: per-fold ROC (1), adversarial validation (2), train vs OOF (3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from gatebench.report.figures._common import (
    PASS_NAMES,
    as_records,
    diag_figure,
    finite,
    missing_diag,
    pass_order,
)
from gatebench.report.figures._spec import Absent, FigureSpec, Prepared
from gatebench.report.figures._style import BLUE, GREY, ORANGE, RED, new_figure
from gatebench.report.fmt import is_num, num, pct
from gatebench.rundata import RunData

__all__ = ["ADVERSARIAL", "ROC", "TRAIN_VS_OOF"]


# -- 1. per-fold ROC overlay -------------------------------------------------------------


def draw_roc_per_fold(data: Mapping[str, Any]) -> Figure:
    """ROC curve of each held-out fold, with the chance diagonal and the operating point.

    Parameters
    ----------
    data : mapping
        ``folds``: list of ``{fold, fpr, tpr}``; ``point``: ``(fpr, tpr)`` of the
        headline operating point or None.
    """
    fig = new_figure(5.2, 4.2)
    ax = fig.add_subplot()
    for curve in data["folds"]:
        ax.plot(curve["fpr"], curve["tpr"], lw=1.2, alpha=0.85, label=f"fold {curve['fold']}")
    ax.plot([0, 1], [0, 1], ls=":", color=GREY, lw=1, label="chance")
    if data.get("point") is not None:
        x, y = data["point"]
        ax.plot([x], [y], "o", color=RED, ms=6, zorder=5, label="headline point (pooled)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.01)
    ax.set_xlabel("false-positive rate")
    ax.set_ylabel("true-positive rate (recall)")
    ax.set_title("Per-fold ROC, headline StratifiedKFold pass")
    ax.legend(loc="lower right", frameon=False)
    return fig


def _extract_roc(run: RunData) -> Prepared | Absent:
    curves = [
        c.model_dump()
        for c in run.result.roc_per_fold
        if finite(c.fpr) and len(c.fpr) == len(c.tpr)
    ]
    if not curves:
        return Absent("result.json has no `roc_per_fold` curves (no fold held both labels).")
    op = run.result.operating_point
    point = (op.fpr, op.recall) if is_num(op.fpr) and is_num(op.recall) else None
    auc = run.result.headline.auc_ci
    auc_text = (
        f"pooled OOF AUC {num(auc.estimate)} (95% CI {num(auc.low)}–{num(auc.high)})"
        if auc is not None and is_num(auc.estimate)
        else "pooled AUC not recorded"
    )
    alt = (
        f"ROC curves of {len(curves)} held-out folds of the headline pass on one axis; "
        f"{auc_text}."
        + (
            f" The headline operating point is at FPR {pct(point[0], 2)}, TPR {pct(point[1])}."
            if point
            else ""
        )
    )
    caption = (
        "Each curve is one held-out fold's scores against its labels (the model never saw "
        "that fold). Curves that cluster in one envelope mean fold-to-fold performance is "
        "stable; one curve far from the rest points at a fold with a different mix or a "
        f"leak. The red dot is the pooled headline operating point; {auc_text}."
    )
    return Prepared({"folds": curves, "point": point}, alt, caption)


ROC = FigureSpec(
    1, "roc-per-fold", "Per-fold ROC overlay", "paper Fig. 1", _extract_roc, draw_roc_per_fold
)


# -- 2. adversarial-validation AUC per fold -----------------------------------------------


def draw_adversarial(data: Mapping[str, Any]) -> Figure:
    """Bar per fold of the train-vs-test membership classifier's AUC, grouped by CV pass.

    Parameters
    ----------
    data : mapping
        ``groups``: list of ``{pass, title, folds, auc}`` (one per CV pass, ``folds``
        and ``auc`` of equal length); optional ``limit`` (the pass bound).
    """
    groups = data["groups"]
    n_bars = sum(len(g["folds"]) for g in groups)
    fig = new_figure(max(5.2, 1.8 + 0.42 * (n_bars + len(groups))), 3.6)
    ax = fig.add_subplot()
    limit = data.get("limit")
    # Fold k of one pass is a different split from fold k of another: each pass
    # gets its own block of bars, a gap and a rule between blocks, and its name below.
    x: list[float] = []
    ticks: list[str] = []
    centres: list[float] = []
    start = 0.0
    for g in groups:
        xs = start + np.arange(len(g["folds"]), dtype=float)
        x += xs.tolist()
        ticks += [str(f) for f in g["folds"]]
        centres.append(float(xs.mean()))
        if start > 0:
            ax.axvline(start - 1, color=GREY, lw=0.8)
        start = float(xs[-1]) + 2
    auc = np.asarray([a for g in groups for a in g["auc"]], float)
    colours = [RED if is_num(limit) and a > limit else BLUE for a in auc]
    ax.bar(x, auc, color=colours, width=0.6)
    ax.axhline(0.5, color="black", lw=1, ls="--", label="target 0.5 (indistinguishable)")
    if is_num(limit):
        ax.axhline(limit, color=RED, lw=1, ls=":", label=f"pass limit {limit:.2f}")
    for xi, a in zip(x, auc, strict=True):
        ax.annotate(
            f"{a:.3f}",
            (xi, a),
            ha="center",
            va="bottom",
            fontsize=7,
            xytext=(0, 2),
            textcoords="offset points",
        )
    ax.set_xticks(x, ticks)
    ax.set_xlim(-0.6, x[-1] + 0.6)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("train-vs-test AUC")
    named = [g for g in groups if g["title"]]
    if named:
        passes = ax.secondary_xaxis("bottom")
        passes.set_xticks(centres, [g["title"] for g in groups])
        passes.tick_params(length=0, pad=14)
        passes.spines["bottom"].set_visible(False)
        passes.set_xlabel("fold, by CV pass")
    else:
        ax.set_xlabel("fold")
    ax.set_title("Adversarial validation per fold and CV pass")
    fig.legend(loc="outside lower center", ncols=3, frameon=False)
    return fig


def _fold_rows(fig: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``{pass, fold, auc}`` per fold from any layout the diagnostic has written.

    ``statistics.by_fold`` names pass and fold; the figure's ``folds`` column holds
    labels such as ``"sgk 2"``; a bare fold number means the pass was not recorded.
    """
    rows = [r for r in as_records(fig.get("by_fold")) if is_num(r.get("auc"))]
    if rows:
        return [
            {"pass": str(r.get("pass") or ""), "fold": r.get("fold"), "auc": r["auc"]} for r in rows
        ]
    labelled = as_records({k: fig[k] for k in ("folds", "auc") if k in fig})
    out = []
    for i, r in enumerate(labelled or as_records(fig.get("per_fold"))):
        if not is_num(r.get("auc")):
            continue  # a fold whose membership classifier could not be fitted stores null
        label = r.get("folds", r.get("fold", i))
        name, _, fold = str(label).rpartition(" ")
        out.append({"pass": str(r.get("pass") or name), "fold": fold, "auc": r["auc"]})
    return out


def _extract_adversarial(run: RunData) -> Prepared | Absent:
    item = run.diagnostic("adversarial_validation", "adversarial")
    if item is None:
        return Absent(missing_diag("adversarial_validation", bool(run.result.diagnostics)))
    fig = diag_figure(item)
    rows = _fold_rows(fig)
    auc: list[Any] = [r["auc"] for r in rows]
    if not finite(auc):
        return Absent(
            f"the adversarial-validation diagnostic is {item.status} and "
            f"stores no per-fold AUC: {item.reason}".strip()
        )
    groups = [
        {
            "pass": name,
            "title": PASS_NAMES.get(name, name),
            "folds": [r["fold"] for r in rows if r["pass"] == name],
            "auc": [r["auc"] for r in rows if r["pass"] == name],
        }
        for name in sorted({r["pass"] for r in rows}, key=pass_order)
    ]
    limit = fig.get("limit", fig.get("threshold"))
    passes = [g["title"] for g in groups if g["title"]]
    alt = (
        f"Bar chart of the adversarial-validation AUC in {len(auc)} folds"
        + (f" of {len(passes)} CV passes ({', '.join(passes)})" if passes else "")
        + f", from {min(auc):.3f} to {max(auc):.3f}; the target is 0.5."
    )
    caption = (
        "An auxiliary classifier tries to tell each fold's training rows from its test rows. "
        "AUC near 0.5 means the two are drawn from the same distribution, so the OOF metric "
        "measures detection rather than distribution shift; bars well above 0.5 (red when "
        "over the pass limit) flag folds whose split is distinguishable. "
        + (
            f"Bars are grouped by CV pass, named under each group: {'; '.join(passes)}. "
            "Fold k of one pass is a different split from fold k of another. "
            if passes
            else ""
        )
        + f"Status: {item.status}."
    )
    return Prepared({"groups": groups, "limit": limit}, alt, caption)


ADVERSARIAL = FigureSpec(
    2,
    "adversarial-validation",
    "Adversarial-validation AUC per fold",
    "paper Fig. 2",
    _extract_adversarial,
    draw_adversarial,
)


# -- 3. train vs OOF F1 per fold ----------------------------------------------------------


def draw_train_vs_oof(data: Mapping[str, Any]) -> Figure:
    """Paired bars per fold: F1 on the fold's training rows and on its held-out rows.

    Parameters
    ----------
    data : mapping
        ``folds``, ``train_f1``, ``oof_f1`` (equal length), all at each fold's threshold.
    """
    fig = new_figure(5.6, 3.4)
    ax = fig.add_subplot()
    x = np.arange(len(data["folds"]))
    train, oof = np.asarray(data["train_f1"], float), np.asarray(data["oof_f1"], float)
    ax.bar(x - 0.19, train, width=0.38, color=ORANGE, label="train F1")
    ax.bar(x + 0.19, oof, width=0.38, color=BLUE, label="OOF (held-out) F1")
    for i in range(len(x)):
        ax.annotate(
            f"Δ {100 * (train[i] - oof[i]):+.1f} pp",
            (x[i], max(train[i], oof[i])),
            ha="center",
            va="bottom",
            fontsize=8,
            xytext=(0, 2),
            textcoords="offset points",
        )
    ax.set_xticks(x, [str(f) for f in data["folds"]])
    ax.set_ylim(0, 1.12)
    ax.set_xlabel("fold (StratifiedKFold, the headline pass)")
    ax.set_ylabel(r"F1 at the fold's threshold $\theta^*_k$")
    ax.set_title(f"Train vs OOF F1 (mean Δ {100 * float(np.mean(train - oof)):+.1f} pp)")
    fig.legend(loc="outside lower center", ncols=2, frameon=False)
    return fig


def _extract_train_vs_oof(run: RunData) -> Prepared | Absent:
    strat = run.result.fold_thresholds.get("strat")
    folds = strat.folds if strat is not None else []
    # Per-fold rows are the CV engine's records; `finite` below vouches for the numbers.
    train: list[Any] = [r.get("train_f1_at_threshold") for r in folds]
    oof: list[Any] = [r.get("test_f1_at_threshold") for r in folds]
    if not (finite(train) and finite(oof)):
        return Absent(
            "result.json `fold_thresholds.strat.folds` has no train and OOF F1 per "
            "fold (the detector was not scored on its training rows)."
        )
    gaps = [t - o for t, o in zip(train, oof, strict=True)]
    alt = (
        f"Paired bars of train and held-out F1 in {len(folds)} folds; the train-minus-OOF "
        f"gap ranges from {100 * min(gaps):+.1f} to {100 * max(gaps):+.1f} points."
    )
    caption = (
        "For each fold, F1 of the fold's model on (a sample of) its own training rows, orange, "
        "and on its held-out rows, blue, both at the fold's inner-valid threshold θ*_k. A small "
        "gap says the score path is the same at train and test time; a large positive gap is "
        "overfitting. These per-fold numbers use θ*_k, not the global θ_op."
    )
    item = run.diagnostic("train_vs_oof")
    if item is not None:
        caption += f" Diagnostic status: {item.status} ({item.reason})."
    data = {"folds": [r.get("fold") for r in folds], "train_f1": train, "oof_f1": oof}
    return Prepared(data, alt, caption)


TRAIN_VS_OOF = FigureSpec(
    3,
    "train-vs-oof",
    "Train vs OOF F1 per fold",
    "paper Fig. 3",
    _extract_train_vs_oof,
    draw_train_vs_oof,
)
