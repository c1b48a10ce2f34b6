"""Language identification candidates: speed on the default trace, accuracy on stated languages.

Compares py3langid (the langid.py model, 4.6 MB wheel), with all of its 140
labels and with only its two-letter (ISO 639-1) ones, against lingua (a ~96 MB
wheel of n-gram models) in its high- and low-accuracy modes, and times
:func:`gatebench.language.detect_language` (py3langid plus the package's
rules: first 1,000 characters, "und" for short or mixed text) as the trace
uses it.

* Speed: texts per second on a seeded sample of the default trace's prompts
  (``--sample``, 5,000 by default; every candidate sees the same texts, cut to
  their first 1,000 characters), median of ``--repeats`` runs after one
  warm-up call; and ``detect_languages`` over every prompt of the trace.
* Accuracy: on prompts whose loader states the language (xsafety, mgsm,
  belle-eval, cyberseceval-prompt-injection, ailuminate-demo, the English
  sources ...), at most ``--per-language`` prompts per stated language
  (seeded), so that English does not swamp the rest. A prediction is right
  when it equals the stated code; "und" (or lingua's None) is counted apart
  from a wrong code (a three-letter label such as "wuu", Wu Chinese, is a
  wrong code). Some stated labels are wrong upstream (e.g. a
  cyberseceval row labelled "hi" whose text is Portuguese), which caps every
  candidate below 100%.

Run::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/bench_language_id.py \\
        [--sample 5000] [--repeats 3] [--per-language 300] [--seed 0]

lingua is optional here (``pip install lingua-language-detector``); without
it only py3langid is measured. Results: benchmarks/RESULTS.md, "Language
identification".
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from gatebench.data import get_loader
from gatebench.data.resolve import data_dir_from_env, resolve_root
from gatebench.errors import SourceMissingError
from gatebench.language import MAX_CHARS, UNDETERMINED, detect_languages, detector_version
from gatebench.trace import TraceSpec, build_trace, fill_languages, prompts_from_chunks

Detector = Callable[[list[str]], list[str]]


def _py3langid(*, two_letter: bool) -> Detector:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    if two_letter:
        ident.set_languages([c for c in ident.labels if len(c) == 2])
    return lambda texts: [str(ident.classify(t)[0]) for t in texts]


def _lingua(*, low: bool, parallel: bool) -> Detector | None:
    try:
        import lingua
    except ImportError:
        return None
    builder = lingua.LanguageDetectorBuilder.from_all_languages()
    if low:
        builder = builder.with_low_accuracy_mode()
    detector = builder.with_preloaded_language_models().build()

    def code(lang: Any) -> str:
        return UNDETERMINED if lang is None else str(lang.iso_code_639_1.name.lower())

    if parallel:
        return lambda texts: [code(x) for x in detector.detect_languages_in_parallel_of(texts)]
    return lambda texts: [code(detector.detect_language_of(t)) for t in texts]


def candidates() -> dict[str, Detector]:
    out: dict[str, Detector | None] = {
        "py3langid, all 140 labels": _py3langid(two_letter=False),
        "py3langid, two-letter labels": _py3langid(two_letter=True),
        "gatebench.language (py3langid + rules)": detect_languages,
        "lingua, high accuracy": _lingua(low=False, parallel=False),
        "lingua, low accuracy": _lingua(low=True, parallel=False),
        "lingua, low accuracy, parallel": _lingua(low=True, parallel=True),
    }
    return {k: v for k, v in out.items() if v is not None}


def stated_prompts(seed: int) -> pd.DataFrame:
    """Every prompt whose loader states a language: sample id, text, language, source."""
    mirror = data_dir_from_env(None)
    rows = []
    for name in TraceSpec().sources:
        loader = get_loader(name)
        try:
            root = resolve_root(loader.card, mirror, allow_hub=False)
        except SourceMissingError:
            continue
        for s in loader.load(root, seed=seed).samples:
            if s.language is not None:
                rows.append((s.sample_id, s.text, s.language, name))
    return pd.DataFrame(rows, columns=["sample_id", "text", "language", "source"])


def capped(stated: pd.DataFrame, seed: int, per_language: int) -> pd.DataFrame:
    """At most ``per_language`` distinct texts per stated language, seeded."""
    shuffled = stated.drop_duplicates("text").sample(frac=1.0, random_state=seed)
    return shuffled.groupby("language", sort=True).head(per_language).reset_index(drop=True)


def timed(fn: Detector, texts: list[str], repeats: int) -> list[float]:
    fn(texts[:50])  # warm-up: models load on first use
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(texts)
        out.append(time.perf_counter() - t0)
    return out


def accuracy(pred: list[str], truth: pd.Series) -> dict[str, Any]:
    p, t = np.asarray(pred), truth.to_numpy()
    right, und = p == t, p == UNDETERMINED
    per = pd.Series(right, index=t).groupby(level=0).mean()
    return {
        "accuracy": float(right.mean()),
        "macro": float(per.mean()),
        "und": float(und.mean()),
        "wrong": float((~right & ~und).mean()),
        "per_language": per.round(3).to_dict(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--per-language", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trace-seed", type=int, default=20260527)
    parser.add_argument("--cache", default=".cache/gatebench")
    args = parser.parse_args()

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}"
    )
    print(f"detector: {detector_version()}")
    trace = build_trace(TraceSpec(seed=args.trace_seed), cache_dir=args.cache, allow_hub=False)
    prompts = prompts_from_chunks(trace.frame, int(trace.info["chunking"]["chunk_overlap"]))
    rng = np.random.default_rng(args.seed)
    picked = rng.choice(len(prompts), size=min(args.sample, len(prompts)), replace=False)
    sample = [prompts[i][:MAX_CHARS] for i in sorted(picked)]
    stated = stated_prompts(args.seed)
    labelled = capped(stated, args.seed, args.per_language)
    print(
        f"trace {trace.trace_id[:12]}: {len(prompts):,} prompts; speed sample {len(sample):,}; "
        f"labelled {len(labelled):,} prompts in {labelled['language'].nunique()} languages"
    )

    texts = [t[:MAX_CHARS] for t in labelled["text"]]
    for name, fn in candidates().items():
        times = timed(fn, sample, args.repeats)
        got = accuracy(fn(texts), labelled["language"])
        worst = sorted(got["per_language"].items(), key=lambda kv: kv[1])[:4]
        print(
            f"{name}: {len(sample) / statistics.median(times):,.0f} texts/s "
            f"(runs {', '.join(f'{t:.2f}' for t in times)} s); accuracy {got['accuracy']:.2%}, "
            f"macro over languages {got['macro']:.2%}, und {got['und']:.2%}, "
            f"wrong code {got['wrong']:.2%}; lowest {worst}; load {os.getloadavg()[0]:.1f}"
        )

    # The trace's own step: blank what the loaders did not state, as a fresh build has it.
    frame = trace.frame.copy()
    frame.loc[~frame["sample_id"].isin(set(stated["sample_id"])), "language"] = None
    overlap = int(trace.info["chunking"]["chunk_overlap"])
    runs = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        filled, counts = fill_languages(frame, overlap)
        runs.append(time.perf_counter() - t0)
    assert filled["language"].equals(trace.frame["language"]), "fill differs from the trace"
    print(
        f"fill_languages on the default trace: {counts['detected']:,} prompts detected "
        f"({counts['undetermined']:,} und), {counts['given']:,} given; median "
        f"{statistics.median(runs):.2f} s (runs {', '.join(f'{t:.2f}' for t in runs)})"
    )

    times = timed(detect_languages, prompts, args.repeats)
    found = pd.Series(detect_languages(prompts)).value_counts()
    median = statistics.median(times)
    print(
        f"detect_languages on all {len(prompts):,} prompts: median {median:.1f} s "
        f"(runs {', '.join(f'{t:.1f}' for t in times)}); und {found.get(UNDETERMINED, 0):,}; "
        f"top {found.head(8).to_dict()}"
    )


if __name__ == "__main__":
    main()
