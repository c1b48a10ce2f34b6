"""Does a shorter scanning window catch injections hidden in documents a model never saw?

An instruction planted in a long email or web page is a small part of the
window it is scored in, so the window's features are mostly the benign host.
For each held-out source (LODO rule: Gate fitted on every other row, inner
85/15 split, threshold = max F1 s.t. FPR <= 1% on the inner-valid rows, as
``bench_generalisation.py`` does), the held-out prompts are rebuilt whole and
scored again with windows of several sizes (10% overlap, max-pooled), at the
same threshold. Reported per size: recall, FPR and F1 on the held-out source,
and the FPR on the refit's own inner-valid benign rows scored the same way
(smaller windows give a benign text more chances to trip the threshold).

Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/bench_window_size.py \\
        [--held bipia injecagent agentdojo-environments] [--sizes 4000 2000 1000 500] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import numpy as np
import pandas as pd

SEED = 20260527


def _pooled(model: Any, texts: list[str], size: int) -> np.ndarray:
    from gatebench.chunking import chunk_spans

    spans = [chunk_spans(t, size, size // 10) for t in texts]
    flat = [t[a:b] for t, sp in zip(texts, spans, strict=True) for a, b in sp]
    raw = np.asarray(model.score(flat), dtype=np.float64)
    counts = np.fromiter((len(sp) for sp in spans), dtype=np.int64)
    return np.maximum.reduceat(raw, np.concatenate(([0], np.cumsum(counts)[:-1])))


def _prompts(frame: pd.DataFrame, overlap: int) -> pd.DataFrame:
    from gatebench.chunking import join_chunks

    rows = frame.sort_values(["sample_id", "chunk"]).groupby("sample_id", sort=False)
    return rows.agg(
        text=("text", lambda c: join_chunks(list(c), overlap)), label=("label", "first")
    )


def one(name: str, frame: pd.DataFrame, sizes: list[int], overlap: int) -> dict[str, Any]:
    from sklearn.metrics import f1_score

    from gatebench.detectors import DetectorSpec, make_detector
    from gatebench.seeding import child_seed
    from gatebench.split.splitters import inner_split
    from gatebench.threshold import select_operating_point

    held = (frame["source"] == name).to_numpy()
    texts = frame["text"].to_numpy(dtype=object)
    y = frame["label"].to_numpy(dtype=np.int64)
    train = np.flatnonzero(~held)
    tr, va = inner_split(y[train], valid_fraction=0.15, seed=child_seed(SEED, "inner", name))
    it, iv = train[tr], train[va]
    model = make_detector(DetectorSpec("gate", {}), seed=child_seed(SEED, "refit", name))
    model.fit(list(texts[it]), y[it], valid=(list(texts[iv]), y[iv]))
    theta = select_operating_point(y[iv], model.score(list(texts[iv])), max_fpr=0.01).threshold
    test = _prompts(frame[held], overlap)
    valid = _prompts(frame.iloc[iv], overlap)
    benign_valid = valid[valid["label"] == 0]
    out: dict[str, Any] = {"held_out": name, "threshold": float(theta), "sizes": {}}
    for size in sizes:
        s = _pooled(model, list(test["text"]), size)
        yy, pred = test["label"].to_numpy(), s >= theta
        vb = _pooled(model, list(benign_valid["text"]), size) >= theta
        out["sizes"][str(size)] = {
            "recall": float(pred[yy == 1].mean()) if (yy == 1).any() else None,
            "fpr": float(pred[yy == 0].mean()) if (yy == 0).any() else None,
            "f1": float(f1_score(yy, pred)) if 0 < yy.sum() < len(yy) else None,
            "valid_benign_fpr": float(vb.mean()),
        }
        print(name, size, out["sizes"][str(size)], flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--held", nargs="*", default=["bipia", "injecagent", "agentdojo-environments"])
    ap.add_argument("--sizes", nargs="*", type=int, default=[4000, 2000, 1000, 500])
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()

    from joblib import Parallel, delayed

    from gatebench.trace import TraceSpec, build_trace

    trace = build_trace(
        TraceSpec(sources=("default",), seed=SEED),
        data_dir=os.environ.get("GATEBENCH_DATA"),
        cache_dir=".cache/gatebench",
    )
    overlap = int(trace.info["chunking"]["chunk_overlap"])
    results = Parallel(n_jobs=args.jobs)(
        delayed(one)(name, trace.frame, args.sizes, overlap) for name in args.held
    )
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
