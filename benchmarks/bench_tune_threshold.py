"""Does a threshold re-picked on part of a never-seen benign source hold on the rest of it?

``gatebench tune-threshold`` re-picks a model directory's threshold on a sample
of a deployment's benign traffic. This measures the rule on sources the model
never trained on (train it with them left out of ``--sources``): each benign
source, and all of them pooled, is split in two halves at random, the rule
picks a threshold on one half, and the FPR is read on the other. Over
``--splits`` draws it prints, beside the shipped threshold's FPR, the median
re-picked threshold, the median FPR on the unseen half, the share of draws in
which that FPR met the target (the bound's confidence says how often it
should), and the recall on the never-seen attack sources at the median
threshold. Every prompt is scored once with :func:`gatebench.bulk.score_file`
(the command's own scoring), and one real ``tune_threshold`` call on the
pooled sources' first draw checks that the command picks what the rule picks.
Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/bench_tune_threshold.py \\
        runs/model-minus5 --benign wildguard-benign notinject xstest \\
        --attacks harmbench donotanswer xstest --splits 50 --out runs/tune-threshold.json
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from gatebench.bulk import score_file
from gatebench.bulk.retune import tune_threshold
from gatebench.bulk.traffic_bound import min_prompts, traffic_bound
from gatebench.data import get_loader
from gatebench.modeldir import load_model
from gatebench.seeding import child_seed


def _prompts(name: str, label: int, data: Path) -> list[dict[str, object]]:
    """A source's prompts of one label, as rows ``gatebench score`` reads."""
    result = get_loader(name).load(data / name, seed=0)
    return [
        {"id": s.sample_id, "text": s.text, "position": s.position}
        for s in result.samples
        if s.label == label
    ]


def _scores(model_dir: Path, rows: list[dict[str, object]], tmp: Path, tag: str) -> np.ndarray:
    path = tmp / f"{tag}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    summary = score_file(model_dir, path, tmp / f"{tag}.parquet")
    if summary["rows_rejected"]:
        raise SystemExit(f"{tag}: {summary['rows_rejected']} rows rejected; see {path}")
    return np.asarray(pq.read_table(tmp / f"{tag}.parquet").column("score"), dtype=np.float64)


def _draws(scores: np.ndarray, args: argparse.Namespace, tag: str) -> list[dict[str, float]]:
    """Per draw: the threshold picked on one half and the FPR it gives on the other."""
    out = []
    for i in range(args.splits):
        rng = np.random.default_rng(child_seed(args.seed, "tune-threshold", tag, i))
        order = rng.permutation(len(scores))
        half = len(scores) // 2
        tuned, rest = scores[order[:half]], scores[order[half:]]
        b = traffic_bound(tuned, args.target_fpr, args.confidence)
        out.append({"threshold": b.threshold, "fpr_rest": float((rest >= b.threshold).mean())})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir", type=Path)
    ap.add_argument("--benign", nargs="+", required=True, help="benign prompts of these sources")
    ap.add_argument("--attacks", nargs="+", default=[], help="attacks of these sources")
    ap.add_argument("--splits", type=int, default=50)
    ap.add_argument("--target-fpr", type=float, default=0.01)
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--seed", type=int, default=20260527)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    data = Path(os.environ["GATEBENCH_DATA"])
    shipped = load_model(args.model_dir).threshold
    report: dict[str, object] = {"model": str(args.model_dir), "shipped": shipped, **vars(args)}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        benign = {s: _prompts(s, 0, data) for s in args.benign}
        scores = {
            s: _scores(args.model_dir, rows, tmp, f"benign-{s}") for s, rows in benign.items()
        }
        scores["pooled"] = np.concatenate(list(scores.values()))
        attack_rows = [r for s in args.attacks for r in _prompts(s, 1, data)]
        attacks = _scores(args.model_dir, attack_rows, tmp, "attacks") if attack_rows else None
        rows = []
        floor = min_prompts(args.target_fpr, args.confidence)
        for tag, s in scores.items():
            if len(s) // 2 < floor:
                print(f"{tag}: {len(s)} prompts, halves under the {floor} the bound needs; skipped")
                continue
            draws = _draws(s, args, tag)
            theta = float(np.median([d["threshold"] for d in draws]))
            fpr_rest = np.array([d["fpr_rest"] for d in draws])
            rows.append({
                "benign": tag, "n": len(s), "fpr_shipped": float((s >= shipped).mean()),
                "threshold_median": theta,
                "threshold_range": [min(d["threshold"] for d in draws),
                                    max(d["threshold"] for d in draws)],
                "fpr_rest_median": float(np.median(fpr_rest)),
                "fpr_rest_max": float(fpr_rest.max()),
                "met_target": float((fpr_rest <= args.target_fpr).mean()),
                "recall_shipped": None if attacks is None else float((attacks >= shipped).mean()),
                "recall_median": None if attacks is None else float((attacks >= theta).mean()),
            })  # fmt: skip
        # The command itself, on the pooled sources' first draw.
        pooled = [r for rs in benign.values() for r in rs]
        order = np.random.default_rng(child_seed(args.seed, "tune-threshold", "pooled", 0))
        first = [pooled[i] for i in order.permutation(len(pooled))[: len(pooled) // 2]]
        (tmp / "half.jsonl").write_text("".join(json.dumps(r) + "\n" for r in first))
        t0 = time.perf_counter()
        record = tune_threshold(
            args.model_dir, tmp / "half.jsonl", tmp / "tuned",
            target_fpr=args.target_fpr, confidence=args.confidence,
        )  # fmt: skip
        seconds = time.perf_counter() - t0
        expected = _draws(
            scores["pooled"], argparse.Namespace(**{**vars(args), "splits": 1}), "pooled"
        )
        report["command"] = {
            "seconds": round(seconds, 2), "threshold": record["chosen"]["threshold"],
            "same_as_rule": record["chosen"]["threshold"] == expected[0]["threshold"],
        }  # fmt: skip
    report["rows"] = rows
    print(f"shipped threshold {shipped:.4f}; target FPR {args.target_fpr:g} at "
          f"{args.confidence:g} confidence; {args.splits} draws of halves")  # fmt: skip
    print(
        "| benign | prompts | FPR at shipped | re-picked (median, range) | FPR on the other "
        "half (median, max) | draws meeting the target | attack recall, shipped → re-picked |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        lo, hi = r["threshold_range"]
        recall = ("" if r["recall_shipped"] is None
                  else f"{r['recall_shipped']:.3f} → {r['recall_median']:.3f}")  # fmt: skip
        print(f"| {r['benign']} | {r['n']} | {r['fpr_shipped']:.3f} | {r['threshold_median']:.4f} "
              f"({lo:.4f}-{hi:.4f}) | {r['fpr_rest_median']:.3f} ({r['fpr_rest_max']:.3f}) | "
              f"{r['met_target']:.2f} | {recall} |")  # fmt: skip
    print(f"the command on the pooled first half: {report['command']}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
