"""Screen: does taking each language's offset out of the USE vectors help them transfer?

Multilingual sentence encoders are known to keep a language's identity in a
direction of their space, and subtracting a per-language mean vector is the
usual cure for cross-lingual transfer. Gate's routed head is logistic
regression on those vectors; if it reads language, the training mix of each
language (mostly translated harmful requests) follows into never-seen text.
For each held-out unit this fits the head's model (C = 1, the trace's
language-balanced weights) on every other row, three ways:

- ``raw``: the vectors as Gate reads them;
- ``mean``: minus each language's weighted mean, less the overall mean
  (languages with at least ``MIN_ROWS`` training rows);
- ``parallel``: minus each language's mean difference from English over the
  translation pairs the training corpora hold (rows sharing a ``parent_id``),
  an offset that carries no topic or label.

The language is the route's own call on the opening of the text. It prints,
on the held-out routed (non-English) rows, AUC and FPR / recall at the
threshold that holds FPR <= 1% on an inner 15% of the routed training rows.
Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/screen_language_offsets.py
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
from bench_generalisation import FAMILIES, _built_from
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from gatebench.config import RunConfig
from gatebench.gate.balance import rake_weights
from gatebench.gate.cache import DEFAULT_CACHE_DIR, VectorCache
from gatebench.gate.multilingual import ROUTE_CHARS, MultilingualEncoder
from gatebench.language import opening_language
from gatebench.seeding import child_seed
from gatebench.threshold import select_operating_point
from gatebench.trace import TraceSpec, build_trace

MIN_ROWS = 30
UNITS = {
    "xsafety": ("xsafety",),
    "mgsm": ("mgsm",),
    "belle-eval": ("belle-eval",),
    "non-english (family)": FAMILIES["non-english"],
    "notinject": ("notinject",),
    "deepset-prompt-injections": ("deepset-prompt-injections",),
    "cyberseceval-prompt-injection": ("cyberseceval-prompt-injection",),
}


def mean_offsets(x: np.ndarray, lang: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
    """Each language's weighted mean vector less the overall one (English keeps its own)."""
    overall = np.average(x, axis=0, weights=w)
    return {
        str(code): np.average(x[lang == code], axis=0, weights=w[lang == code]) - overall
        for code in np.unique(lang)
        if code != "en" and (lang == code).sum() >= MIN_ROWS
    }


def parallel_offsets(x: np.ndarray, lang: np.ndarray, parent: np.ndarray) -> dict[str, np.ndarray]:
    """Each language's mean difference from the English row of the same item."""
    rows = pd.DataFrame({"parent": parent, "lang": lang, "i": np.arange(len(lang))})
    rows = rows[rows["parent"] != ""]
    english = rows[rows["lang"] == "en"].groupby("parent")["i"].first()
    out = {}
    for code, part in rows[rows["lang"] != "en"].groupby("lang"):
        part = part[part["parent"].isin(english.index)]
        if len(part) >= MIN_ROWS:
            diff = x[part["i"].to_numpy()] - x[english.loc[part["parent"]].to_numpy()]
            out[str(code)] = diff.mean(axis=0)
    return out


def shifted(x: np.ndarray, lang: np.ndarray, offsets: dict[str, np.ndarray]) -> np.ndarray:
    out = x.copy()
    for code, offset in offsets.items():
        out[lang == code] -= offset
    return out


def main() -> None:
    run = RunConfig()
    seed = run.seed
    frame = build_trace(
        TraceSpec(
            sources=tuple(run.sources),
            seed=seed,
            twins=run.twins,
            embedded=run.embedded,
            embedded_payloads=run.embedded_payloads,
        ),
        data_dir=os.environ.get("GATEBENCH_DATA"),
        cache_dir=".cache/gatebench",
    ).frame
    texts = frame["text"].tolist()
    enc = MultilingualEncoder()
    x = VectorCache(DEFAULT_CACHE_DIR, enc.fingerprint()).get_or_compute(texts, enc.encode)
    x = x.astype(np.float64)
    opening = np.array([opening_language(t, ROUTE_CHARS) for t in texts], dtype=object)
    routed = opening != "en"
    y = frame["label"].to_numpy(dtype=np.int64)
    trace_lang = frame["language"].to_numpy(dtype=object)
    parent = frame["parent_id"].fillna("").to_numpy(dtype=object)
    source = frame["source"].to_numpy(dtype=object)
    for name, held_sources in UNITS.items():
        held = np.isin(source, held_sources)
        train = np.flatnonzero(~held & ~_built_from(frame, held))
        rng = np.random.default_rng(child_seed(seed, "offsets", name))
        order = rng.permutation(train)
        cut = len(order) * 15 // 100
        valid, fit = np.sort(order[:cut]), np.sort(order[cut:])
        w = rake_weights([trace_lang[fit]], y[fit])
        test = np.flatnonzero(held & routed)
        cells = [f"{name} ({len(test)} routed prompts, attack share {y[test].mean():.2f})"]
        for variant in ("raw", "mean", "parallel"):
            offsets = (
                {}
                if variant == "raw"
                else mean_offsets(x[fit], opening[fit], w)
                if variant == "mean"
                else parallel_offsets(x[fit], opening[fit], parent[fit])
            )
            model = LogisticRegression(C=1.0, max_iter=3000)
            model.fit(shifted(x[fit], opening[fit], offsets), y[fit], sample_weight=w)
            v = valid[routed[valid]]
            p_valid = model.predict_proba(shifted(x[v], opening[v], offsets))[:, 1]
            theta = select_operating_point(y[v], p_valid, max_fpr=0.01).threshold
            p = model.predict_proba(shifted(x[test], opening[test], offsets))[:, 1]
            yt = y[test]
            auc = roc_auc_score(yt, p) if 0 < yt.sum() < len(yt) else float("nan")
            fpr = float((p[yt == 0] >= theta).mean()) if (yt == 0).any() else float("nan")
            rec = float((p[yt == 1] >= theta).mean()) if (yt == 1).any() else float("nan")
            cells.append(f"{variant}: AUC {auc:.3f} FPR {fpr:.3f} recall {rec:.3f}")
        print(" | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
