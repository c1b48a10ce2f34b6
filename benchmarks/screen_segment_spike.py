"""Does a lone attack-like sentence inside a longer text give a planted instruction away?

A planted instruction scores like an attack when read alone ("Ignore all
previous directions and ..." scores 0.99) and like its benign host when read
inside it (0.26). Shorter windows everywhere catch a few more plants and flag
many more benign texts, because a benign text's hardest sentence, read
without its context, also looks like an attack. What might tell them apart is
the rest of the text: a planted sentence is a lone spike among benign ones,
while a benign text on a dark topic has several sentences that score high.

Each LODO refit (the same split and seed as ``bench_generalisation.py``, so
its inner-valid and held-out row scores must match the saved ones) scores
every segment (:func:`gatebench.gate.topic_shift.segments`) of every
inner-valid and held-out row alone. This script only saves the segment
scores (``--scores``, one ``.npz`` per refit, beside the row scores); the
rules are read from them by ``lodo_segment_rules.py`` without refitting.

Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/screen_segment_spike.py \\
        --scores runs/scores-segments [--only bipia ...] [--jobs 2] [--fit-seed 1]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from bench_generalisation import fit_refit, held_units, trace_frame

from gatebench.parallel import Executor

SEED = 20260527


def segment_scores(model: Any, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every text's segments scored alone: the flat scores and each text's segment count."""
    from gatebench.gate.topic_shift import segments

    cut = [segments(t) for t in texts]
    flat = [s for parts in cut for s in parts]
    scores = np.asarray(model.score(flat), dtype=np.float64) if flat else np.zeros(0)
    return scores, np.fromiter((len(p) for p in cut), dtype=np.int64, count=len(cut))


def _unit(
    name: str, *, units: dict[str, tuple[str, ...]], frame: pd.DataFrame, out: Path, seed: int
) -> str:
    return one(name, units[name], frame, out, seed)


def one(name: str, held: tuple[str, ...], frame: pd.DataFrame, out: Path, seed: int = SEED) -> str:
    from gatebench.detectors import score_detector
    from gatebench.trace import positions_at

    t0 = time.perf_counter()
    texts = frame["text"].to_numpy(dtype=object)
    # Segment reading learns nothing, so this is the default's fit; off, the row
    # scores are the texts read whole, and the rules add the segments themselves.
    model, iv, test, positions = fit_refit(
        name, held, frame, "gate", {"segment_reading": False}, seed
    )
    kept: dict[str, np.ndarray] = {"valid": iv, "test": test}
    for key, rows in (("valid", iv), ("test", test)):
        kept[f"p_{key}"] = np.asarray(
            score_detector(model, list(texts[rows]), positions_at(positions, rows)),
            dtype=np.float64,
        )
        kept[f"seg_{key}"], kept[f"nseg_{key}"] = segment_scores(model, list(texts[rows]))
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / f"{name}.npz", **kept)
    return f"{name}: {time.perf_counter() - t0:.0f} s, {len(kept['seg_test'])} test segments"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scores", type=Path, required=True)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument(
        "--fit-seed",
        type=int,
        default=SEED,
        help="another inner split and detector seed per refit (as bench_generalisation's)",
    )
    args = ap.parse_args()

    frame = trace_frame()
    units = held_units(frame, "lodo")
    # In the order asked, so the refits that matter most finish first.
    names = list(units) if args.only is None else [n for n in args.only if n in units]
    done = {p.stem for p in args.scores.glob("*.npz")} if args.scores.exists() else set()
    todo = [n for n in names if n not in done]
    # The project's executor, so each refit runs at one native thread whatever --jobs is.
    shared = {"units": units, "frame": frame, "out": args.scores, "seed": args.fit_seed}
    for line in Executor("local", args.jobs).map(_unit, todo, shared=shared):
        print(line, flush=True)


if __name__ == "__main__":
    main()
