"""How long ``gatebench evaluate`` takes: a shipped model on N never-seen prompts.

The rows come from a source the model's training trace caps (its default
trace keeps 3,000 of alpaca-instructions' 52,002 rows), so the uncapped rows
are text of a known kind the model never saw; the overlap check runs as in
any evaluation and sets the 3,000 aside. Reports the median wall time of
``--repeats`` runs and the split by step (data trace, overlap, scoring,
metrics).

Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/bench_evaluate.py \\
        MODEL_DIR [--rows 13000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from gatebench.unseen import evaluate_model

SOURCE = "alpaca-instructions"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--rows", type=int, default=13_000, help="rows of the source to read")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bootstrap", type=int, default=2000)
    args = parser.parse_args()
    walls, steps = [], []
    for i in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            r = evaluate_model(
                args.model_dir,
                [SOURCE],
                out=Path(tmp) / "out",
                caps={SOURCE: args.rows},
                n_resamples=args.bootstrap,
                cache_dir=Path(".cache/gatebench"),
            )
            walls.append(time.perf_counter() - t0)
            steps.append(r.timings_seconds)
            print(f"run {i}: {walls[-1]:.1f} s, {r.pooled.n} prompts scored, "
                  f"{r.overlap.prompts} set aside; {r.timings_seconds}")  # fmt: skip
    print(
        f"median wall {statistics.median(walls):.1f} s over {args.repeats} runs "
        f"({os.cpu_count()} cores); scored prompts {r.pooled.n}"
    )
    for key in steps[0]:
        print(f"  {key}: median {statistics.median(s[key] for s in steps):.1f} s")


if __name__ == "__main__":
    main()
