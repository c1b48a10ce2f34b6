"""Gate speed and size: load time, single-text latency (p50/p95), batch throughput, RSS.

Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/bench_gate.py \
        [--model DIR] [--param KEY=JSON ...] [--runs 3] [--n-single 500] [--n-batch 2000] \
        [--documents]

Without ``--model`` it trains Gate once (seed 0) on 80% of the default trace's
prompts and saves it under ``.cache/gatebench/bench-gate-model-<key>``, the key
a hash of the trace id, ``--param`` and Gate's defaults; the texts
it times are drawn from the other 20%, each scored at its own position
(user turn, tool result, document), which only a data guard reads. Timing a
model on its own training texts would be wrong twice over: they score more confidently in some heads
(the neighbour head finds the text itself) and less in others, so the share
routed to the deferred stage, and with it the latency, is not the share unseen
traffic gets. ``--model`` takes a ``gatebench train`` directory (or a bare
Gate directory); then the texts come from the same 20% sample, which that
model may have seen. ``--param`` trains the model with those Gate parameters
instead (for example an opt-in head), on the same 80%. Each figure is the
median over ``--runs`` fresh processes (load, the warm-up a service adds, and
RSS) or repeated passes (latency, throughput). ``--documents`` builds the
trace with the corpora's benign documents (``gatebench run --documents``),
which a data guard learns from; single-text latency is then also reported
for the texts at a data position alone (``data_p50_ms``, ``data_p95_ms``).

``--deferred-weights W,W,W,B`` replaces the loaded model's deferred-stage
weights and intercept before timing (not in the load/RSS processes). The
deferred stage scores a text's windows only when its weights read them;
the bench model's fit zeroes them while a model from ``gatebench train``
on the whole trace keeps them, so this times the bench texts as such a
model would cost (its scores are not that model's).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

DEFAULT_MODEL = Path(".cache/gatebench/bench-gate-model")


def _split(
    seed: int = 0, holdout: float = 0.2, documents: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The default trace split by prompt, as ``gatebench train --holdout``: (fit, held out, id)."""
    from gatebench.holdout import split_holdout
    from gatebench.trace import TraceSpec, build_trace

    trace = build_trace(
        TraceSpec(documents=documents),
        data_dir=os.environ.get("GATEBENCH_DATA"),
        cache_dir=".cache/gatebench",
    )
    train, held = split_holdout(trace.frame, holdout, seed)
    assert held is not None
    return train, held, trace.trace_id


def _texts(frame: pd.DataFrame, n: int, seed: int) -> tuple[list[str], list[str]]:
    """A seeded sample of texts, with their positions (a data guard reads them)."""
    texts = frame["text"].tolist()
    where = frame["position"].fillna("user").tolist()
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(texts), size=min(n, len(texts)), replace=False)
    return [texts[i] for i in picks], [where[i] for i in picks]


def set_deferred_weights(gate: Any, spec: str) -> None:
    """Give ``gate``'s deferred stage the weights and intercept ``spec`` (``W,W,W,B``).

    Raises ``ValueError`` naming ``spec`` when it is not that many numbers.
    """
    try:
        *coef, intercept = (float(v) for v in spec.split(","))
    except ValueError:
        coef, intercept = [], 0.0
    if len(coef) != len(gate.deferred.coef):
        raise ValueError(f"{spec!r}: give {len(gate.deferred.coef)} weights and 1 intercept")
    gate.deferred.coef = np.asarray(coef)
    gate.deferred.intercept = intercept


def _gate_dir(path: Path) -> Path | None:
    """The Gate state inside ``path``: a ``gatebench train`` directory or a bare one."""
    for d in (path / "state", path):
        if (d / "gate.json").is_file():
            return d
    return None


def _ensure_model(
    path: Path, train: pd.DataFrame, trace_id: str, params: dict | None = None
) -> Path:
    found = _gate_dir(path)
    if found is not None:
        return found
    from gatebench.gate.commands import train_model

    t0 = time.perf_counter()
    summary = train_model(train, path, seed=0, trace_id=trace_id, folds=0, params=params)
    print(f"trained bench model in {time.perf_counter() - t0:.0f} s: {summary['model_dir']}")
    found = _gate_dir(path)
    assert found is not None
    return found


def _default_model(trace_id: str, params: dict) -> Path:
    """The cached bench model's folder, named after what the model depends on.

    The trace, the ``--param`` values and Gate's own defaults all go into the
    name, so a cached model is never reused after any of them changes (a new
    default, say) and timed as if it were the model the code now fits.
    """
    import hashlib
    import inspect

    from gatebench.gate import Gate
    from gatebench.gate.heads import HEAD_TYPES, SENTENCE_HEAD_TYPES

    def signature_defaults(fn: Any) -> dict[str, str]:
        return {
            k: repr(v.default)
            for k, v in inspect.signature(fn).parameters.items()
            if v.default is not inspect.Parameter.empty
        }

    defaults: dict[str, Any] = signature_defaults(Gate.__init__)
    # A head's own defaults (its constructor's, and class-level ones such as
    # the neighbour bank's width, inherited or not) shape the model as much as
    # Gate's do; the deferred stage's heads are part of every default model.
    for name, cls in sorted((HEAD_TYPES | SENTENCE_HEAD_TYPES).items()):
        own = {k: repr(getattr(cls, k)) for k in dir(cls) if k.startswith("default_")}
        defaults[f"head:{name}"] = signature_defaults(cls.__init__) | own
    blob = json.dumps([trace_id, params, defaults], sort_keys=True)
    return DEFAULT_MODEL.with_name(
        f"{DEFAULT_MODEL.name}-{hashlib.sha256(blob.encode()).hexdigest()[:10]}"
    )


def _child(model: str) -> None:
    """Fresh process: time imports + load, then the warm-up a service adds, then peak RSS."""
    t0 = time.perf_counter()
    from gatebench.gate import Gate

    gate = Gate.load(model)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    gate.warm()
    warm_s = time.perf_counter() - t0
    texts, positions = json.loads(sys.stdin.read())
    gate.score(texts, positions=positions)
    print(json.dumps({"load_s": load_s, "warm_s": warm_s, "rss_mb": _peak_rss_mb()}))


def _peak_rss_mb() -> float:
    """This process's own peak RSS.

    ``ru_maxrss`` is not it on Linux: exec keeps the high-water mark of the
    forked copy of the parent, so a child started by a parent that had just
    trained a model reports the parent's size. ``VmHWM`` belongs to the new
    address space alone.
    """
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--param", action="append", default=[], help="Gate parameter KEY=JSON")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--n-single", type=int, default=500)
    ap.add_argument("--n-batch", type=int, default=2000)
    ap.add_argument(
        "--deferred-weights",
        default=None,
        help="W_reading,W_window,W_neighbour,INTERCEPT for the deferred stage",
    )
    ap.add_argument("--documents", action="store_true", help="the trace keeps the documents")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child)
        return

    params = {k: json.loads(v) for k, v in (p.split("=", 1) for p in args.param)}
    train, held, trace_id = _split(documents=args.documents)
    model = _ensure_model(
        args.model or _default_model(trace_id, params), train, trace_id, params or None
    )
    single, single_at = _texts(held, args.n_single, seed=1)
    batch, batch_at = _texts(held, args.n_batch, seed=2)

    loads, warms, rss = [], [], []
    for _ in range(args.runs):
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(model)],
            input=json.dumps([batch[:1000], batch_at[:1000]]),
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        loads.append(r["load_s"])
        warms.append(r["warm_s"])
        rss.append(r["rss_mb"])

    from gatebench.gate import Gate
    from gatebench.types import DATA_POSITIONS

    gate = Gate.load(model)
    if args.deferred_weights:
        try:
            set_deferred_weights(gate, args.deferred_weights)
        except ValueError as err:
            ap.error(f"--deferred-weights={err}")
    gate.warm()  # what a service does at start: the multilingual encoder loads now
    # Warm-up: first calls pay lazy imports and allocations.
    gate.score(single[:20], positions=single_at[:20])
    p50s, p95s, fast50, fast95, data50, data95, tputs = [], [], [], [], [], [], []
    in_data = np.isin(single_at, list(DATA_POSITIONS))
    fractions: dict[str, float] = {}
    for _ in range(args.runs):
        gate.reset_stats()
        lat, lat_fast = [], []
        for t, at in zip(single, single_at, strict=True):
            before = gate.stats["fast_exit"]
            t0 = time.perf_counter()
            gate.score([t], positions=[at])
            dt = time.perf_counter() - t0
            lat.append(dt)
            if gate.stats["fast_exit"] > before:
                lat_fast.append(dt)
        fractions = gate.exit_fractions()
        p50s.append(float(np.percentile(lat, 50)) * 1e3)
        p95s.append(float(np.percentile(lat, 95)) * 1e3)
        fast50.append(float(np.percentile(lat_fast, 50)) * 1e3)
        fast95.append(float(np.percentile(lat_fast, 95)) * 1e3)
        if in_data.any():
            data50.append(float(np.percentile(np.asarray(lat)[in_data], 50)) * 1e3)
            data95.append(float(np.percentile(np.asarray(lat)[in_data], 95)) * 1e3)
        t0 = time.perf_counter()
        for i in range(0, len(batch), 256):
            gate.score(batch[i : i + 256], positions=batch_at[i : i + 256])
        tputs.append(len(batch) / (time.perf_counter() - t0))

    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "load_s": statistics.median(loads),
        "warm_s": statistics.median(warms),
        "rss_mb": statistics.median(rss),
        "single_p50_ms": statistics.median(p50s),
        "single_p95_ms": statistics.median(p95s),
        "fast_exit_p50_ms": statistics.median(fast50),
        "fast_exit_p95_ms": statistics.median(fast95),
        "data_p50_ms": statistics.median(data50) if data50 else None,
        "data_p95_ms": statistics.median(data95) if data95 else None,
        "n_single_data": int(in_data.sum()),
        "batch_texts_per_s": statistics.median(tputs),
        "exit_fractions": fractions,
        # Deferred texts cost more when the fitted weights read their windows.
        "deferred_weights": [round(float(c), 4) for c in gate.deferred.coef],
        "deferred_reads_windows": gate.deferred.reads_windows,
        "runs": args.runs,
        "n_single": len(single),
        "n_batch": len(batch),
        "texts": "held-out 20% of the default trace's prompts (seed 0)"
        + (", documents kept" if args.documents else ""),
        "loadavg_1min": os.getloadavg()[0],
        "params": params,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
