"""Which of Gate's combiner columns carry its score on a source it never saw.

Permutation importance in the run (``--diagnostics all``) is measured on
rows of sources the fold model saw. Here each held-out source gets its LODO
refit (``bench_generalisation.py``'s split, seed and threshold rule: max F1
s.t. FPR <= 1% on the refit's inner-valid rows), and its rows are scored
with each feature group's combiner columns shuffled (``Gate.score_permuted``)
across the held-out rows and a seeded sample of the inner-valid rows, so a
held-out row's column is replaced by one from anywhere in that mix. The
held-out source's primary metric is then read at the refit's threshold,
as in LODO. A fall means the group carries the source's score; a rise
means the source reads the wrong way in that group, and columns from other
rows serve it better. One shuffle per group (``--repeats`` for more).

Rows are appended to a JSON-lines file as each refit finishes. Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/lodo_permutation.py \\
        --out runs/lodo-permutation.jsonl [--only bipia xstest] [--jobs 2] [--param KEY=JSON]
    .venv/bin/python benchmarks/lodo_permutation.py --out runs/lodo-permutation.jsonl --table
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from bench_generalisation import fit_refit, held_units, refit_row, trace_frame

from gatebench.parallel import Executor

MIX = 1500


def _primary(row: dict[str, Any], name: str) -> float:
    return float(row["per_source"][name]["value"])


def _one(
    unit: tuple[str, tuple[str, ...]],
    frame: pd.DataFrame,
    params: dict[str, Any],
    repeats: int,
    seed: int = 20260527,
) -> dict[str, Any]:
    """One refit: its held-out primary as scored, and with each group shuffled."""
    from gatebench.detectors import score_detector
    from gatebench.seeding import child_seed
    from gatebench.trace import positions_at

    name, held = unit
    t0 = time.perf_counter()
    texts = frame["text"].to_numpy(dtype=object)
    model, iv, test, positions = fit_refit(name, held, frame, "gate", params, seed)
    p_valid = np.asarray(score_detector(model, list(texts[iv]), positions_at(positions, iv)))
    pick = np.random.default_rng(child_seed(seed, "lodo-permutation", name))
    mix = np.sort(pick.choice(iv, size=min(MIX, iv.size), replace=False))
    rows = np.concatenate([test, mix])
    batch, where = list(texts[rows]), positions_at(positions, rows)
    base = np.asarray(score_detector(model, batch, where))
    row = refit_row(name, held, frame, iv, p_valid, test, base[: test.size])
    groups: dict[str, list[float]] = {}
    for group in model.feature_groups:
        for r in range(repeats):
            rng = np.random.default_rng(child_seed(seed, "lodo-permutation", name, group, r))
            shuffled = model.score_permuted(batch, group, rng, where)
            again = refit_row(name, held, frame, iv, p_valid, test, shuffled[: test.size])
            groups.setdefault(group, []).append(_primary(again, name))
    return {
        "held_out": name,
        "metric": row["per_source"][name]["metric"],
        "base": _primary(row, name),
        "threshold": row["threshold"],
        "groups": {g: float(np.mean(v)) for g, v in groups.items()},
        "seconds": time.perf_counter() - t0,
    }


def table(rows: list[dict[str, Any]]) -> str:
    """Per held-out source, each group's primary shuffled minus as scored."""
    groups = list(rows[0]["groups"])
    lines = [
        "| held out | metric | as scored | " + " | ".join(groups) + " |",
        "|---|---|---|" + "---|" * len(groups),
    ]
    for r in sorted(rows, key=lambda r: r["base"]):
        cells = [f"{r['groups'][g] - r['base']:+.3f}" for g in groups]
        head = f"| {r['held_out']} | {r['metric']} | {r['base']:.3f} | "
        lines.append(head + " | ".join(cells) + " |")
    means = [np.mean([r["groups"][g] - r["base"] for r in rows]) for g in groups]
    lines.append("| **mean** | | | " + " | ".join(f"**{m:+.3f}**" for m in means) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", default=None, help="these held-out sources")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--param", action="append", default=[], help="KEY=JSON Gate setting")
    parser.add_argument("--table", action="store_true", help="print the saved rows' table only")
    args = parser.parse_args()
    if not args.table:
        params = {k: json.loads(v) for k, v in (p.split("=", 1) for p in args.param)}
        frame = trace_frame()
        units = held_units(frame, "lodo")
        unknown = sorted(set(args.only or ()) - set(units))
        if unknown:
            raise SystemExit(f"--only {unknown}: not held-out sources; choose from {sorted(units)}")
        done = set()
        if args.out.is_file():
            done = {json.loads(line)["held_out"] for line in args.out.read_text().splitlines()}
        todo = [(k, v) for k, v in units.items() if (not args.only or k in args.only)]
        todo = [u for u in todo if u[0] not in done]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        shared = {"frame": frame, "params": params, "repeats": args.repeats}
        for row in Executor("local", args.jobs).map(_one, todo, shared=shared):
            with args.out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(f"{row['held_out']}: {row['base']:.3f} {row['groups']}", flush=True)
    rows = [json.loads(line) for line in args.out.read_text().splitlines() if line.strip()]
    print(table(rows))


if __name__ == "__main__":
    main()
