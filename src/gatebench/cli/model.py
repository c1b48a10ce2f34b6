"""``gatebench model show``: what a model directory says about itself, without loading it.

The command group is registered on the app by :mod:`gatebench.cli`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from gatebench.cli.options import AsJson, console, fail
from gatebench.errors import GatebenchError

__all__ = ["model_app"]

model_app = typer.Typer(help="Model directories: what they hold.", no_args_is_help=True)


@model_app.command("show")
def show(
    model_dir: Annotated[Path, typer.Argument(help="A model directory from `gatebench train`.")],
    as_json: AsJson = False,
) -> None:
    """The detector, trace and threshold of a model directory, and each held-out source at it."""
    from gatebench.modeldir import model_summary, read_manifest

    try:
        summary = model_summary(read_manifest(model_dir))
    except GatebenchError as exc:
        fail(exc)
    if as_json:
        sys.stdout.write(json.dumps({"model_dir": str(model_dir), **summary}) + "\n")
        return
    _print(model_dir, summary)


def _print(model_dir: Path, s: dict[str, Any]) -> None:
    detector, trace, threshold = s["detector"] or {}, s["trace"], s["threshold"]
    params = json.dumps(detector.get("params", {}))
    lines = [
        f"{model_dir}: {detector.get('name')} {params}",
        f"trace {str(trace['trace_id'])[:12]}… of {len(trace['sources'])} sources "
        f"(seed {trace['seed']})" + (f", roles set {trace['roles']}" if trace["roles"] else ""),
        f"threshold {threshold['value']:.4f}: {threshold['rule'] or 'rule not recorded'}",
    ]
    refused = trace.get("refused_rows")
    if refused and refused["rows"]:
        from gatebench.trace_info import refused_note

        lines.insert(2, str(refused_note(refused["first"], "the manifest", refused["rows"])))
    settings = s.get("settings")
    if settings:
        lines.insert(1, "settings: " + ", ".join(f"{k}={_setting(v)}" for k, v in settings.items()))
    baseline = threshold["shipped_fpr"]
    if baseline:
        lines.append(f"benign flag rate there: {baseline['value']:.2%} ({baseline['measured_on']})")
    for line in lines:
        console.print(escape(line), highlight=False)
    if s["held_out"]:
        _held_out(s)
    if s["traffic"]:
        t = s["traffic"]
        console.print(
            escape(
                f"re-picked on {t['input']}: {t['rows_used']:,} benign prompts of "
                f"{t['rows_read']:,} read ({t['rows_rejected']:,} rejected, "
                f"{t['rows_trained_on']:,} trained on); FPR {t['chosen']['fpr']:.2%}, "
                f"upper bound {t['chosen']['fpr_upper']:.2%} at {t['confidence']:.0%} "
                f"(target {t['target_fpr']:.2%}); before, threshold "
                f"{t['previous']['threshold']:.4f} gave {t['previous']['fpr']:.2%}"
            ),
            highlight=False,
        )
    if s["adapted"]:
        a = s["adapted"]
        console.print(
            escape(
                f"refitted from {a['from_model']} with {a['train_rows']:,} traffic rows "
                f"(share {a['train_share']:g}, split draw {a['split_draw']}); threshold "
                f"re-picked on the other {a['tune_rows']:,}"
            ),
            highlight=False,
        )


def _setting(value: Any) -> str:
    """One setting as it would be passed back with ``--param``: JSON, lists without spaces."""
    return json.dumps(value, separators=(",", ":"))


def _held_out(s: dict[str, Any]) -> None:
    """Each source the threshold's folds held out whole, at the shipped threshold."""
    totals = s["held_out_totals"]
    table = Table(
        title=f"Sources held out of the fit ({totals['n_folds']} folds), at the shipped threshold"
    )
    for col in ("source", "benign", "FPR", "attacks", "recall"):
        table.add_column(col, justify="left" if col == "source" else "right")
    for row in s["held_out"]:
        fpr = "–" if row["fpr"] is None else f"{row['fpr']:.1%}" + ("" if row["in_mean"] else "*")
        recall = "–" if row["recall"] is None else f"{row['recall']:.1%}"
        table.add_row(
            escape(row["source"]), f"{row['benign']:,}", fpr, f"{row['attacks']:,}", recall
        )
    table.add_row(
        "mean / pooled", "", f"{totals['mean_fpr']:.1%} / {totals['pooled_fpr']:.1%}", "",
        f"{totals['mean_recall']:.1%} / {totals['pooled_recall']:.1%}",
    )  # fmt: skip
    console.print(table)
    if any(row["fpr"] is not None and not row["in_mean"] for row in s["held_out"]):
        console.print("* too few benign prompts to count in the mean", highlight=False)
