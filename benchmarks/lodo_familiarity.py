"""Does Gate know when it is off its map? Never-seen prompts by how close they sit to training text.

``bench_generalisation.py --scores DIR`` keeps each refit's inner-valid and
held-out row scores. For every refit this embeds the trace with the static
MiniLM table Gate's fast path reads, in the ``--dims`` leading directions of
the refit's fitted rows as Gate's neighbour banks do (64 by default), and
gives each row its *familiarity*: its highest cosine similarity to any row
the refit was fitted on (the trace's rows outside the held-out sources and
outside the refit's inner-valid rows), which is the larger of the two
nearest-neighbour similarities the neighbour head already computes. The
inner-valid rows come from the sources the refit knows, so the
``--quantile`` quantile of their familiarity is a cut that needs no
held-out text: a prompt below it is further from everything the
model was fitted on than all but that share of text like its training data.

It prints the held-out benign FPR and attack recall at each refit's
LODO-rule threshold (max F1 s.t. FPR <= 1% on its inner-valid rows), pooled
over every refit, for the prompts below the cut and above it, and by
familiarity quartile. If the false alarms on never-seen text gather below
the cut, the cut is a warning a deployment can read per request: its score
there was learnt from text unlike it. Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/lodo_familiarity.py \\
        runs/scores-lodo-default [--quantile 0.05]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from bench_generalisation import trace_frame

from gatebench.gate.heads.neighbours import _principal_directions
from gatebench.threshold import select_operating_point


def nearest(unit: np.ndarray, rows: np.ndarray, bank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each of ``rows``' highest cosine similarity to ``bank`` (unit vectors), and its row."""
    sim = np.empty(len(rows), dtype=np.float32)
    where = np.empty(len(rows), dtype=np.int64)
    for start in range(0, len(rows), 1024):
        block = rows[start : start + 1024]
        s = unit[block] @ unit[bank].T
        where[start : start + len(block)] = bank[s.argmax(axis=1)]
        sim[start : start + len(block)] = s.max(axis=1)
    return sim, where


def _wilson(k: int, n: int) -> str:
    from scipy.stats import binomtest

    if n == 0:
        return "–"
    ci = binomtest(k, n).proportion_ci(method="wilson")
    return f"{k / n:.3f} [{ci.low:.3f}, {ci.high:.3f}] ({n})"


def refit_prompts(
    frame: pd.DataFrame, emb: np.ndarray, npz: Path, quantile: float, dims: int
) -> pd.DataFrame:
    """One refit's held-out prompts: label, flagged at the LODO rule, familiarity, below the cut."""
    y = frame["label"].to_numpy(dtype=np.int64)
    d = dict(np.load(npz))
    held = set(frame["source"].to_numpy()[d["test"]])
    outside = ~frame["source"].isin(held).to_numpy()
    outside[d["valid"]] = False
    fitted = np.flatnonzero(outside)
    basis = _principal_directions(emb[fitted], dims)
    flat = emb if basis is None else emb @ basis
    unit = flat / np.maximum(np.linalg.norm(flat, axis=1, keepdims=True), 1e-12)
    cut = float(np.quantile(nearest(unit, d["valid"], fitted)[0], quantile))
    theta = select_operating_point(y[d["valid"]], d["p_valid"], max_fpr=0.01).threshold
    sim, where = nearest(unit, d["test"], fitted)
    rows = pd.DataFrame(
        {
            "id": frame["sample_id"].to_numpy()[d["test"]],
            "y": y[d["test"]],
            "flag": d["p_test"] >= theta,
            "fam": sim,
            "near_attack": y[where] == 1,
        }
    )
    # A prompt is flagged if any chunk is, and is as familiar as its least familiar chunk.
    prompts = rows.groupby("id").agg(
        y=("y", "first"),
        flag=("flag", "max"),
        fam=("fam", "min"),
        near_attack=("near_attack", "max"),
    )
    prompts["below"] = prompts["fam"] < cut
    prompts["refit"] = npz.stem
    prompts["cut"] = cut
    return prompts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scores", type=Path, help="a bench_generalisation.py --scores folder")
    ap.add_argument(
        "--quantile", type=float, default=0.05, help="the cut's quantile of inner-valid familiarity"
    )
    ap.add_argument("--dims", type=int, default=64, help="leading directions searched (0: all 256)")
    args = ap.parse_args()

    from gatebench.gate.static_embed import StaticEmbedder, distill_static

    frame = trace_frame().reset_index(drop=True)
    vectors, tokenizer = distill_static(cache_dir=".cache/gatebench")
    emb = StaticEmbedder(vectors, tokenizer).encode(frame["text"].tolist()).astype(np.float32)
    prompts = pd.concat(
        [
            refit_prompts(frame, emb, p, args.quantile, args.dims)
            for p in sorted(args.scores.glob("*.npz"))
        ]
    )
    cuts = prompts.groupby("refit")["cut"].first()
    print(
        f"{len(cuts)} refits; cut at the {args.quantile:g} quantile of inner-valid familiarity: "
        f"{cuts.min():.3f}-{cuts.max():.3f} (median {cuts.median():.3f})"
    )
    print("| held-out prompts | share | benign FPR [95% CI] (prompts) | attack recall (prompts) |")
    print("|---|---|---|---|")
    bands = [("below the cut", prompts["below"]), ("above the cut", ~prompts["below"])]
    edges = np.quantile(prompts["fam"], [0.25, 0.5, 0.75])
    quartile = np.searchsorted(edges, prompts["fam"].to_numpy(), side="right")
    bands += [
        (f"familiarity quartile {q + 1}", pd.Series(quartile == q, index=prompts.index))
        for q in range(4)
    ]
    bands.append(("all", pd.Series(True, index=prompts.index)))
    for name, mask in bands:
        part = prompts[mask.to_numpy()]
        benign, attack = part[part["y"] == 0], part[part["y"] == 1]
        print(
            f"| {name} | {len(part) / len(prompts):.3f} "
            f"| {_wilson(int(benign['flag'].sum()), len(benign))} "
            f"| {_wilson(int(attack['flag'].sum()), len(attack))} |"
        )
    print(f"quartile edges: {', '.join(f'{e:.3f}' for e in edges)}")
    print("| held-out prompts | nearest fitted row an attack: share (prompts) |")
    print("|---|---|")
    for label, name in ((1, "attacks"), (0, "benign")):
        for flag, verdict in ((True, "flagged"), (False, "passed")):
            part = prompts[(prompts["y"] == label) & (prompts["flag"] == flag)]
            share = part["near_attack"].mean() if len(part) else float("nan")
            print(f"| {name}, {verdict} | {share:.3f} ({len(part)}) |")


if __name__ == "__main__":
    main()
