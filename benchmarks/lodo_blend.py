"""Would two detectors do better together on never-seen sources? Blend their LODO row scores.

``bench_generalisation.py --scores DIR`` and ``screen_finetune.py --scores DIR``
keep, for every refit, the scores of its inner-valid rows and of the held-out
rows (positions in the trace; both scripts draw the same inner split from the
same seed). This joins two such folders refit by refit: each detector's
log-odds are standardised on its own inner-valid rows, averaged with weight
``w`` on the first, the threshold is re-picked by the LODO rule (max F1 s.t.
FPR <= 1% on the inner-valid rows), and the held-out source's primary metric
and AUC are printed for every weight. ``w = 1`` and ``w = 0`` reproduce the two
inputs; 0.5 is the blend fixed before looking. Two draws of one recipe
(``--fit-seed``) have different inner splits: ``--common-valid`` keeps the
inner-valid rows both left out, for every weight (w = 1 and 0 included), so a
bag of draws is compared with its members on the same rows. ``--out FILE`` also writes the
refits at ``--weight`` as LODO rows, so ``lodo_compare.py`` reads the blend
beside any run (its pooled FPR, recall and place on the first run's curve).
Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/lodo_blend.py \
        runs/scores-gate runs/scores-ft [--out runs/lodo-blend.jsonl --weight 0.5 --mode lodo]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
from bench_generalisation import _primary, held_units, pool_prompts, refit_row

from gatebench.config import RunConfig

WEIGHTS = (1.0, 0.75, 0.5, 0.25, 0.0)


def _z(p: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Log-odds of ``p`` standardised by the log-odds of the reference scores ``ref``."""

    def logit(q: np.ndarray) -> np.ndarray:
        q = np.clip(q, 1e-6, 1 - 1e-6)
        return np.asarray(np.log(q) - np.log1p(-q))

    base = logit(ref)
    return (logit(p) - base.mean()) / max(float(base.std()), 1e-9)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-z)))


def blended(a: dict, b: dict, w: float) -> tuple[np.ndarray, np.ndarray]:
    """Inner-valid and held-out scores of ``w * a + (1 - w) * b`` (standardised log-odds)."""
    for key in ("valid", "test"):
        if not np.array_equal(a[key], b[key]):
            raise SystemExit(f"the two folders scored different {key} rows: not the same refit")
    # A sigmoid keeps the order and gives the threshold search scores in [0, 1].
    valid = _sigmoid(w * _z(a["p_valid"], a["p_valid"]) + (1 - w) * _z(b["p_valid"], b["p_valid"]))
    test = _sigmoid(w * _z(a["p_test"], a["p_valid"]) + (1 - w) * _z(b["p_test"], b["p_valid"]))
    return valid, test


def common_valid(a: dict, b: dict) -> tuple[dict, dict]:
    """Both refits' scores on the inner-valid rows that neither trained on.

    Two draws of one recipe (``--fit-seed``) split the inner rows differently,
    so a row one draw validates on, the other may have fitted. Only rows valid
    in both may set a threshold for their average.
    """
    rows = np.intersect1d(a["valid"], b["valid"])
    out = []
    for d in (a, b):
        at = {r: i for i, r in enumerate(d["valid"])}
        keep = np.array([at[r] for r in rows], dtype=np.int64)
        out.append({**d, "valid": rows, "p_valid": d["p_valid"][keep]})
    return out[0], out[1]


def blend(a: dict, b: dict, frame: pd.DataFrame, w: float) -> tuple[float, float | None]:
    """The held-out primary metric and AUC of ``w * a + (1 - w) * b`` under the LODO rule."""
    from sklearn.metrics import roc_auc_score

    from gatebench.threshold import select_operating_point

    y = frame["label"].to_numpy(dtype=np.int64)
    valid, test = blended(a, b, w)
    theta = select_operating_point(y[a["valid"]], valid, max_fpr=0.01).threshold
    pooled = pool_prompts(frame, a["test"], test)
    yy, ss = pooled["y"].to_numpy(), pooled["s"].to_numpy()
    auc = float(roc_auc_score(yy, ss)) if 0 < yy.sum() < len(yy) else None
    return _primary(yy, ss >= theta)[1], auc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("first", type=Path)
    ap.add_argument("second", type=Path)
    ap.add_argument("--out", type=Path, help="write the refits at --weight as LODO rows here")
    ap.add_argument("--weight", type=float, default=0.5, help="the first folder's weight for --out")
    ap.add_argument("--mode", choices=("lodo", "lofo"), default="lodo", help="what was held out")
    ap.add_argument(
        "--common-valid",
        action="store_true",
        help="two draws of one recipe: thresholds from the inner-valid rows both left out",
    )
    args = ap.parse_args()
    if not 0.0 <= args.weight <= 1.0:
        raise SystemExit(f"--weight {args.weight} is outside [0, 1]; 0.5 weighs both equally")

    from gatebench.trace import TraceSpec, build_trace

    frame = build_trace(
        TraceSpec(seed=RunConfig.model_fields["seed"].default),
        data_dir=os.environ.get("GATEBENCH_DATA"),
        cache_dir=".cache/gatebench",
    ).frame.reset_index(drop=True)
    names = sorted(p.stem for p in args.first.glob("*.npz") if (args.second / p.name).is_file())
    if not names:
        raise SystemExit(f"no refit is scored in both {args.first} and {args.second}")
    head = " | ".join(f"w={w:g}" for w in WEIGHTS)
    print(f"| held-out source (metric; AUC) | {head} |")
    print("|---|" + "---|" * len(WEIGHTS))
    means = np.zeros(len(WEIGHTS))
    pairs = {
        name: tuple(dict(np.load(folder / f"{name}.npz")) for folder in (args.first, args.second))
        for name in names
    }
    if args.common_valid:
        pairs = {name: common_valid(*pair) for name, pair in pairs.items()}
    for name, (a, b) in pairs.items():
        cells = []
        for i, w in enumerate(WEIGHTS):
            value, auc = blend(a, b, frame, w)
            means[i] += value / len(names)
            cells.append(f"{value:.3f}" + (f" ({auc:.3f})" if auc is not None else ""))
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("| mean | " + " | ".join(f"{m:.3f}" for m in means) + " |")
    if args.out:
        held = held_units(frame, args.mode)
        if unknown := sorted(set(names) - set(held)):
            raise SystemExit(f"{unknown} are not {args.mode} units; pass the folders' --mode")
        with args.out.open("w", encoding="utf-8") as fh:
            for name, (a, b) in pairs.items():
                valid, test = blended(a, b, args.weight)
                row = refit_row(name, held[name], frame, a["valid"], valid, a["test"], test)
                fh.write(json.dumps({**row, "settings": {"weight": args.weight}}) + "\n")


if __name__ == "__main__":
    main()
