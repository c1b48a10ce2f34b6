"""Leave-one-dataset-out: refit without source s, score only s (methodology §2.8).

Each held-out source gets one fit on every other source's rows, through the
same code path as a CV fold (inner 85/15 split, same seeds convention). The
threshold follows the headline rule, max F1 s.t. FPR ≤ τ, but is chosen on
the LODO model's own inner-valid rows, so nothing about s is seen; the
headline per-source numbers it is compared with use the same rule (θ_op).
An unconstrained argmax-F1 threshold would sit far lower and inflate the
recall of all-attack sources, making the comparison meaningless. Refits run
in parallel through :meth:`gatebench.parallel.Executor.map`. Scores are
max-pooled to prompts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gatebench.cv import FoldTask
from gatebench.diagnostics._base import Check, DiagnosticResult
from gatebench.diagnostics._refit import score_fold
from gatebench.diagnostics.context import DiagnosticContext
from gatebench.metrics.confusion import confusion_at
from gatebench.metrics.frame import primary_value
from gatebench.seeding import child_seed
from gatebench.types import Status
from gatebench.unseen.calibrate import MIN_BENIGN, prompt_scores

__all__ = ["CHECK"]

PASS_GAP = 0.10
FAIL_GAP = 0.25
FLAG_BELOW = 0.20
CRITERION = (
    "Per held-out source: its primary metric (F1; recall for all-attack, ODA for all-benign "
    "sources) from a model fitted on the other sources, at the threshold that maximises F1 s.t. "
    "FPR ≤ τ on that model's inner-valid rows. "
    f"Gap = macro mean of the headline per-source primary − LODO macro mean. PASS if gap ≤ "
    f"{PASS_GAP:.2f}, FAIL if gap > {FAIL_GAP:.2f}, else WARN; sources more than "
    f"{FLAG_BELOW:.2f} below the LODO macro mean are flagged."
)


def _tasks(ctx: DiagnosticContext) -> tuple[list[FoldTask], dict[str, str]]:
    sources = ctx.frame["source"].to_numpy()
    tasks, skipped = [], {}
    # Only evaluation sources are held out; training corpora stay in every refit.
    for name in sorted(set(sources[ctx.scored].tolist())):
        train = np.flatnonzero(sources != name)
        counts = np.bincount(ctx.labels[train], minlength=2)
        if counts.min() < 4:
            skipped[name] = "the other sources lack one label, so no model can be fitted"
            continue
        tasks.append(
            FoldTask(
                pass_name=f"lodo:{name}",
                fold=0,
                train_idx=train,
                test_idx=np.flatnonzero(sources == name),
                next_idx=np.empty(0, dtype=np.int64),
                spec=ctx.detector,
                seed=child_seed(ctx.seed, "cv", f"lodo:{name}", 0),
            )
        )
    return tasks, skipped


def run(ctx: DiagnosticContext) -> DiagnosticResult:
    """Refit once per source and compare with the in-distribution numbers."""
    tasks, skipped = _tasks(ctx)
    by_task = {t.pass_name: t for t in tasks}
    headline = {r.source: r.primary for r in ctx.numbers.by_source}
    rows = []
    shared = {
        "texts": ctx.texts,
        "labels": ctx.labels,
        "max_fpr": ctx.fpr,
        "sources": ctx.sources,
        "positions": ctx.positions,
    }
    for done in ctx.executor.map(score_fold, tasks, shared=shared):
        name = done.pass_name.split(":", 1)[1]
        prompts = prompt_scores(ctx.frame, by_task[done.pass_name].test_idx, done.test_scores)
        y, s = prompts["label"].to_numpy(), prompts["score"].to_numpy()
        metric = ctx.primary_metric(name, y)
        theta = float(done.op_threshold if done.op_threshold is not None else done.threshold)
        c = confusion_at(y, s, theta)
        c_fold = confusion_at(y, s, done.threshold)
        c_op = confusion_at(y, s, ctx.theta_op)
        rows.append(
            {
                "source": name,
                "metric": metric,
                "value": float(primary_value(metric, c.tp, c.fp, c.tn, c.fn)),
                "value_at_theta_op": float(
                    primary_value(metric, c_op.tp, c_op.fp, c_op.tn, c_op.fn)
                ),
                "value_at_fold_threshold": float(
                    primary_value(metric, c_fold.tp, c_fold.fp, c_fold.tn, c_fold.fn)
                ),
                "f1": c.f1,
                "fpr": c.fpr,
                "fpr_at_theta_op": c_op.fpr,
                "threshold": theta,
                "fold_threshold": done.threshold,
                "n": int(y.size),
                "n_pos": int(y.sum()),
                "n_neg": int(y.size - y.sum()),
                "headline": headline.get(name),
            }
        )
    if not rows:
        return CHECK.not_applicable("no source could be held out", skipped=skipped)
    table = pd.DataFrame(rows).sort_values("source").reset_index(drop=True)
    macro = float(table["value"].mean())
    table["delta_from_macro"] = table["value"] - macro
    known = table.dropna(subset=["headline"])
    head_macro = float(known["headline"].astype(float).mean()) if len(known) else float("nan")
    lodo_same = float(known["value"].mean()) if len(known) else float("nan")
    gap = head_macro - lodo_same
    flagged = table.loc[table["delta_from_macro"] < -FLAG_BELOW, "source"].tolist()
    if np.isnan(gap):
        status = Status.WARN
    elif gap <= PASS_GAP:
        status = Status.PASS
    elif gap > FAIL_GAP:
        status = Status.FAIL
    else:
        status = Status.WARN
    worst = table.nsmallest(3, "value")[["source", "value"]].to_records(index=False)
    reason = (
        f"LODO macro primary {macro:.3f} vs headline {head_macro:.3f} (gap {gap:+.3f}); "
        f"lowest: " + ", ".join(f"{s} {v:.3f}" for s, v in worst)
    )
    if flagged:
        reason += f"; {len(flagged)} source(s) more than {FLAG_BELOW:.2f} below the LODO macro mean"
    # What the shipped threshold does on benign text of a source the model never saw.
    benign = table[table["n_neg"] >= MIN_BENIGN]
    unseen_fpr = float(benign["fpr_at_theta_op"].mean()) if len(benign) else None
    if unseen_fpr is not None:
        reason += (
            f"; at θ_op ({ctx.fpr:.0%} FPR in distribution) held-out benign sources are "
            f"flagged {unseen_fpr:.1%} on average"
        )
    return CHECK.result(
        status,
        reason,
        statistic=f"macro {macro:.3f}, gap {gap:+.3f}",
        statistics={
            "macro_mean": macro,
            "headline_macro_mean": head_macro,
            "gap": gap,
            "unseen_fpr_at_theta_op": unseen_fpr,
            "by_source": table.to_dict(orient="records"),
            "flagged": flagged,
            "skipped": skipped,
            "threshold_rule": "max F1 s.t. FPR <= tau on each LODO model's inner-valid rows",
        },
        figure={
            "per_source": table.rename(columns={"delta_from_macro": "delta"})[
                ["source", "value", "delta", "n", "metric"]
            ].to_dict(orient="records"),
            "macro_mean": macro,
        },
    )


CHECK = Check("lodo", "expensive", CRITERION, run)
