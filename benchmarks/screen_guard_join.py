"""How the data guard's score joins Gate's, screened on the saved refits of a guarded LODO run.

The guard (``data_guard``) reads how much a tool result or document holds a
request; a data text keeps the higher of Gate's log-odds and the guard's,
once the guard's are moved onto Gate's scale. How they are moved decides
whether the guard helps or floods a held-out source with false alarms.

This refits the guard alone for every refit of a ``--param data_guard=true``
LODO run (the same inner-train rows and seed, so the same guard), keeps its
unit log-odds of the inner-valid and held-out data texts in ``--cache``, and
joins them to the same refit's plain Gate scores (``p_valid_plain``,
``p_test_plain``) by each rule below. Each rule is then read as a LODO run:
the threshold picked by the LODO rule on the joined inner-valid scores.

- ``moment``: the first rule Gate had (mean and spread of benign data
  log-odds matched, every source weighing the same).
- ``tail:q``: the guard's ``q`` quantile on benign inner-valid data texts is
  put where Gate's 99th percentile of all benign inner-valid rows lies, so
  that near the threshold the guard flags about ``1 - q`` of benign data; the
  slope is the moment rule's. ``tail:0.99`` is Gate's rule now.

The rule the run was made with gives back its own scores (the largest
difference is printed), which checks the refit of the guard.

Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/screen_guard_join.py \
        runs/scores-lodo-guard --documents --cache runs/guard-units [--fit-seed N] [--jobs 2] \
        [--rules moment tail:0.99 ...] [--field-units] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from bench_generalisation import held_units, refit_row, refit_split, summarise, trace_frame

from gatebench.gate.data_guard import MIN_MATCH_ROWS, source_weights, tail_map


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(np.asarray(p, dtype=np.float64), 1e-7, 1 - 1e-7)
    return np.log(q) - np.log1p(-q)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def guard_units(
    name: str, held: tuple[str, ...], frame: pd.DataFrame, seed: int, cache: Path, fields: bool
) -> dict[str, np.ndarray]:
    """The refit's guard log-odds of its inner-valid and held-out rows (NaN off data)."""
    path = cache / f"{name}.npz"
    if path.exists():
        return dict(np.load(path))
    from gatebench.gate import data_guard
    from gatebench.gate.data_guard import DataGuard

    if fields:
        data_guard.text_units = field_units  # type: ignore[assignment]
    from gatebench.seeding import child_seed
    from gatebench.trace import row_positions
    from gatebench.types import DATA_POSITIONS

    it, iv, test = refit_split(frame, name, held, seed)
    texts = frame["text"].to_numpy(dtype=object)
    y = frame["label"].to_numpy(dtype=np.int64)
    pos = np.asarray(row_positions(frame), dtype=object)
    guard = DataGuard(seed=child_seed(seed, "refit", name))
    try:
        guard.fit(list(texts[it]), list(pos[it]), y[it])
    except ValueError:
        guard = None  # Gate leaves the guard out, and so does the screen (NaN: not read)
    out = {}
    for key, rows in (("valid", iv), ("test", test)):
        u = np.full(len(rows), np.nan)
        data = np.flatnonzero(np.isin(pos[rows], list(DATA_POSITIONS)))
        if guard is not None:
            u[data] = guard.unit_logits(list(texts[rows[data]]))
        out[key], out[f"u_{key}"] = rows, u
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, **out)
    return out


_KEY = re.compile(r"^\s*(?:-\s+)?[\w .-]{1,40}:\s+")
_FIELD = re.compile(r"""["']\s*[:,}\]]\s*[{\[]?\s*["']?|\|""")


def field_units(text: str) -> list[str]:
    """``text_units``, with serialised fields split too (a record's key, quoted values, pipes)."""
    from gatebench.gate import data_guard as dg

    units = [
        unit
        for line in text.split("\n")
        for field in _FIELD.split(_KEY.sub("", line, count=1))
        for piece in dg._SENTENCE_END.split(field)
        if len(unit := piece.strip(dg._EDGES)) >= dg.MIN_UNIT_CHARS
    ]
    return units or [text]


def _moments(x: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    m = float(np.average(x, weights=w))
    return m, float(np.sqrt(np.average((x - m) ** 2, weights=w)))


def joined(r: dict[str, Any], rule: str, q: float) -> tuple[np.ndarray, np.ndarray]:
    """The refit's inner-valid and held-out scores with the guard joined by ``rule``."""
    sv, st = _logit(r["p_valid_plain"]), _logit(r["p_test_plain"])
    uv, ut = r["u_valid"], r["u_test"]
    ref = ~np.isnan(uv) & (r["y_valid"] == 0)
    if ref.sum() < MIN_MATCH_ROWS:  # Gate would leave the guard out
        return r["p_valid_plain"], r["p_test_plain"]
    w = source_weights(r["src_valid"][ref])
    if rule == "moment":
        (a, g_std), (b, s_std) = _moments(uv[ref], w), _moments(sv[ref], w)
        slope = s_std / max(g_std, 1e-6)
    elif rule == "tail":
        a, slope, b = tail_map(uv[ref], sv[ref], sv[r["y_valid"] == 0], w, q)
    else:
        raise ValueError(rule)
    outs = []
    for s, u in ((sv, uv), (st, ut)):
        moved = np.where(np.isnan(u), -np.inf, (u - a) * slope + b)
        outs.append(_sigmoid(np.maximum(s, moved)))
    return outs[0], outs[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scores", type=Path, help="a --scores folder of a LODO run (guarded or not)")
    ap.add_argument("--cache", type=Path, required=True, help="where the guard log-odds are kept")
    ap.add_argument("--documents", action="store_true", help="the run's trace kept the documents")
    ap.add_argument("--fit-seed", type=int, default=20260527, help="the run's --fit-seed")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--field-units", action="store_true", help="split serialised fields too")
    ap.add_argument(
        "--out", type=Path, default=None, help="write each rule's LODO rows to OUT/<rule>.jsonl"
    )
    ap.add_argument("--rules", nargs="+", default=["moment", "tail:0.99", "tail:0.95"])
    args = ap.parse_args()

    from joblib import Parallel, delayed

    frame = trace_frame(documents=args.documents).reset_index(drop=True)
    held = held_units(frame, "lodo")
    names = sorted(p.stem for p in args.scores.glob("*.npz"))
    units = Parallel(n_jobs=args.jobs)(
        delayed(guard_units)(n, held[n], frame, args.fit_seed, args.cache, args.field_units)
        for n in names
    )
    y = frame["label"].to_numpy(dtype=np.int64)
    src = frame["source"].to_numpy(dtype=object)
    refits = {}
    for name, u in zip(names, units, strict=True):
        z = dict(np.load(args.scores / f"{name}.npz"))
        # A run without the guard scored every row plainly.
        z.setdefault("p_valid_plain", z["p_valid"])
        z.setdefault("p_test_plain", z["p_test"])
        if not (np.array_equal(z["valid"], u["valid"]) and np.array_equal(z["test"], u["test"])):
            raise SystemExit(f"{name}: the refit's rows differ from the run's; check --fit-seed")
        refits[name] = {**z, **u, "y_valid": y[z["valid"]], "src_valid": src[z["valid"]]}
    for spec in args.rules:
        rule, _, q = spec.partition(":")
        rows, drift = [], 0.0
        for name, r in refits.items():
            pv, pt = joined(r, rule, float(q or 0.99))
            drift = max(drift, float(np.abs(pv - r["p_valid"]).max()))
            rows.append(refit_row(name, held[name], frame, r["valid"], pv, r["test"], pt))
        s = summarise(rows)
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            with (args.out / f"{spec.replace(':', '-')}.jsonl").open("w") as fh:
                fh.writelines(json.dumps(r) + "\n" for r in rows)
        ps = {k: v for r in rows for k, v in r["per_source"].items() if v["role"] == "evaluation"}
        picks = ("bipia", "agentdojo-environments", "injecagent", "cyberseceval-interpreter")
        detail = " ".join(f"{k[:9]}={ps[k]['value']:.3f}" for k in picks if k in ps)
        print(
            f"{spec:10s} macro {s['macro_evaluation_sources']:.3f} below0.5 {len(s['below_0.5'])} "
            f"fpr {s['unseen_benign_fpr']:.3f} recall {s['unseen_attack_recall']:.3f} "
            f"{detail} (off the run's own scores by up to {drift:.1e})"
        )


if __name__ == "__main__":
    main()
