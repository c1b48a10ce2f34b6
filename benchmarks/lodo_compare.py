"""Side by side: several LODO files as one Markdown table, per held-out source and in summary.

Every design change is judged by LODO against the default, source by
source; writing those tables by hand invites slips. This reads the JSON-lines
files ``bench_generalisation.py --mode lodo`` writes and prints, for each
held-out evaluation source, its primary metric in every file (ordered by the
first file), then the macro, the number of sources below 0.5 and the pooled
unseen-benign FPR and unseen-attack recall at each refit's own threshold.
A source a file lacks shows as a dash, so an interrupted run reads as one.
A run split across processes is one column: join its files with commas.
``--summary`` prints only the summary, one row per column: the ledger of
every lever measured. Its last column reads each run's pooled FPR off the
first run's curve (its recall and FPR at the four threshold rules every
refit records, interpolated): the recall the first run would have at that
FPR. A run above it ranks better; one on it only moved its threshold.

A single source moves by up to 0.13 between draws of one configuration
(another inner split and seed, ``bench_generalisation.py --fit-seed``), so a
difference read off one draw each may be noise. Join a configuration's draws
with ``+`` and ``--draws`` prints each cell as the range over its draws, and
marks with ``*`` a source whose range does not overlap the first column's.

``--units`` prints one row per refit instead: what it held out (a source
under LODO, a whole family under LOFO) with the refit's FPR / recall / AUC
at its own threshold, and the pooled FPR / recall. It is the LOFO view: a
family mixes sources with different primary metrics, but every refit has
an FPR on its held-out benign rows and a recall on its held-out attacks.

Usage::

    .venv/bin/python benchmarks/lodo_compare.py runs/lodo-gate-default.jsonl runs/other.jsonl \
        [--labels default other] [--summary]
    .venv/bin/python benchmarks/lodo_compare.py --draws runs/a.jsonl+runs/a-seed1.jsonl \
        runs/b.jsonl+runs/b-seed1.jsonl
    .venv/bin/python benchmarks/lodo_compare.py --units runs/lofo-a.jsonl runs/lofo-b.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from bench_generalisation import summarise
from lodo_rules import pooled


def _rows(paths: str) -> list[dict[str, Any]]:
    """The refits in ``paths`` (one file, or several joined with commas)."""
    lines = [ln for p in paths.split(",") for ln in Path(p).read_text().splitlines()]
    return [json.loads(line) for line in lines if line.strip()]


def _per_source(rows: list[dict[str, Any]]) -> dict[str, tuple[str, float]]:
    return {
        s: (v["metric"], float(v["value"]))
        for r in rows
        for s, v in r["per_source"].items()
        if v["role"] == "evaluation"
    }


def ledger(files: list[str], labels: list[str]) -> str:
    """The summary alone, one row per entry of ``files``."""
    lines = [
        "| run | refits | LODO macro | below 0.5 | unseen-benign FPR | unseen-attack recall "
        f"| {labels[0]}'s recall at that FPR |",
        "|---|---|---|---|---|---|---|",
    ]
    runs = [_rows(p) for p in files]
    ref_fpr, ref_recall = np.array(sorted(pooled(runs[0], rule) for rule in runs[0][0]["rules"])).T
    for label, rows in zip(labels, runs, strict=True):
        s = summarise(rows)
        on_ref = float(np.interp(s["unseen_benign_fpr"], ref_fpr, ref_recall))
        # Leaving training corpora out scores no evaluation source: no macro to show.
        macro = s["macro_evaluation_sources"]
        lines.append(
            f"| {label} | {s['refits']} | {'–' if macro is None else f'{macro:.3f}'} | "
            f"{len(s['below_0.5'])} | {s['unseen_benign_fpr']:.3f} | "
            f"{s['unseen_attack_recall']:.3f} | {on_ref:.3f} |"
        )
    return "\n".join(lines)


def table(files: list[str], labels: list[str]) -> str:
    """The Markdown table for ``files``, one column each, headed by ``labels``."""
    runs = [_rows(p) for p in files]
    per = [_per_source(rows) for rows in runs]
    sums = [summarise(rows) for rows in runs]
    order = sorted(per[0], key=lambda s: per[0][s][1])
    order += sorted({s for p in per[1:] for s in p} - set(order))
    lines = [
        "| held-out source | metric | " + " | ".join(labels) + " |",
        "|---|---|" + "---|" * len(labels),
    ]
    for src in order:
        metric = next(p[src][0] for p in per if src in p)
        cells = [f"{p[src][1]:.3f}" if src in p else "–" for p in per]
        lines.append(f"| {src} | {metric} | " + " | ".join(cells) + " |")

    def row(name: str, cells: list[str]) -> None:
        lines.append(f"| {name} | | " + " | ".join(cells) + " |")

    # Leaving training corpora out scores no evaluation source: no macro to show.
    macro = [s["macro_evaluation_sources"] for s in sums]
    row("**macro**", ["–" if m is None else f"**{m:.3f}**" for m in macro])
    row("sources below 0.5", [str(len(s["below_0.5"])) for s in sums])
    row("unseen-benign FPR", [f"{s['unseen_benign_fpr']:.3f}" for s in sums])
    row("unseen-attack recall", [f"{s['unseen_attack_recall']:.3f}" for s in sums])
    return "\n".join(lines)


def draws(columns: list[str], labels: list[str]) -> str:
    """Per source, each column's range over its draws (``+``-joined), ``*`` where apart."""
    runs = [[_rows(p) for p in col.split("+")] for col in columns]
    per = [[_per_source(rows) for rows in col] for col in runs]
    sums = [[summarise(rows) for rows in col] for col in runs]
    first = per[0]
    order = sorted(first[0], key=lambda s: np.mean([d[s][1] for d in first if s in d]))
    order += sorted({s for col in per[1:] for d in col for s in d} - set(order))
    counts = [str(len(col)) for col in per]
    lines = [
        "| held-out source | metric | " + " | ".join(labels) + " |",
        "|---|---|" + "---|" * len(labels),
        "| draws | | " + " | ".join(counts) + " |",
    ]

    def span(values: list[float]) -> tuple[float, float]:
        return (min(values), max(values)) if values else (np.nan, np.nan)

    for src in order:
        metric = next(d[src][0] for col in per for d in col if src in d)
        ref = span([d[src][1] for d in first if src in d])
        cells = []
        for col in per:
            lo, hi = span([d[src][1] for d in col if src in d])
            if np.isnan(lo):
                cells.append("–")
                continue
            apart = col is not first and (hi < ref[0] or lo > ref[1])
            text = f"{lo:.3f}" if lo == hi else f"{lo:.3f}–{hi:.3f}"
            cells.append(text + (" *" if apart else ""))
        lines.append(f"| {src} | {metric} | " + " | ".join(cells) + " |")
    for name, key in (
        ("**macro**", "macro_evaluation_sources"),
        ("unseen-benign FPR", "unseen_benign_fpr"),
        ("unseen-attack recall", "unseen_attack_recall"),
    ):
        cells = []
        for col in sums:
            lo, hi = span([float(s[key]) for s in col if s[key] is not None])
            if np.isnan(lo):
                cells.append("–")
                continue
            cells.append(f"{lo:.3f}" if lo == hi else f"{lo:.3f}–{hi:.3f}")
        lines.append(f"| {name} | | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _unit_cell(row: dict[str, Any]) -> str:
    """One refit's ``FPR / recall / AUC``, a dash where its held-out rows lack a class."""
    fpr = f"{row['fpr']:.3f}" if row["n_benign"] else "–"
    recall = f"{row['recall']:.3f}" if row["n_attack"] else "–"
    auc = f"{row['auc']:.2f}" if row.get("auc") is not None else "–"
    return f"{fpr} / {recall} / {auc}"


def units(files: list[str], labels: list[str]) -> str:
    """Per held-out unit, each file's ``FPR / recall / AUC``; then the pooled FPR / recall."""
    runs = [{r["held_out"]: r for r in _rows(p)} for p in files]
    order = list(runs[0]) + sorted({u for run in runs[1:] for u in run} - set(runs[0]))
    lines = [
        "| held out: FPR / recall / AUC | " + " | ".join(labels) + " |",
        "|---|" + "---|" * len(labels),
    ]
    for unit in order:
        cells = [_unit_cell(run[unit]) if unit in run else "–" for run in runs]
        lines.append(f"| {unit} | " + " | ".join(cells) + " |")
    pooled_cells = []
    for run in runs:
        s = summarise(list(run.values()))
        pooled_cells.append(f"{s['unseen_benign_fpr']:.3f} / {s['unseen_attack_recall']:.3f}")
    lines.append("| pooled FPR / recall | " + " | ".join(pooled_cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="LODO files; join a split run's with commas")
    parser.add_argument("--labels", nargs="*", default=None, help="column names (file stems)")
    parser.add_argument("--summary", action="store_true", help="one summary row per column")
    parser.add_argument(
        "--draws", action="store_true", help="columns are draws joined with +: show ranges"
    )
    parser.add_argument(
        "--units", action="store_true", help="one row per held-out unit: FPR / recall / AUC"
    )
    args = parser.parse_args()
    labels = args.labels or [Path(f.split(",")[0].split("+")[0]).stem for f in args.files]
    if len(labels) != len(args.files):
        parser.error(f"--labels names {len(labels)} columns for {len(args.files)} files")
    if args.draws + args.summary + args.units > 1:
        parser.error("--draws, --summary and --units are separate views; pass one of them")
    show = draws if args.draws else ledger if args.summary else units if args.units else table
    print(show(args.files, labels))


if __name__ == "__main__":
    main()
