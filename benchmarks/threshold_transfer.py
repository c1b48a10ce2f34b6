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
English, the model reads the language, not what the text asks. The refits
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

from gatebench.config import RunConfig
from gatebench.unseen.calibrate import MIN_BENIGN, lowest_threshold, prompt_scores, source_point


def held_out_prompts(folder: Path, frame: pd.DataFrame) -> pd.DataFrame:
    """Every refit's held-out rows in ``folder`` as prompts: ``source``, ``label``, ``score``."""
    parts = []
    language = frame.groupby("sample_id", sort=False)["language"].first()
    for path in sorted(folder.glob("*.npz")):
        z = np.load(path)
        if z["test"].size and int(z["test"].max()) >= len(frame):
            raise SystemExit(f"{path} scores trace rows past the default trace's {len(frame)}")
        part = prompt_scores(frame, z["test"], z["p_test"])
        parts.append(part.assign(refit=path.stem, language=language.reindex(part.index).values))
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
