"""What reading a text's lone attack-like sentence does to LODO, from saved segment scores.

Reads the refits saved by ``screen_segment_spike.py`` (each row's score, and
each of its segments' scores read alone) and rescores every inner-valid and
held-out row by a rule, then places the LODO threshold on the rescored
inner-valid rows (max F1 at FPR <= 1%) and reports what
``bench_generalisation.py`` reports. Nothing is refitted. Rules, for a row of
at least ``--min-segments`` segments (shorter rows keep their score):

- ``none``: the row's own score (must reproduce the saved LODO);
- ``window``: the higher of the row's score and its highest segment's, which is
  what sentence-sized windows do;
- ``window-doc``: as ``window``, for rows in a tool result or document only;
- ``window-doc-q:Q``: as ``window-doc``, where the top segment scores at least
  the ``Q`` quantile of the top segments of the refit's inner-valid benign
  data rows (a floor read from rows the refit was not fitted on);
- ``window-min:K``: as ``window-doc``, and for any row of at least ``K`` segments;
- ``lone:C``: the highest segment's score counts only when every other segment
  scores below ``C``: a lone spike among benign sentences;
- ``lone-doc:C``: as ``lone:C``, for rows in a tool result or document only;
- ``window-doc-n:C``: as ``window-doc``, the top segment's log-odds lowered by
  ``C`` times the log of a third of the segments read: the highest of many
  benign sentences is higher than the highest of few.

``--data-by`` says which rows count as tool results or documents: ``position``
(the trace's, as a caller who passes positions), ``shape`` (the text reads as
serialised data, :func:`lodo_kinds.data_like`, as Gate would have to guess for
a caller who passes none) or ``either``.

``--align-positions Q`` then moves the log-odds of the data rows (as
``--data-by`` says) so that their inner-valid benign ``Q`` quantile lands on
that of all inner-valid benign rows, as ``lodo_kinds.py --kinds position``
does, before the threshold is placed: the benign data texts that segments
raise no longer set the threshold for user turns. ``--user-threshold``
places it on the inner-valid user turns alone, and reads every row at it.

``--min-words W`` leaves segments of fewer than ``W`` plain words
(:func:`gatebench.gate.segment_reading.plain_words`) unread. Gate's
``segment_reading`` is ``window-doc --min-words 3``: this script and Gate
give the same LODO (``bench_generalisation.py --param segment_reading=true``).

Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/lodo_segment_rules.py \\
        runs/scores-segments --rules none window-doc --min-words 3 \\
        [--data-by position|shape|either] [--align-positions Q] [--user-threshold]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from bench_generalisation import held_units, refit_row, summarise, trace_frame
from lodo_kinds import data_like, kind_shifts
from scipy.special import expit, logit

from gatebench.gate.segment_reading import plain_words
from gatebench.gate.topic_shift import segments


def _top_two(seg: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's highest and second-highest segment score (0 where it has none)."""
    first = np.zeros(len(counts))
    second = np.zeros(len(counts))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    for i, (a, n) in enumerate(zip(starts, counts, strict=True)):
        if n:
            part = np.sort(seg[a : a + n])[::-1]
            first[i] = part[0]
            second[i] = part[1] if n > 1 else 0.0
    return first, second


def leave_short_unread(z: dict[str, np.ndarray], texts: np.ndarray, min_words: int) -> None:
    """Zero, in place, the saved scores of segments of fewer than ``min_words`` plain words."""
    for key in ("valid", "test"):
        words = np.array([plain_words(s) for i in z[key] for s in segments(texts[i])], np.int64)
        z[f"seg_{key}"] = np.where(words >= min_words, z[f"seg_{key}"], 0.0)


def rescore(
    rule: str,
    p: np.ndarray,
    seg: np.ndarray,
    counts: np.ndarray,
    in_doc: np.ndarray,
    min_segments: int,
    level: float = 0.0,
) -> np.ndarray:
    """The rows' scores under ``rule`` (``level``: the ``window-doc-q`` rule's floor)."""
    if rule == "none":
        return p
    first, second = _top_two(seg, counts)
    eligible = counts >= min_segments
    if rule.startswith("window-doc-n:"):
        # The top of n benign segments grows with n: discount it by the log of
        # the segments read (a segment too short to read scores 0 here).
        starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        read = np.add.reduceat(seg > 0, starts) if len(seg) else np.zeros(len(counts))
        read = np.where(counts > 0, read, 0)
        cut = float(rule.partition(":")[2]) * np.log(np.maximum(read, 3) / 3)
        moved = expit(logit(np.clip(first, 1e-9, 1 - 1e-9)) - cut)
        return np.where(eligible & in_doc, np.maximum(p, np.where(first > 0, moved, 0.0)), p)
    if rule.startswith("window-doc-q:"):
        raised = eligible & in_doc & (first >= level)
        return np.where(raised, np.maximum(p, first), p)
    if rule in ("window", "window-doc"):
        eligible = eligible & in_doc if rule == "window-doc" else eligible
        return np.where(eligible, np.maximum(p, first), p)
    if rule.startswith("window-min:"):
        longer = counts >= int(rule.partition(":")[2])
        return np.where(longer | (eligible & in_doc), np.maximum(p, first), p)
    kind, _, level = rule.partition(":")
    lone = eligible & (second < float(level))
    if kind == "lone-doc":
        lone &= in_doc
    elif kind != "lone":
        raise SystemExit(
            f"unknown rule {rule!r}: use none, window, window-doc, lone:C or lone-doc:C"
        )
    return np.where(lone, np.maximum(p, first), p)


def _aligned(
    pv: np.ndarray, pt: np.ndarray, yv: np.ndarray, dv: np.ndarray, dt: np.ndarray, q: float
) -> tuple[np.ndarray, np.ndarray]:
    """Valid and test scores with the data rows moved by the valid rows' per-kind shift."""
    lv, lt = logit(np.clip(pv, 1e-9, 1 - 1e-9)), logit(np.clip(pt, 1e-9, 1 - 1e-9))
    shift = kind_shifts(lv, yv, dv.astype(np.int64), q, min_benign=50)
    return expit(lv + np.where(dv, shift.get(1, 0.0), 0.0)), expit(
        lt + np.where(dt, shift.get(1, 0.0), 0.0)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--rules", nargs="*", default=["none", "window", "lone:0.1", "lone:0.3"])
    ap.add_argument("--min-segments", type=int, default=3)
    ap.add_argument(
        "--min-words",
        type=int,
        default=0,
        help="segments of fewer plain words (a field value, an address) are not read",
    )
    ap.add_argument(
        "--data-by",
        choices=("position", "shape", "either"),
        default="position",
        help="what makes a row a tool result or document: its position, its text's shape, either",
    )
    ap.add_argument(
        "--align-positions",
        type=float,
        help="move data rows' log-odds so their valid benign quantile Q matches all benign rows'",
    )
    ap.add_argument(
        "--user-threshold",
        action="store_true",
        help="place each refit's threshold on its inner-valid user turns only",
    )
    ap.add_argument("--json", type=Path, help="write every rule's refit rows here")
    args = ap.parse_args()

    frame = trace_frame()
    units = held_units(frame, "lodo")
    in_doc = frame["position"].isin(["tool", "document"]).to_numpy()
    if args.data_by != "position":
        by_shape = np.array([data_like(t) for t in frame["text"]], dtype=bool)
        in_doc = by_shape if args.data_by == "shape" else in_doc | by_shape
    y = frame["label"].to_numpy(dtype=np.int64)
    saved = {p.stem: dict(np.load(p)) for p in sorted(args.folder.glob("*.npz")) if p.stem in units}
    if args.min_words:
        texts = frame["text"].to_numpy(dtype=object)
        for z in saved.values():
            leave_short_unread(z, texts, args.min_words)
    print(f"{len(saved)} refits read")
    report = {}
    for rule in args.rules:
        rows = []
        for name, z in saved.items():
            iv, test = z["valid"], z["test"]
            level = 0.0
            if rule.startswith("window-doc-q:"):
                first, _ = _top_two(z["seg_valid"], z["nseg_valid"])
                benign = in_doc[iv] & (y[iv] == 0) & (z["nseg_valid"] >= args.min_segments)
                level = float(np.quantile(first[benign], float(rule.partition(":")[2])))
            pv = rescore(
                rule,
                z["p_valid"],
                z["seg_valid"],
                z["nseg_valid"],
                in_doc[iv],
                args.min_segments,
                level,
            )
            pt = rescore(
                rule,
                z["p_test"],
                z["seg_test"],
                z["nseg_test"],
                in_doc[test],
                args.min_segments,
                level,
            )
            if args.align_positions is not None:
                pv, pt = _aligned(pv, pt, y[iv], in_doc[iv], in_doc[test], args.align_positions)
            if args.user_threshold:
                user = ~in_doc[iv]
                iv, pv = iv[user], pv[user]
            rows.append(refit_row(name, units[name], frame, iv, pv, test, pt))
        summary = summarise(rows)
        report[rule] = rows
        per = {s: round(v["value"], 3) for r in rows for s, v in r["per_source"].items()}
        print(
            f"{rule:>14}: macro {summary['macro_evaluation_sources']:.3f}, "
            f"{len(summary['below_0.5'])} below 0.5, unseen FPR "
            f"{summary['unseen_benign_fpr']:.4f}, recall {summary['unseen_attack_recall']:.3f}"
        )
        print("    ", json.dumps(per))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
