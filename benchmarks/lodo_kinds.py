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
- ``length``: under 256, 256-1,023, and 1,024 or more characters;
- ``data``: serialised data, against the rest: a dict or JSON text with three keys
  or more, or three non-empty lines or more of which at least 30% are ``key:``
  fields or table rows (a tool's output, a YAML record, a markdown table);
- ``position``: the one kind not read from the text: the trace row's position, a
  tool result or document against a user turn (what a detector is told when it
  reads positions, as Gate's data guard does);
- ``language``: the trace's detected language, English against the rest (the
  language check that routes non-English text to the multilingual head).

``--plain`` reads a data-guarded run's scores without positions instead
(``p_valid_plain``, ``p_test_plain``; see ``lodo_unguarded.py``).

Each row gives the LODO macro, the sources below 0.5, and the pooled FPR on
held-out benign prompts and recall on held-out attacks; the ``none`` rows at
other FPR bounds trace the unshifted scores' own curve, so a kind rule that
only moves along it can be told from one that ranks better. Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/lodo_kinds.py \
        runs/scores-lodo-default --kinds segments length
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
import pandas as pd
from bench_generalisation import _primary, pool_prompts, trace_frame
from scipy.special import expit, logit

_FIELD = re.compile(r"^\s*(?:- )?['\"]?[A-Za-z_][\w .-]{0,30}['\"]?\s*:(?:\s|$)")
_TABLE = re.compile(r"^\s*\|.*\|\s*$")
_KEY = re.compile(r"['\"][A-Za-z_]\w{0,30}['\"]\s*:")


def data_like(text: str) -> bool:
    """Whether ``text`` reads as serialised data rather than prose (the ``data`` kind)."""
    if text.lstrip().lstrip("\"'")[:1] in "{[" and len(_KEY.findall(text[:4000])) >= 3:
        return True
    lines = [line for line in text.splitlines() if line.strip()][:200]
    if len(lines) < 3:
        return False
    fields = sum(bool(_FIELD.match(line) or _TABLE.match(line)) for line in lines)
    return fields / len(lines) >= 0.3


def text_kinds(texts: list[str], rule: str) -> np.ndarray:
    """Each text's kind under ``rule`` (``none``, ``segments``, ``length``, ``data``), as an int."""
    if rule == "none":
        return np.zeros(len(texts), dtype=np.int64)
    if rule == "segments":
        from gatebench.gate.topic_shift import segments

        return np.array([len(segments(t)) >= 3 for t in texts], dtype=np.int64)
    if rule == "length":
        return np.digitize([len(t) for t in texts], [256, 1024]).astype(np.int64)
    if rule == "data":
        return np.array([data_like(t) for t in texts], dtype=np.int64)
    raise SystemExit(f"unknown kind rule {rule!r}: use none, segments, length, data or language")


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
        suffix = "_plain" if args.plain else ""
        lv = logit(np.clip(z["p_valid" + suffix], 1e-9, 1 - 1e-9))
        lt = logit(np.clip(z["p_test" + suffix], 1e-9, 1 - 1e-9))
        shift = kind_shifts(lv, y[iv], kind[iv], args.quantile, args.min_benign)
        sv = expit(lv + np.array([shift[int(k)] for k in kind[iv]]))
        st = expit(lt + np.array([shift.get(int(k), 0.0) for k in kind[te]]))
        theta = select_operating_point(y[iv], sv, max_fpr=tau).threshold
        prompts = pool_prompts(frame, te, st)
        hit = prompts["s"].to_numpy() >= theta
        primaries.append(_primary(prompts["y"].to_numpy(), hit)[1])
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
    ap.add_argument("--plain", action="store_true", help="a guarded run's scores without positions")
    args = ap.parse_args()

    frame = trace_frame()
    texts = frame["text"].tolist()
    print("| kinds | FPR bound | LODO macro | below 0.5 | held-out benign FPR | attack recall |")
    print("|---|---|---|---|---|---|")
    rows = [("none", tau) for tau in (0.005, 0.01, 0.02)] + [(k, 0.01) for k in args.kinds]
    from gatebench.types import DATA_POSITIONS

    data = frame["position"].isin(DATA_POSITIONS).to_numpy(dtype=np.int64)
    for rule, tau in rows:
        if rule == "position":
            kind = data
        elif rule == "language":
            kind = (frame["language"] != "en").to_numpy(dtype=np.int64)
        else:
            kind = text_kinds(texts, rule)
        macro, below, fpr, recall = lodo_under(frame, args.scores, kind, args, tau)
        print(f"| {rule} | {tau} | {macro:.3f} | {below} | {fpr:.3f} | {recall:.3f} |", flush=True)


if __name__ == "__main__":
    main()
