"""One threshold per kind of text: what a kind-aware operating point does to LODO.

Injected documents score far below the short attacks that place the global
threshold, and benign documents score lower still. So a threshold per kind
of text, a document against a short prompt, might catch injected documents
without flagging more benign prompts. The kind must come from the text alone
(no source, no position label), and the shift per kind from the refit's own
inner-valid rows: each kind's log-odds move so that its benign rows' q-th
quantile lands on the pooled benign rows' q-th quantile, then the LODO rule
(max F1 at FPR <= 1% on the inner-valid rows) places one threshold on the
shifted scores. A kind with fewer than ``--min-benign`` valid benign rows is
not moved. The refits saved by ``bench_generalisation.py --scores`` are read
again; nothing is refitted. Kinds:

- ``segments``: three or more lines, sentences or serialised fields
  (:func:`gatebench.gate.topic_shift.segments`), against fewer;
- ``length``: under 256, 256-1,023, and 1,024 or more characters.

Each row gives the LODO macro, the sources below 0.5, and the pooled FPR on
held-out benign prompts and recall on held-out attacks; the ``none`` rows at
other FPR bounds trace the unshifted scores' own curve, so a kind rule that
only moves along it can be told from one that ranks better. Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/lodo_kinds.py \
        runs/scores-lodo-default --kinds segments length
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit, logit

_BENCH = Path(__file__).with_name("bench_generalisation.py")


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_generalisation", _BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def text_kinds(texts: list[str], rule: str) -> np.ndarray:
    """Each text's kind under ``rule`` (``none``, ``segments`` or ``length``), as an int."""
    if rule == "none":
        return np.zeros(len(texts), dtype=np.int64)
    if rule == "segments":
        from gatebench.gate.topic_shift import segments

        return np.array([len(segments(t)) >= 3 for t in texts], dtype=np.int64)
    if rule == "length":
        return np.digitize([len(t) for t in texts], [256, 1024]).astype(np.int64)
    raise SystemExit(f"unknown kind rule {rule!r}: use none, segments or length")


def kind_shifts(
    lv: np.ndarray, y: np.ndarray, kind: np.ndarray, q: float, min_benign: int
) -> dict[int, float]:
    """Log-odds shift per kind that puts its benign q-quantile on the pooled benign one."""
    benign = y == 0
    pooled = float(np.quantile(lv[benign], q))
    out = {}
    for k in np.unique(kind):
        rows = benign & (kind == k)
        out[int(k)] = pooled - float(np.quantile(lv[rows], q)) if rows.sum() >= min_benign else 0.0
    return out


def lodo_under(
    bench: Any,
    frame: pd.DataFrame,
    scores: Path,
    kind: np.ndarray,
    args: argparse.Namespace,
    tau: float,
) -> tuple[float, int, float, float]:
    """LODO macro, sources below 0.5, pooled held-out FPR and recall, scores shifted per kind."""
    from gatebench.threshold import select_operating_point

    y = frame["label"].to_numpy(dtype=np.int64)
    primaries, pooled = [], []
    for path in sorted(scores.glob("*.npz")):
        z = np.load(path)
        iv, te = z["valid"], z["test"]
        lv = logit(np.clip(z["p_valid"], 1e-9, 1 - 1e-9))
        lt = logit(np.clip(z["p_test"], 1e-9, 1 - 1e-9))
        shift = kind_shifts(lv, y[iv], kind[iv], args.quantile, args.min_benign)
        sv = expit(lv + np.array([shift[int(k)] for k in kind[iv]]))
        st = expit(lt + np.array([shift.get(int(k), 0.0) for k in kind[te]]))
        theta = select_operating_point(y[iv], sv, max_fpr=tau).threshold
        prompts = bench.pool_prompts(frame, te, st)
        hit = prompts["s"].to_numpy() >= theta
        primaries.append(bench._primary(prompts["y"].to_numpy(), hit)[1])
        pooled.append(prompts.assign(hit=hit))
    p = pd.concat(pooled)
    return (
        float(np.mean(primaries)),
        sum(v < 0.5 for v in primaries),
        float(p.loc[p["y"] == 0, "hit"].mean()),
        float(p.loc[p["y"] == 1, "hit"].mean()),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scores", type=Path, help="a LODO --scores folder (gatebench run's trace)")
    ap.add_argument("--kinds", nargs="+", default=["segments", "length"])
    ap.add_argument("--quantile", type=float, default=0.99, help="benign quantile to align")
    ap.add_argument("--min-benign", type=int, default=50, help="fewest benign rows to move a kind")
    args = ap.parse_args()

    from gatebench.config import RunConfig
    from gatebench.trace import TraceSpec, build_trace

    run = RunConfig()
    spec = TraceSpec(
        seed=run.seed,
        embedded=run.embedded,
        embedded_payloads=run.embedded_payloads,
        twins=run.twins,
        persona_twins=run.persona_twins,
        persona_halves=run.persona_halves,
    )
    frame = build_trace(
        spec, data_dir=os.environ.get("GATEBENCH_DATA"), cache_dir=".cache/gatebench"
    ).frame
    bench, texts = _bench(), frame["text"].tolist()
    print("| kinds | FPR bound | LODO macro | below 0.5 | held-out benign FPR | attack recall |")
    print("|---|---|---|---|---|---|")
    rows = [("none", tau) for tau in (0.005, 0.01, 0.02)] + [(k, 0.01) for k in args.kinds]
    for rule, tau in rows:
        macro, below, fpr, recall = lodo_under(
            bench, frame, args.scores, text_kinds(texts, rule), args, tau
        )
        print(f"| {rule} | {tau} | {macro:.3f} | {below} | {fpr:.3f} | {recall:.3f} |", flush=True)


if __name__ == "__main__":
    main()
