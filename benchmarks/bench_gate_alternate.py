"""Batch throughput of several Gate models, timed in turn in one process.

Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/bench_gate_alternate.py \
        --model DIR [--model DIR ...] [--deferred-weights I=W,W,W,B ...] [--rounds 5]

A shared machine's speed can drift by a quarter within an hour, so two models
timed in separate processes minutes apart can differ by more than what
separates them.
Here every model is loaded once into one process and each round scores the
same batch with each in turn (the order reversed every other round), so the
drift falls on all of them alike; the figure to read is the per-round ratio.
The texts are ``bench_gate.py``'s batch (2,000 of the held-out 20%, in
batches of 256). ``--deferred-weights I=...`` gives model ``I`` (0-based)
other deferred-stage weights, as ``bench_gate.py --deferred-weights`` does:
the same model can be timed as one whose weights read the windows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from bench_gate import _gate_dir, _split, _texts, set_deferred_weights


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, action="append", required=True)
    ap.add_argument("--deferred-weights", action="append", default=[], metavar="I=W,W,W,B")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n-batch", type=int, default=2000)
    args = ap.parse_args()

    from gatebench.gate import Gate

    gates = []
    for path in args.model:
        found = _gate_dir(path)
        if found is None:
            ap.error(f"--model {path}: no gate.json in it or in its state/ folder")
        gates.append(Gate.load(found))
    for spec in args.deferred_weights:
        index, _, values = spec.partition("=")
        if not index.isdigit() or int(index) >= len(gates):
            ap.error(f"--deferred-weights {spec!r}: give I=W,W,W,B with I a --model index")
        try:
            set_deferred_weights(gates[int(index)], values)
        except ValueError as err:
            ap.error(f"--deferred-weights {index}={err}")

    _, held, _ = _split()
    batch = _texts(held, args.n_batch, seed=2)
    for gate in gates:
        gate.warm()
        gate.score(batch[:50])  # lazy imports and first allocations
    rates: list[list[float]] = [[] for _ in gates]
    for r in range(args.rounds):
        order = range(len(gates)) if r % 2 == 0 else reversed(range(len(gates)))
        for i in order:
            t0 = time.perf_counter()
            for lo in range(0, len(batch), 256):
                gates[i].score(batch[lo : lo + 256])
            rates[i].append(len(batch) / (time.perf_counter() - t0))
    result = [
        {
            "model": str(path),
            "deferred_reads_windows": gate.deferred.reads_windows,
            "texts_per_s": [round(x, 1) for x in rate],
            "median": round(statistics.median(rate), 1),
            "median_ratio_to_first": round(
                statistics.median(a / b for a, b in zip(rate, rates[0], strict=True)), 3
            ),
        }
        for path, gate, rate in zip(args.model, gates, rates, strict=True)
    ]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
