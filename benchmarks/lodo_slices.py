"""Where a held-out source's LODO result is lost: its prompts sliced by an upstream field.

A source's LODO primary is one number, but many sources mix kinds of rows
their loaders keep apart in ``Sample.meta``: HarmBench's functional category
(standard, contextual, copyright), Do-Not-Answer's risk area, the injection
variant of CyberSecEval's prompt injections, XSTest's prompt type. Read by
slice, a low recall can be a kind the detector never learned, or rows whose
label a prompt-injection detector should not share (a copyright request).
This reads the refits saved by ``bench_generalisation.py --scores``: each
held-out prompt (chunks max-pooled) at its refit's own threshold, with a 95%
Wilson interval on each rate. Nothing is refitted. Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/lodo_slices.py \
        runs/lodo-default.jsonl runs/scores-lodo-default \
        harmbench=functional_category donotanswer=risk_area

The trace is ``gatebench run``'s default (``--seed`` for another draw of it):
rows are matched by trace position, so scores made on another trace do not fit.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
from bench_generalisation import pool_prompts, trace_frame
from scipy.stats import binomtest

from gatebench.config import RunConfig


def source_meta(source: str, field: str, seed: int) -> dict[str, str]:
    """Trace ``sample_id`` -> the value of ``field`` in the loader's meta, for one source."""
    from gatebench.data import get_loader
    from gatebench.data.resolve import data_dir_from_env, resolve_root

    loader = get_loader(source)
    result = loader.load(resolve_root(loader.card, data_dir_from_env(None)), seed=seed)
    keys = {k for s in result.samples for k in s.meta}
    if field not in keys:
        raise SystemExit(
            f"{source}: no meta field {field!r}; its loader keeps {sorted(keys) or 'none'}"
        )
    return {s.sample_id: str(s.meta.get(field)) for s in result.samples}


def slice_table(prompts: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """Counts and the flagged share with its 95% Wilson interval, per slice and label."""
    out = []
    for (value, label), part in prompts.groupby(["slice", "y"]):
        hits = int((part["s"] >= threshold).sum())
        ci = binomtest(hits, len(part)).proportion_ci(method="wilson")
        out.append(
            {
                "slice": value,
                "label": "attack" if label else "benign",
                "prompts": len(part),
                "rate": "recall" if label else "FPR",
                "value": hits / len(part),
                "low": ci.low,
                "high": ci.high,
            }
        )
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("lodo", type=Path, help="the LODO JSON lines (each refit's threshold)")
    ap.add_argument("scores", type=Path, help="the refits' row scores (--scores folder)")
    ap.add_argument("slices", nargs="+", help="SOURCE=META_FIELD, one per held-out source")
    ap.add_argument("--seed", type=int, default=RunConfig().seed, help="trace seed (run's)")
    args = ap.parse_args()

    frame = trace_frame(seed=args.seed)
    refits = {r["held_out"]: r for r in map(json.loads, args.lodo.read_text().splitlines())}
    print("| held out | slice | label | prompts | rate | value | 95% interval |")
    print("|---|---|---|---|---|---|---|")
    for spec in args.slices:
        source, _, field = spec.partition("=")
        if source not in refits or not field:
            raise SystemExit(f"{spec!r}: give SOURCE=FIELD with a refit in {args.lodo}")
        z = np.load(args.scores / f"{source}.npz")
        prompts = pool_prompts(frame, z["test"], z["p_test"])
        meta = source_meta(source, field, args.seed)
        prompts["slice"] = [meta.get(i, "(not in the loader)") for i in prompts.index]
        table = slice_table(prompts, refits[source]["threshold"])
        for r in table.sort_values(["label", "value"]).itertuples():
            print(
                f"| {source} | {r.slice} | {r.label} | {r.prompts} | {r.rate} | "
                f"{r.value:.3f} | {r.low:.2f}-{r.high:.2f} |"
            )


if __name__ == "__main__":
    main()
