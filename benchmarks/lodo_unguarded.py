"""The refits of a data-guarded LODO run read without positions: the guard's effect, paired.

``bench_generalisation.py --param data_guard=true --scores DIR`` keeps, for
every refit, its scores with each row's position (``p_valid``, ``p_test``) and
the same model's scores of the same rows without them (``p_valid_plain``,
``p_test_plain``): every text read as a user turn, so the guard reads none.
Gate is otherwise the same model, so the two differ by the guard alone. This
writes the plain reading as LODO rows (the threshold re-picked by the LODO
rule on the plain inner-valid scores), for ``lodo_compare.py``. Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/lodo_unguarded.py \
        runs/scores-lodo-guard --out runs/lodo-guard-plain.jsonl [--documents] [--mode lodo]

``--documents`` builds the trace the run was scored on when it had ``--documents``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from bench_generalisation import held_units, refit_row, summarise, trace_frame


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scores", type=Path, help="a --scores folder of a data-guarded run")
    ap.add_argument("--out", type=Path, required=True, help="LODO rows of the plain reading")
    ap.add_argument("--mode", choices=("lodo", "lofo"), default="lodo", help="what was held out")
    ap.add_argument("--documents", action="store_true", help="the run's trace kept the documents")
    args = ap.parse_args()

    frame = trace_frame(documents=args.documents).reset_index(drop=True)
    held = held_units(frame, args.mode)
    names = sorted(p.stem for p in args.scores.glob("*.npz"))
    if not names:
        raise SystemExit(f"{args.scores} holds no refit scores (*.npz)")
    rows = []
    for name in names:
        z = dict(np.load(args.scores / f"{name}.npz"))
        if "p_valid_plain" not in z:
            raise SystemExit(
                f"{args.scores / name}.npz has no plain scores: it is not a data-guarded run "
                "(run bench_generalisation.py with --param data_guard=true)"
            )
        if name not in held:
            raise SystemExit(f"{name} is not a {args.mode} unit; pass the run's --mode")
        rows.append(
            refit_row(
                name,
                held[name],
                frame,
                z["valid"],
                z["p_valid_plain"],
                z["test"],
                z["p_test_plain"],
            )
        )
    with args.out.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps({**row, "settings": {"reading": "without positions"}}) + "\n")
    print(json.dumps(summarise(rows), indent=2))


if __name__ == "__main__":
    main()
