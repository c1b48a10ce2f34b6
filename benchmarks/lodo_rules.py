"""What the operating-point rule alone does to LODO: recompute a LODO file under each rule.

``bench_generalisation.py --mode lodo`` records, for every refit, the held-out
recall and FPR at the thresholds that four rules pick on the refit's own
inner-valid rows (FPR <= 2%, 1%, 0.5%, 0.2%). This recomputes each held-out
source's primary metric (recall, 1 - FPR, or F1 from the counts) under every
rule, with no refit, and prints the LODO macro, the sources below 0.5, and
the pooled unseen-benign FPR and unseen-attack recall per rule: how far
moving the shipped threshold alone can go.

Usage::

    .venv/bin/python benchmarks/lodo_rules.py runs/lodo-gate-default.jsonl [more.jsonl ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def primary(row: dict[str, Any], rule: dict[str, Any]) -> float:
    metric = next(iter(row["per_source"].values()))["metric"]
    recall, fpr = rule["recall"], rule["fpr"]
    if metric == "recall":
        return float(recall)
    if metric == "1-fpr":
        return 1.0 - float(fpr)
    tp = recall * row["n_attack"]
    fp, fn = fpr * row["n_benign"], row["n_attack"] - tp
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0


def pooled(rows: list[dict[str, Any]], rule: str) -> tuple[float, float]:
    """Unseen-benign FPR and unseen-attack recall over all refits at ``rule``'s thresholds."""
    benign = [(r["rules"][rule]["fpr"], r["n_benign"]) for r in rows if r["n_benign"]]
    attack = [(r["rules"][rule]["recall"], r["n_attack"]) for r in rows if r["n_attack"]]
    fpr = sum(f * n for f, n in benign) / sum(n for _, n in benign)
    recall = sum(x * n for x, n in attack) / sum(n for _, n in attack)
    return fpr, recall


def summarise(path: Path) -> None:
    rows = {r["held_out"]: r for r in map(json.loads, path.read_text().splitlines())}
    print(f"{path} ({len(rows)} held-out sources)")
    print(
        "  rule (valid FPR <=) | LODO macro | below 0.5 | unseen-benign FPR | unseen-attack recall"
    )
    for name in next(iter(rows.values()))["rules"]:
        values = [primary(r, r["rules"][name]) for r in rows.values()]
        fpr, recall = pooled(list(rows.values()), name)
        macro, low = sum(values) / len(values), sum(v < 0.5 for v in values)
        print(f"  {name:>19} | {macro:10.3f} | {low:9d} | {fpr:17.3f} | {recall:20.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    for path in parser.parse_args().files:
        summarise(path)


if __name__ == "__main__":
    main()
