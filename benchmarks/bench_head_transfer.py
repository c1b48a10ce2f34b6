"""Which of Gate's heads carry over to text it never saw, and what the combination adds.

One refit holds out whole families (``bench_generalisation.FAMILIES``), training
corpora included. On the held-out rows it reports, for Gate's score, each
head's calibrated score and the plain mean of the heads' log-odds: the AUC
within each held-out family that has both labels, and FPR / recall at the
threshold that maximises F1 at FPR <= 1% on the refit's own inner-valid rows
(each column thresholded on its own valid scores). The same columns on the
inner-valid rows say what each costs on text like the training data.

A combiner that beats every head in-distribution but ranks held-out rows
worse than a single head has learned the training sources, not the task.

Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/bench_head_transfer.py \
        --hold security-benign non-english over-defence indirect-injection \
        [--param KEY=JSON ...] [--out runs/head-transfer.json]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
from bench_generalisation import FAMILIES


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(np.asarray(p, dtype=np.float64), 1e-6, 1 - 1e-6)
    return np.asarray(np.log(q) - np.log1p(-q))


def _columns(score: np.ndarray, heads: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Gate's score, every head, and the mean of the heads' log-odds, all as P(attack)."""
    out = {"gate": score, **heads}
    mean = np.mean([_logit(v) for v in heads.values()], axis=0)
    out["mean_of_heads"] = 1.0 / (1.0 + np.exp(-mean))
    return out


def main() -> None:
    from sklearn.metrics import roc_auc_score

    from gatebench.detectors import DetectorSpec, make_detector
    from gatebench.seeding import child_seed
    from gatebench.split.splitters import inner_split
    from gatebench.threshold import select_operating_point
    from gatebench.trace import DEFAULT_SOURCES, TraceSpec, build_trace

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hold", nargs="+", required=True, choices=sorted(FAMILIES))
    ap.add_argument("--param", action="append", default=[], help="Gate parameter KEY=JSON")
    ap.add_argument("--seed", type=int, default=20260527, help="trace and refit seed")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    params = {k: json.loads(v) for k, _, v in (p.partition("=") for p in args.param)}

    data = Path(os.environ.get("GATEBENCH_DATA", "../shared/datasets"))
    trace = build_trace(
        TraceSpec(sources=DEFAULT_SOURCES, seed=args.seed),
        data_dir=data,
        cache_dir=".cache/gatebench",
    )
    frame = trace.frame
    texts = frame["text"].to_numpy(dtype=object)
    y = frame["label"].to_numpy(dtype=np.int64)
    held_sources = {s for f in args.hold for s in FAMILIES[f]}
    held = frame["source"].isin(held_sources).to_numpy()
    train = np.flatnonzero(~held)
    tr, va = inner_split(y[train], valid_fraction=0.15, seed=child_seed(args.seed, "inner"))
    fit_rows, valid_rows = train[tr], train[va]
    gate = make_detector(DetectorSpec("gate", params), seed=child_seed(args.seed, "refit"))
    gate.fit(list(texts[fit_rows]), y[fit_rows], valid=(list(texts[valid_rows]), y[valid_rows]))

    test = np.flatnonzero(held)
    family = {s: f for f, srcs in FAMILIES.items() for s in srcs}
    fam = np.array([family[s] for s in frame["source"].to_numpy()[test]])
    y_valid, y_test = y[valid_rows], y[test]
    valid = _columns(gate.score(list(texts[valid_rows])), gate.head_scores(list(texts[valid_rows])))
    held_out = _columns(gate.score(list(texts[test])), gate.head_scores(list(texts[test])))
    report: dict[str, Any] = {"held_out": args.hold, "params": params, "columns": {}}
    for name, v_score in valid.items():
        op = select_operating_point(y_valid, v_score, max_fpr=0.01)
        row: dict[str, Any] = {
            "valid_auc": float(roc_auc_score(y_valid, v_score)),
            "valid_recall_at_1pct": float(op.recall),
        }
        hit = held_out[name] >= op.threshold
        for f in args.hold:
            part = fam == f
            yy, ss, hh = y_test[part], held_out[name][part], hit[part]
            row[f] = {
                "fpr": float(hh[yy == 0].mean()) if (yy == 0).any() else None,
                "recall": float(hh[yy == 1].mean()) if (yy == 1).any() else None,
                "auc": float(roc_auc_score(yy, ss)) if 0 < yy.sum() < len(yy) else None,
            }
        report["columns"][name] = row
        cells = " | ".join(
            f"{f}: " + ", ".join(f"{k} {v:.3f}" for k, v in row[f].items() if v is not None)
            for f in args.hold
        )
        print(
            f"{name:18s} valid AUC {row['valid_auc']:.4f} recall@1% "
            f"{row['valid_recall_at_1pct']:.3f} | {cells}",
            flush=True,
        )
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
