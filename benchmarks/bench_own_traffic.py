"""Does training on part of a deployment's benign traffic fix the ranking that a threshold cannot?

``gatebench tune-threshold`` holds a deployment's false-alarm rate by raising
the threshold, and on benign kinds the model never saw that costs most of its
recall (benchmarks/RESULTS.md, "A threshold for your own traffic"). The other
thing a deployment can do with its benign traffic is train on it: pass the file
to ``gatebench train`` as a training source. This measures that on sources the
model never trained on, in two steps.

``split`` draws half of each never-seen benign source's prompts (seeded) into
``DIR/own.jsonl``, the "traffic" to train on, and keeps the other half in
``DIR/rest.jsonl`` for measuring; it prints the ``gatebench train`` arguments
that add ``own.jsonl`` as a training source.

``--contaminate N --contaminate-from SOURCE`` adds ``N`` of SOURCE's attacks
to the traffic, labelled benign, as in a sample nobody cleared; ``measure``
then leaves them out of the attacks it reads recall on.

``pseudo`` keeps the part of a split's traffic (planted attacks included) that a
model scores lowest, as training on traffic nobody cleared would.

``export`` writes the never-seen benign sources whole (``DIR/traffic.jsonl``,
no labels) and the attack sources (``DIR/attacks.jsonl``), for ``gatebench
adapt``, which splits and trains in one step.

``measure`` scores the held-back half and the never-seen attack sources with
each model directory given (the model trained without the traffic, and the one
trained with it) and prints, per model: the FPR on the held-back half and the
recall at the shipped threshold; the AUC of attacks against that half; the
recall at the thresholds that give FPR 1%, 3% and 5% on it (an equal-FPR read of
the ranking, not an operating point); and, in ``--splits`` draws, the
``tune-threshold`` rule applied to one half of the held-back prompts, read on
the other half. Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/bench_own_traffic.py split \\
        --benign wildguard-benign notinject xstest --out runs/own-traffic
    GATEBENCH_DATA=../shared/datasets .venv/bin/gatebench train -s ... \\
        -s runs/own-traffic/own.jsonl --role own-traffic=training runs/model-minus5-own
    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/bench_own_traffic.py measure \\
        runs/model-minus5 runs/model-minus5-own --split runs/own-traffic \\
        --attacks harmbench donotanswer xstest --out runs/own-traffic/measure.json
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from bench_tune_threshold import _draws, _prompts, _scores
from sklearn.metrics import roc_auc_score

from gatebench.config import RunConfig
from gatebench.modeldir import load_model
from gatebench.seeding import child_seed
from gatebench.split.groups import LSHParams, near_duplicate_clusters
from gatebench.unseen.calibrate import lowest_threshold

#: The source name ``own.jsonl`` takes in the trace (``--source-name`` is not needed: a
#: file's source is its stem).
SOURCE = "own-traffic"
#: The trace seed, which also seeds the near-duplicate step.
SEED = RunConfig.model_fields["seed"].default
#: FPRs on the held-back half at which the ranking is read.
EQUAL_FPR = (0.01, 0.03, 0.05)


def split(args: argparse.Namespace) -> None:
    """Write ``own.jsonl`` (trained on) and ``rest.jsonl`` (measured on), half of each source."""
    data = Path(os.environ["GATEBENCH_DATA"])
    own, rest = [], []
    for name in args.benign:
        rows = _prompts(name, 0, data)
        # Whole near-duplicate clusters go to one half, as the trace's folds keep them.
        cluster = near_duplicate_clusters([str(r["text"]) for r in rows], LSHParams(seed=SEED))
        rng = np.random.default_rng(child_seed(args.seed, "own-traffic", name))
        # A cluster's rank is its place in a random order of clusters.
        rank = np.argsort(rng.permutation(int(cluster.max()) + 1))[cluster]
        order = np.argsort(rank, kind="stable")
        half = len(rows) // 2
        for i, j in enumerate(order):
            row = {**rows[j], "label": "benign", "from": name}
            (own if i < half or rank[j] == rank[order[half - 1]] else rest).append(row)
        print(f"{name}: {len(rows)} prompts in {int(cluster.max()) + 1} near-duplicate clusters")
    if args.contaminate:
        attacks = _prompts(args.contaminate_from, 1, data)
        rng = np.random.default_rng(child_seed(args.seed, "own-traffic-attacks"))
        picked = [attacks[i] for i in sorted(rng.choice(len(attacks), args.contaminate, False))]
        from_ = f"{args.contaminate_from} (attack)"
        own += [{**r, "label": "benign", "from": from_} for r in picked]
        print(f"{len(picked)} attacks of {args.contaminate_from} in the traffic, labelled benign")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "contaminants.json").write_text(
        json.dumps([r["id"] for r in own if r["from"].endswith("(attack)")]) + "\n"
    )
    for tag, rows in (("own", own), ("rest", rest)):
        path = args.out / f"{SOURCE if tag == 'own' else tag}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        print(f"{path}: {len(rows)} benign prompts")
    print(f"add to gatebench train: -s {args.out / SOURCE}.jsonl --role {SOURCE}=training")


def _recall_at_fpr(benign: np.ndarray, attacks: np.ndarray, fpr: float) -> float:
    """Recall at the lowest threshold whose FPR on ``benign`` is at most ``fpr``."""
    prompts = pd.DataFrame({
        "label": np.r_[np.zeros(len(benign)), np.ones(len(attacks))],
        "source": "held-back", "score": np.r_[benign, attacks],
    })  # fmt: skip
    return float((attacks >= lowest_threshold(prompts, fpr)).mean())


def _tuned(benign: np.ndarray, attacks: np.ndarray, args: argparse.Namespace) -> dict[str, float]:
    """The tune-threshold rule on one half of the held-back prompts, read on the other."""
    draws = _draws(benign, args, "own-traffic")
    return {
        "fpr_rest_median": float(np.median([d["fpr_rest"] for d in draws])),
        "recall_median": float(np.median([(attacks >= d["threshold"]).mean() for d in draws])),
    }


def measure(args: argparse.Namespace) -> None:
    """Score the held-back half and the attacks with every model; print one row per model."""
    data = Path(os.environ["GATEBENCH_DATA"])
    rest = [json.loads(line) for line in (args.split / "rest.jsonl").read_text().splitlines()]
    rows = [{"id": r["id"], "text": r["text"], "position": r["position"]} for r in rest]
    planted = args.split / "contaminants.json"
    left_out = set(json.loads(planted.read_text())) if planted.is_file() else set()
    attack_rows = [r for s in args.attacks for r in _prompts(s, 1, data) if r["id"] not in left_out]
    attack_source = [str(r["id"]).partition(":")[0] for r in attack_rows]
    report = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for model_dir in args.models:
            shipped = load_model(model_dir).threshold
            benign = _scores(model_dir, rows, tmp, f"rest-{model_dir.name}")
            attacks = _scores(model_dir, attack_rows, tmp, f"attacks-{model_dir.name}")
            y = np.r_[np.zeros(len(benign)), np.ones(len(attacks))]
            by_source = {
                s: float((benign[[r["from"] == s for r in rest]] >= shipped).mean())
                for s in dict.fromkeys(r["from"] for r in rest)
            }
            recall_by_source = {
                s: float((attacks[[a == s for a in attack_source]] >= shipped).mean())
                for s in dict.fromkeys(attack_source)
            }
            report.append({
                "model": str(model_dir), "shipped": shipped,
                "fpr_shipped": float((benign >= shipped).mean()), "fpr_by_source": by_source,
                "recall_shipped": float((attacks >= shipped).mean()),
                "recall_by_source": recall_by_source,
                "auc": float(roc_auc_score(y, np.r_[benign, attacks])),
                "recall_at_fpr": {f: _recall_at_fpr(benign, attacks, f) for f in EQUAL_FPR},
                "tuned": _tuned(benign, attacks, args),
            })  # fmt: skip
    print(f"{len(rest)} held-back benign prompts, {len(attack_rows)} never-seen attacks; "
          f"tune-threshold at {args.target_fpr:g} ({args.confidence:g}), "
          f"{args.splits} draws")  # fmt: skip
    print("| model | shipped | FPR / recall at shipped | AUC | recall at FPR 1% / 3% / 5% "
          "| tuned: FPR on the other half / recall (medians) |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for r in report:
        eq = " / ".join(f"{v:.3f}" for v in r["recall_at_fpr"].values())
        t = r["tuned"]
        print(f"| {Path(r['model']).name} | {r['shipped']:.4f} | {r['fpr_shipped']:.3f} / "
              f"{r['recall_shipped']:.3f} | {r['auc']:.3f} | {eq} | "
              f"{t['fpr_rest_median']:.3f} / {t['recall_median']:.3f} |")  # fmt: skip
        print("    FPR at shipped by source: "
              + ", ".join(f"{s} {v:.3f}" for s, v in r["fpr_by_source"].items()))  # fmt: skip
        print("    recall at shipped by source: "
              + ", ".join(f"{s} {v:.3f}" for s, v in r["recall_by_source"].items()))  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def pseudo(args: argparse.Namespace) -> None:
    """Keep the traffic the model already scores lowest, as if nobody had cleared it.

    Reads a split's ``own-traffic.jsonl`` (attacks planted with ``--contaminate``
    included), scores it with ``--model`` and writes the lowest ``--keep`` share
    to ``--out`` with the split's ``rest.jsonl`` and ``contaminants.json``: a
    deployment training on its traffic without a reviewer, trusting the model
    to set aside what looks like an attack.
    """
    rows = [json.loads(line) for line in (args.split / f"{SOURCE}.jsonl").read_text().splitlines()]
    with tempfile.TemporaryDirectory() as name:
        plain = [{"id": r["id"], "text": r["text"], "position": r["position"]} for r in rows]
        scores = _scores(args.model, plain, Path(name), "traffic")
    kept = np.argsort(scores, kind="stable")[: round(args.keep * len(rows))]
    planted = [r["from"].endswith("(attack)") for r in rows]
    args.out.mkdir(parents=True, exist_ok=True)
    for extra in ("rest.jsonl", "contaminants.json"):
        (args.out / extra).write_bytes((args.split / extra).read_bytes())
    chosen = [rows[i] for i in sorted(kept)]
    path = args.out / f"{SOURCE}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in chosen), encoding="utf-8")
    flagged = scores >= load_model(args.model).threshold
    print(f"{path}: the lowest {len(chosen)} of {len(rows)} by {args.model}; planted attacks "
          f"kept {sum(planted[i] for i in kept)} of {sum(planted)}; benign rows the model "
          f"flags kept {sum(flagged[i] and not planted[i] for i in kept)} of "
          f"{sum(f and not p for f, p in zip(flagged, planted, strict=True))}")  # fmt: skip


def export(args: argparse.Namespace) -> None:
    """Write the never-seen benign sources whole, unlabelled, and the attacks: files for
    ``gatebench adapt MODEL DIR/traffic.jsonl --attacks DIR/attacks.jsonl``."""
    data = Path(os.environ["GATEBENCH_DATA"])
    args.out.mkdir(parents=True, exist_ok=True)
    for tag, names, label in (("traffic", args.benign, 0), ("attacks", args.attacks, 1)):
        rows = [r for name in names for r in _prompts(name, label, data)]
        path = args.out / f"{tag}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        print(f"{path}: {len(rows)} {'benign prompts' if label == 0 else 'attacks'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    sp = sub.add_parser("split", help="write the traffic to train on and the half to measure on")
    sp.add_argument("--benign", nargs="+", required=True, help="never-seen benign sources")
    sp.add_argument("--out", type=Path, required=True)
    sp.add_argument("--contaminate", type=int, default=0, help="attacks added, labelled benign")
    sp.add_argument("--contaminate-from", default="harmbench", help="the source they come from")
    mp = sub.add_parser("measure", help="score the held-back half and the attacks per model")
    mp.add_argument("models", nargs="+", type=Path, help="model directories")
    mp.add_argument("--split", type=Path, required=True, help="the split step's --out")
    mp.add_argument("--attacks", nargs="+", required=True, help="never-seen attack sources")
    mp.add_argument("--splits", type=int, default=50)
    mp.add_argument("--target-fpr", type=float, default=0.03)
    mp.add_argument("--confidence", type=float, default=0.95)
    mp.add_argument("--out", type=Path)
    for p in (sp, mp):
        p.add_argument("--seed", type=int, default=SEED, help="seed of the halves and draws")
    ep = sub.add_parser("export", help="the benign sources whole and the attacks, for adapt")
    ep.add_argument("--benign", nargs="+", required=True, help="never-seen benign sources")
    ep.add_argument("--attacks", nargs="+", required=True, help="never-seen attack sources")
    ep.add_argument("--out", type=Path, required=True)
    pp = sub.add_parser("pseudo", help="keep the traffic the model scores lowest")
    pp.add_argument("--split", type=Path, required=True, help="the split step's --out")
    pp.add_argument("--model", type=Path, required=True, help="the model that scores it")
    pp.add_argument("--keep", type=float, default=0.8, help="share of the rows kept")
    pp.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    {"split": split, "measure": measure, "export": export, "pseudo": pseudo}[args.step](args)


if __name__ == "__main__":
    main()
