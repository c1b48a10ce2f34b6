"""Which rule for the shipped threshold holds on a benign source none of its inputs held?

``gatebench train`` ships the lowest threshold at which the mean FPR over
never-seen benign sources is at most 3%. A deployment is one more source. This
reads the saved refits of a LODO run (``bench_generalisation.py --scores``),
leaves each held-out benign source (20 prompts or more) out of the rule in
turn, places the threshold by the rule on the others' held-out prompts, and
reads the left-out source's FPR there, with the pooled recall of every
held-out attack. A rule whose FPR on the left-out source stays near its target
transfers to new benign text; one that does only on average does not. Rules:
mean, pooled, and worst source, each at a bound. Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/threshold_rules_loo.py \\
        runs/scores-lodo-default
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from bench_generalisation import pool_prompts, trace_frame

MIN_BENIGN = 20


def _rules(benign: dict[str, np.ndarray]) -> dict[str, Callable[[list[str], float], float]]:
    """Each rule: the lowest threshold of the grid meeting it on the named sources."""
    grid = np.unique(np.concatenate([*benign.values(), [1.0]]))

    def lowest(ok: Callable[[float], bool]) -> float:
        return float(next(t for t in grid if ok(t)))

    def rates(t: float, names: list[str]) -> np.ndarray:
        return np.array([(benign[n] >= t).mean() for n in names])

    return {
        "mean": lambda names, b: lowest(lambda t: rates(t, names).mean() <= b),
        "pooled": lambda names, b: lowest(
            lambda t: (np.concatenate([benign[n] for n in names]) >= t).mean() <= b
        ),
        "worst source": lambda names, b: lowest(lambda t: rates(t, names).max() <= b),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scores", type=Path)
    ap.add_argument("--bounds", default="mean=0.03,pooled=0.03,worst source=0.05,worst source=0.1")
    args = ap.parse_args()
    frame = trace_frame().reset_index(drop=True)
    prompts = []
    for path in sorted(args.scores.glob("*.npz")):
        d = dict(np.load(path))
        prompts.append(pool_prompts(frame, d["test"], d["p_test"]).assign(held=path.stem))
    pooled = pd.concat(prompts)
    benign = {
        s: g["s"].to_numpy()
        for s, g in pooled[pooled["y"] == 0].groupby("held")
        if len(g) >= MIN_BENIGN
    }
    attacks = pooled.loc[pooled["y"] == 1, "s"].to_numpy()
    rules = _rules(benign)
    print("| rule | left-out FPR: mean | max | sources over 5% | recall (median) | each left out |")
    print("|---|---|---|---|---|---|")
    for item in args.bounds.split(","):
        name, bound = item.rsplit("=", 1)
        rows = []
        for left in benign:
            t = rules[name]([n for n in benign if n != left], float(bound))
            rows.append((left, t, (benign[left] >= t).mean(), (attacks >= t).mean()))
        fpr = np.array([r[2] for r in rows])
        each = " · ".join(f"{left} {f:.3f} at {t:.3f}" for left, t, f, _ in rows)
        print(
            f"| {name} ≤ {bound} | {fpr.mean():.3f} | {fpr.max():.3f} | "
            f"{(fpr > 0.05).sum()} of {len(rows)} | {np.median([r[3] for r in rows]):.3f} | "
            f"{each} |"
        )


if __name__ == "__main__":
    main()
