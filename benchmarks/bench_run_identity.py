"""Do two runs agree? Byte-identical OOF scores and equal result.json numbers.

A refactor of the pipeline must not change what a run concludes. Given two
run directories of the same configuration (for example one written by the
previous version of gatebench and one by this version, or one local and one
on dask), this compares:

- ``oof.jsonl`` byte for byte (scores are written with fixed formatting);
- every value of ``result.json`` that the first run holds, leaf by leaf,
  except those that measure the machine rather than the method (timings,
  latency samples) and paths;
- run time, from each manifest's step timings.

``--ignore-column NAME`` compares ``oof.jsonl`` with one column left out of
every line (a change that adds information to a column, such as detected
prompt languages, leaves the scores to compare).

Usage::

    python benchmarks/bench_run_identity.py RUN_A RUN_B [--ignore-column language]

Exits 1 when the runs disagree, printing the first differing leaves.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

#: Leaves that measure the machine, the wall clock or a path, not the method.
VOLATILE = re.compile(
    r"(seconds|latency|_ms\b|\.samples|\.mean$|\.p50$|\.p95$|\.p99$|run_dir|\.path$|\.readme$"
    r"|created|git_commit|timings)"
)


def leaves(value: Any, path: str = "") -> dict[str, Any]:
    """Flatten nested JSON to ``{dotted.path[i]: scalar}``."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(leaves(item, f"{path}.{key}" if path else str(key)))
        return out
    if isinstance(value, list):
        out = {}
        for i, item in enumerate(value):
            out.update(leaves(item, f"{path}[{i}]"))
        return out
    return {path: value}


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Leaves of ``a`` (not volatile) whose value in ``b`` is missing or different."""
    la, lb = leaves(a), leaves(b)
    out = []
    for key, value in la.items():
        if VOLATILE.search(key):
            continue
        if key not in lb:
            out.append(f"{key}: {value!r} -> missing")
        elif lb[key] != value:
            out.append(f"{key}: {value!r} -> {lb[key]!r}")
    return out


def oof_lines(run: Path, ignore: str | None) -> list[bytes]:
    """``oof.jsonl`` lines as written, or with the ``ignore`` column cut out of each."""
    lines = (run / "oof.jsonl").read_bytes().splitlines()
    if ignore is None:
        return lines
    pattern = re.compile(rb',?"' + re.escape(ignore.encode()) + rb'":(?:"[^"]*"|null)')
    return [pattern.sub(b"", line) for line in lines]


def total_seconds(run: Path) -> float:
    """Sum of the step timings the run's manifest records."""
    manifest = json.loads((run / "manifest.json").read_text())
    return float(sum(manifest.get("timings_seconds", {}).values()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--ignore-column", default=None, help="leave this OOF column out")
    args = parser.parse_args()
    ignore = args.ignore_column
    same_oof = oof_lines(args.run_a, ignore) == oof_lines(args.run_b, ignore)
    diff = differences(
        json.loads((args.run_a / "result.json").read_text()),
        json.loads((args.run_b / "result.json").read_text()),
    )
    left_out = f" (column {ignore!r} left out)" if ignore else ""
    print(f"oof.jsonl byte-identical{left_out}: {same_oof}")
    print(f"result.json leaves that differ (machine-dependent ones excluded): {len(diff)}")
    for line in diff[:20]:
        print("  " + line)
    a, b = total_seconds(args.run_a), total_seconds(args.run_b)
    print(f"recorded step time: {a:.1f} s vs {b:.1f} s")
    return 0 if same_oof and not diff else 1


if __name__ == "__main__":
    sys.exit(main())
