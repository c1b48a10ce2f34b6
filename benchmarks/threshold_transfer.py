"""Does a shipped threshold hold on sources the model never saw? Read it off saved refits.

``bench_generalisation.py --scores DIR`` keeps, for every refit (LODO, LOFO or
one training corpus held out), the scores of the rows it held out. Pooled to
prompts, they are text the recipe never saw. For each folder this prints, at
each threshold, the FPR averaged over held-out benign sources (those with
``MIN_BENIGN`` benign prompts, as ``gatebench train`` averages them), the
pooled FPR, and the attack recall averaged over sources and pooled.

``--at`` takes raw thresholds (a model directory's ``threshold``, a run's
θ_op). ``--calibrate-on DIR --target T`` picks the threshold as ``gatebench
train`` does, the lowest with mean FPR <= T, on DIR's held-out prompts, and
reads it on every folder: calibrated on one kind of never-seen text, how does
it hold on another? ``--by-language`` adds, per folder and threshold, the
FPR of the held-out benign prompts in each detected language (the trace's
``language`` column): where a language's benign text is flagged far more than
English, the model reads the language, not what the text asks. ``--by-source``
adds a table per folder and threshold: each held-out source's FPR and recall,
and the AUC of its attacks against every held-out benign prompt of the
folder, which says whether a source is missed for its ranking or for the
threshold. ``--by-persona`` adds the FPR and recall of the held-out prompts
whose first sentence casts the model as a persona (``gatebench.persona.PERSONA_RE``:
"act as", "you are a", "pretend to be") against the other prompts'. The refits
must be of the default trace, or of one whose
evaluation and training rows sit where the default's do (more twins are
appended after them), since the folders hold trace positions. Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/threshold_transfer.py \\
        runs/scores-langbal runs/scores-corpora-langbal --at 0.888,0.9233 \\
        [--calibrate-on runs/scores-langbal --target 0.03]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from gatebench.config import RunConfig
from gatebench.persona import PERSONA_RE
from gatebench.unseen.calibrate import (
    MIN_BENIGN,
    SourcePoint,
    lowest_threshold,
    prompt_scores,
    source_point,
)


def held_out_prompts(folder: Path, frame: pd.DataFrame) -> pd.DataFrame:
    """Every refit's held-out rows in ``folder`` as prompts: ``source``, ``label``, ``score``."""
    parts = []
    first = frame.groupby("sample_id", sort=False)[["language", "text"]].first()
    opening = first["text"].str.split(r"(?<=[.!?\n])\s+", n=1, regex=True).str[0]
    persona = opening.str.contains(PERSONA_RE)
    for path in sorted(folder.glob("*.npz")):
        z = np.load(path)
        if z["test"].size and int(z["test"].max()) >= len(frame):
            raise SystemExit(f"{path} scores trace rows past the default trace's {len(frame)}")
        part = prompt_scores(frame, z["test"], z["p_test"])
        parts.append(
            part.assign(
                refit=path.stem,
                language=first["language"].reindex(part.index).values,
                persona=persona.reindex(part.index).values,
            )
        )
    if not parts:
        raise SystemExit(f"{folder} holds no refit scores (bench_generalisation.py --scores)")
    return pd.concat(parts, ignore_index=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", type=Path, nargs="+")
    ap.add_argument("--at", default="", help="comma-separated raw thresholds")
    ap.add_argument("--calibrate-on", type=Path, help="pick a threshold on this folder's prompts")
    ap.add_argument("--target", type=float, default=0.03, help="mean FPR bound for --calibrate-on")
    ap.add_argument(
        "--by-language",
        action="store_true",
        help="also print the held-out benign FPR of each language with 20+ benign prompts",
    )
    ap.add_argument(
        "--by-persona",
        action="store_true",
        help="also print FPR and recall of prompts opening with a persona, and of the others",
    )
    ap.add_argument(
        "--by-source",
        action="store_true",
        help="also print each held-out source's FPR, recall and AUC against the folder's benign",
    )
    args = ap.parse_args()

    from gatebench.trace import TraceSpec, build_trace

    frame = build_trace(
        TraceSpec(seed=RunConfig.model_fields["seed"].default),
        data_dir=os.environ.get("GATEBENCH_DATA"),
        cache_dir=".cache/gatebench",
    ).frame.reset_index(drop=True)
    thresholds = {f"{float(t):.4f}": float(t) for t in args.at.split(",") if t.strip()}
    if args.calibrate_on:
        t = lowest_threshold(held_out_prompts(args.calibrate_on, frame), args.target)
        thresholds[f"{t:.4f} (mean FPR ≤ {args.target:g} on {args.calibrate_on.name})"] = t
    if not thresholds:
        raise SystemExit("give --at and/or --calibrate-on")
    head = "benign sources | mean FPR | pooled FPR | mean recall | pooled recall"
    by_source: list[str] = []
    print(f"| held-out prompts | threshold | {head} |")
    print("|---|---|---|---|---|---|---|")
    for folder in args.folders:
        prompts = held_out_prompts(folder, frame)
        for label, t in thresholds.items():
            p = source_point(prompts, t)
            n = sum(v["averaged"] for v in p.per_source.values())
            cells = [p.mean_fpr, p.pooled_fpr, p.mean_recall, p.pooled_recall]
            text = " | ".join("–" if c is None else f"{c:.3f}" for c in cells)
            print(f"| {folder.name} | {label} | {n} | {text} |")
            if args.by_language:
                print(f"| by language | {_by_language(prompts, t)} ||||||")
            if args.by_persona:
                print(f"| by persona opening | {_by_persona(prompts, t)} ||||||")
            if args.by_source:
                by_source.append(_by_source(prompts, p, f"{folder.name} at {label}"))
    print("".join(by_source), end="")


def _by_source(prompts: pd.DataFrame, point: SourcePoint, title: str) -> str:
    """One markdown table: every held-out source's rates at ``point``, weakest AUC first.

    A source's AUC ranks its attacks against all the folder's held-out benign
    prompts, so sources with attacks only get one too.
    """
    benign = prompts.loc[prompts["label"] == 0, "score"].to_numpy()
    attacks = prompts[prompts["label"] == 1].groupby("source")["score"]
    rows = []
    for name, v in point.per_source.items():
        auc = None
        if v["n_attack"] and len(benign):
            a = attacks.get_group(name).to_numpy()
            y = np.r_[np.ones(len(a)), np.zeros(len(benign))]
            auc = float(roc_auc_score(y, np.r_[a, benign]))
        rows.append((name, v, auc))
    rows.sort(key=lambda r: (r[2] is None, r[2] or 0.0, r[0]))
    out = [f"\n{title}\n\n| source | benign | FPR | attacks | recall | AUC vs held-out benign |"]
    out.append("|---|---|---|---|---|---|")
    for name, v, auc in rows:
        cells = [v["fpr"], v["recall"], auc]
        fpr, rec, a = ("–" if c is None else f"{c:.3f}" for c in cells)
        out.append(f"| {name} | {v['n_benign']} | {fpr} | {v['n_attack']} | {rec} | {a} |")
    return "\n".join(out) + "\n"


def _by_persona(prompts: pd.DataFrame, threshold: float) -> str:
    """Pooled FPR and recall at ``threshold`` of persona openings and of the other prompts."""
    cells = []
    for name, rows in (
        ("persona", prompts[prompts["persona"]]),
        ("other", prompts[~prompts["persona"]]),
    ):
        flagged = rows["score"] >= threshold
        benign, attack = rows["label"] == 0, rows["label"] == 1
        fpr = f"FPR {flagged[benign].mean():.3f} ({benign.sum()})" if benign.any() else "FPR –"
        rec = (
            f"recall {flagged[attack].mean():.3f} ({attack.sum()})" if attack.any() else "recall –"
        )
        cells.append(f"{name}: {fpr}, {rec}")
    return "; ".join(cells)


def _by_language(prompts: pd.DataFrame, threshold: float) -> str:
    """Benign FPR at ``threshold`` per language with ``MIN_BENIGN`` benign prompts or more.

    Most flagged first, each with its count of benign prompts.
    """
    benign = prompts[prompts["label"] == 0]
    flagged = (benign["score"] >= threshold).groupby(benign["language"]).agg(["mean", "size"])
    flagged = flagged[flagged["size"] >= MIN_BENIGN].sort_values(["mean", "size"], ascending=False)
    cells = [f"{lang} {row['mean']:.3f} ({row['size']:.0f})" for lang, row in flagged.iterrows()]
    return ", ".join(cells)


if __name__ == "__main__":
    main()
