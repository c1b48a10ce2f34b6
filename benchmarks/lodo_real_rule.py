"""LODO or LOFO again from saved refit scores, with the threshold placed on real rows only.

Each refit's threshold is the F1 maximum at FPR <= 1% on its inner-valid
rows (``bench_generalisation.py``). Those rows include the constructed
training rows the trace builds itself (twins, persona pairs, quoted attacks,
embedded injections), which are not traffic anyone sends: a kind of them that
scores high (the benign half of an addressed pair) raises the threshold that
every held-out source is read at. The shipped threshold already leaves
embedded rows out (:mod:`gatebench.unseen.calibrate`). This script reads the
saved row scores again (nothing is refitted), places each refit's threshold
on its inner-valid rows from loaded sources only, and writes the refits as
``bench_generalisation.py`` does, for ``lodo_compare.py``.

Folders written by ``screen_segment_spike.py`` (segment scores beside each
row's) are read as Gate reads them by default: a tool result's or
document's highest segment of at least three plain words counts
(``lodo_segment_rules.py --rules window-doc --min-words 3``).

Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/lodo_real_rule.py \\
        runs/scores-lodo-addressed --out runs/lodo-addressed-real.jsonl \\
        [--mode lodo|lofo] [--embedded 2000 --embedded-payloads addressed] [--all-rows]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from bench_generalisation import held_units, refit_row, summarise, trace_frame
from lodo_segment_rules import leave_short_unread, rescore

from gatebench.constructed import CONSTRUCTED_SOURCES


def _read_segments(z: dict, texts: np.ndarray, in_doc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Valid and test scores as Gate's segment reading gives them."""
    leave_short_unread(z, texts, 3)
    valid, test = (
        rescore("window-doc", z[f"p_{k}"], z[f"seg_{k}"], z[f"nseg_{k}"], in_doc[z[k]], 3)
        for k in ("valid", "test")
    )
    return valid, test


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--mode", choices=("lodo", "lofo"), default="lodo")
    ap.add_argument("--embedded", type=int, default=0)
    ap.add_argument("--embedded-payloads", default="attacks")
    ap.add_argument(
        "--all-rows",
        action="store_true",
        help="place the threshold on every inner-valid row (must reproduce the saved run)",
    )
    args = ap.parse_args()

    frame = trace_frame(embedded=args.embedded, embedded_payloads=args.embedded_payloads)
    units = held_units(frame, args.mode)
    real = ~frame["source"].isin(CONSTRUCTED_SOURCES).to_numpy()
    in_doc = frame["position"].isin(["tool", "document"]).to_numpy()
    texts = frame["text"].to_numpy(dtype=object)
    rows = []
    for path in sorted(args.folder.glob("*.npz")):
        if path.stem not in units:
            continue
        z = dict(np.load(path))
        iv, test = z["valid"], z["test"]
        if "seg_valid" in z:
            pv, pt = _read_segments(z, texts, in_doc)
        else:
            pv, pt = z["p_valid"], z["p_test"]
        keep = np.ones(len(iv), dtype=bool) if args.all_rows else real[iv]
        rows.append(refit_row(path.stem, units[path.stem], frame, iv[keep], pv[keep], test, pt))
        print(f"{path.stem}: {int((~keep).sum())} constructed inner-valid rows not in the rule")
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = summarise(rows)
    print(
        f"{len(rows)} refits: macro {s['macro_evaluation_sources']:.3f}, "
        f"{len(s['below_0.5'])} below 0.5, unseen FPR {s['unseen_benign_fpr']:.4f}, "
        f"recall {s['unseen_attack_recall']:.3f}"
    )


if __name__ == "__main__":
    main()
