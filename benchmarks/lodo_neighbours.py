"""What do the never-seen benign prompts that Gate flags look like to it? Their nearest attacks.

``bench_generalisation.py --scores DIR`` keeps each refit's held-out scores.
This takes, in every refit, the held-out benign prompts flagged at the refit's
LODO-rule threshold (max F1 s.t. FPR <= 1% on its inner-valid rows), embeds
them and every attack row of the trace with MiniLM (the ``embed`` extra), and
tallies the sources of each false alarm's ``--k`` nearest attacks (cosine),
leaving out attacks of the prompt's own source. A source that many false
alarms sit next to is one whose attacks the refits learned by a feature that
benign text shares: topic for harmful requests, wording for templates,
request form for injections that need a context. It also prints a sample of
false alarms beside their nearest attack. Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/lodo_neighbours.py \\
        runs/scores-lodo-default [--k 5] [--examples 12]
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from bench_generalisation import trace_frame

from gatebench.threshold import select_operating_point


def _false_alarms(folder: Path, frame: pd.DataFrame) -> list[tuple[str, int, float]]:
    """(held-out source, trace row, score) of each held-out benign prompt's flagged chunks."""
    y = frame["label"].to_numpy(dtype=np.int64)
    out = []
    for path in sorted(folder.glob("*.npz")):
        d = dict(np.load(path))
        theta = select_operating_point(y[d["valid"]], d["p_valid"], max_fpr=0.01).threshold
        hit = (y[d["test"]] == 0) & (d["p_test"] >= theta)
        pairs = zip(d["test"][hit], d["p_test"][hit], strict=True)
        out += [(path.stem, int(r), float(p)) for r, p in pairs]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scores", type=Path, help="a bench_generalisation.py --scores folder")
    ap.add_argument("--k", type=int, default=5, help="nearest attacks per false alarm")
    ap.add_argument("--examples", type=int, default=12, help="false alarms printed")
    args = ap.parse_args()

    from sentence_transformers import SentenceTransformer

    from gatebench.gate.static_embed import minilm_path

    frame = trace_frame()
    texts = frame["text"].to_numpy(dtype=object)
    source = frame["source"].to_numpy(dtype=object)
    alarms = {row: (held, p) for held, row, p in _false_alarms(args.scores, frame)}
    rows = np.array(sorted(alarms))
    attacks = np.flatnonzero(frame["label"].to_numpy() == 1)
    model = SentenceTransformer(str(minilm_path()), device="cpu")
    model.max_seq_length = 128

    def embed(idx: np.ndarray) -> np.ndarray:
        return np.asarray(
            model.encode([texts[i] for i in idx], batch_size=64, normalize_embeddings=True)
        )

    sim = embed(rows) @ embed(attacks).T
    tally: Counter[str] = Counter()
    nearest = []
    for i, row in enumerate(rows):
        own = source[attacks] == alarms[row][0]
        order = np.argsort(np.where(own, np.inf, -sim[i]))
        top = attacks[order[: args.k]]
        tally.update(source[top])
        nearest.append((row, top[0], sim[i, order[0]]))
    print(f"{len(rows)} flagged held-out benign chunks; sources of their {args.k} nearest attacks")
    print("| attack source | neighbour slots | share | its attack rows in the trace |")
    print("|---|---|---|---|")
    sizes = Counter(source[attacks])
    for name, n in tally.most_common():
        print(f"| {name} | {n} | {n / tally.total():.3f} | {sizes[name]} |")
    step = max(1, len(nearest) // max(args.examples, 1))
    for row, top, s in nearest[::step][: args.examples]:
        held, p = alarms[row]
        print(f"[{held} {p:.2f}] {texts[row][:100]!r}")
        print(f"    -> [{source[top]} {s:.2f}] {texts[top][:100]!r}")


if __name__ == "__main__":
    main()
