"""A quick LODO screen of text representations, before building one into Gate.

A Gate LODO takes half an hour; this takes minutes. For each evaluation
source it fits one logistic regression on a representation of every other
row (training corpora included), picks the threshold that maximises F1 at
FPR <= 1% on an inner 15% of them, and scores the held-out source by its
primary metric (chunks max-pooled to prompts), exactly as
``bench_generalisation.py --mode lodo`` does for a detector. It reports LODO
macro, the sources below 0.5 and the held-out AUC of the mixed sources.
``--model mlp`` fits Gate's perceptron head (:class:`gatebench.gate.heads.MLPHead`,
one ReLU layer of 256) on the same vectors instead of the logistic regression.

Representations: ``static`` (the distilled MiniLM table Gate's fast path
reads), ``static@DIR`` (a table distilled by the same recipe from the
sentence-transformers model in folder ``DIR``, to try another encoder on the
fast path), ``multilingual`` (USE multilingual v3, Gate's opt-in head), or both
side by side (``static+multilingual``). Vectors are read through Gate's
embedding cache. ``minilm@L`` is the whole MiniLM (fp32, 128 tokens, as the
deferred stage reads) mean-pooled at layer ``L`` (0: the token embeddings, 6:
the sentence embedding), and ``minilm-max@L`` max-pooled; each vector is
L2-normalised, and all layers come from one pass, cached beside the trace's
vectors. ``char`` and ``word`` are the hashed n-gram counts of Gate's
two lexical heads, each read by its own head (SGD logistic regression on
TF-IDF, NB-SVM) instead of the screen's model. ``char~form`` and
``word~form`` are the same heads on form-only text
(:func:`gatebench.gate.form.form_only`), where every word outside a list is
masked: the ``--form-words`` most frequent words of the benign training
corpora, or scikit-learn's English stop words with ``--form-words 0``.
N-gram views joined with ``+`` are read side by side by the first one's head.
``--min-sources K`` keeps, per refit, only the n-gram buckets that occur in
at least ``K`` of its training sources. ``--hard K`` weighs each training
row by ``1 + K * (1 - p)``, ``p`` its out-of-fold probability of its own
label. Every run prints the pooled never-seen FPR / recall at four threshold
rules, so two runs can be read against one curve. Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/screen_representations.py \
        static multilingual static+multilingual [--model mlp]
    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/screen_representations.py \
        char word --balance 0.5 --balance-by source [--min-sources 3] [--hard 2]
    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/screen_representations.py \
        char word~form char+word~form --form-words 0
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from bench_generalisation import _primary

from gatebench.config import RunConfig

#: The trace seed `gatebench run` and the LODO bench use, for the trace and the inner splits.
SEED = RunConfig.model_fields["seed"].default


#: FPR bounds on the refit's inner-valid rows; the first is the LODO rule.
RULES = (0.01, 0.02, 0.005, 0.002)

#: Representations read by the Gate head of the same name, not by ``--model``.
SPARSE = ("char", "word")

#: The same heads on form-only text (:mod:`gatebench.gate.form`); ``word~form`` reads the
#: ``form`` head's longer n-grams.
FORM = ("char~form", "word~form")


def frequent_words(texts: list[str], k: int) -> frozenset[str]:
    """The ``k`` most frequent lower-cased letter runs of ``texts`` (ties by first seen)."""
    from collections import Counter

    counts = Counter(w.lower() for t in texts for w in _LETTERS.findall(t))
    return frozenset(w for w, _ in counts.most_common(k))


_LETTERS = re.compile(r"[^\W\d_]+")


def _vectors(name: str, texts: list[str], keep: frozenset[str] = frozenset()) -> Any:
    from gatebench.gate.cache import DEFAULT_CACHE_DIR, VectorCache
    from gatebench.gate.heads import HEAD_TYPES

    if name in SPARSE:
        return HEAD_TYPES[name]().represent(texts)
    if name in FORM:
        from gatebench.gate.form import form_only

        masked = [form_only(t, keep) for t in texts]
        head = HEAD_TYPES[name.partition("~")[0]]
        ngrams = {"ngram_range": HEAD_TYPES["form"].default_ngrams} if head.view == "word" else {}
        return head(**ngrams).represent(masked)

    if name == "static":
        from gatebench.gate.static_embed import StaticEmbedder, distill_static

        vectors, tokenizer = distill_static(cache_dir=".cache/gatebench")
        return StaticEmbedder(vectors, tokenizer).encode(texts)
    if name.startswith("static@"):
        from gatebench.gate.static_embed import StaticEmbedder

        return StaticEmbedder(*_distil_from(name.partition("@")[2])).encode(texts)
    if name.startswith(("minilm@", "minilm-max@")):
        pooled, _, layer = name.partition("@")
        mean, peak = _minilm_layers(texts)
        return (peak if pooled == "minilm-max" else mean)[:, int(layer)].astype(np.float32)
    if name == "multilingual":
        from gatebench.gate.multilingual import MultilingualEncoder

        enc = MultilingualEncoder(max_chars=1000)
        return VectorCache(DEFAULT_CACHE_DIR, enc.fingerprint()).get_or_compute(texts, enc.encode)
    raise SystemExit(
        f"unknown representation {name!r}: use static, static@DIR, multilingual, minilm@L, "
        "minilm-max@L (any of them joined with +), char or word"
    )


def _minilm_layers(texts: list[str], max_tokens: int = 128) -> tuple[np.ndarray, np.ndarray]:
    """Every MiniLM layer of every text, mean- and max-pooled: ``(n, 7, 384)`` float16 each.

    Why every layer: the sentence embedding (layer 6) is trained to place texts
    by meaning, i.e. by topic; lower layers keep more of a text's form, which is
    where a request and a question about the same topic differ.
    """
    import hashlib
    from pathlib import Path

    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass") + b"\0")
    stem = Path(".cache/gatebench") / f"screen-minilm-layers-{max_tokens}-{digest.hexdigest()[:12]}"
    mean_file, max_file = stem.with_suffix(".mean.npy"), stem.with_suffix(".max.npy")
    if mean_file.is_file() and max_file.is_file():
        return np.load(mean_file), np.load(max_file)
    import torch
    from transformers import AutoModel, AutoTokenizer

    from gatebench.gate.static_embed import minilm_path

    tok = AutoTokenizer.from_pretrained(str(minilm_path()))
    model = AutoModel.from_pretrained(str(minilm_path())).eval()
    mean = np.zeros((len(texts), 7, 384), dtype=np.float16)
    peak = np.zeros_like(mean)
    order = np.argsort([len(t) for t in texts], kind="stable")
    with torch.inference_mode():
        for start in range(0, len(texts), 64):
            rows = order[start : start + 64]
            enc = tok(
                [texts[i] for i in rows],
                truncation=True,
                max_length=max_tokens,
                padding=True,
                return_tensors="pt",
            )
            hidden = torch.stack(model(**enc, output_hidden_states=True).hidden_states, dim=1)
            mask = enc["attention_mask"][:, None, :, None].to(hidden.dtype)
            avg = (hidden * mask).sum(2) / mask.sum(2)
            top = hidden.masked_fill(mask == 0, float("-inf")).amax(2)
            for out, val in ((mean, avg), (peak, top)):
                out[rows] = torch.nn.functional.normalize(val, dim=-1).numpy().astype(np.float16)
    stem.parent.mkdir(parents=True, exist_ok=True)
    np.save(mean_file, mean)
    np.save(max_file, peak)
    return mean, peak


def _distil_from(folder: str, dims: int = 256) -> tuple[np.ndarray, str]:
    """Gate's static-table recipe on the model in ``folder``, cached beside the trace's."""
    import hashlib
    from pathlib import Path

    from gatebench.gate.static_embed import distil_table

    tokenizer_json = (Path(folder) / "tokenizer.json").read_text(encoding="utf-8")
    key = hashlib.sha256(f"{dims}:{tokenizer_json}".encode()).hexdigest()[:12]
    cached = Path(".cache/gatebench") / f"static-screen-{dims}-{key}.npy"
    if not cached.is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        np.save(cached, distil_table(Path(folder), tokenizer_json, dims=dims, sif=1e-4))
    return np.load(cached), tokenizer_json


def _fit(
    x: np.ndarray, y: np.ndarray, model: str, c: float, weight: np.ndarray | None = None
) -> Callable[[np.ndarray], np.ndarray]:
    """A fitted scorer of rows of ``x`` that gives P(attack)-like scores in [0, 1]."""
    if model in SPARSE:
        from gatebench.gate.heads import HEAD_TYPES, sigmoid

        fitted = HEAD_TYPES[model](seed=0).fit_x(x, y, weight)
        return lambda rows: sigmoid(fitted.decision_x(rows))
    if model == "mlp":
        from gatebench.gate.heads import MLPHead, sigmoid

        head = MLPHead(seed=0).fit_x(x, y)
        return lambda rows: sigmoid(head.decision_x(rows))
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=c, max_iter=2000).fit(x, y, sample_weight=weight)
    return lambda rows: lr.predict_proba(rows)[:, 1]


def source_directions(x: np.ndarray, y: np.ndarray, source: np.ndarray) -> np.ndarray:
    """Orthonormal rows spanning where training sources of one label differ from each other.

    Every source but a few holds one label, so a model can separate the
    training rows by recognising the source (its topic, register, template)
    instead of what the text asks for, and that does not travel to a source
    it never saw. The centroid of each (source, label) cell minus its label's
    centroid points along such a difference; their span is the subspace a
    linear model should not read (mean-difference concept erasure).
    """
    diffs = []
    for label in (0, 1):
        rows = y == label
        centre = x[rows].mean(axis=0)
        for s in np.unique(source[rows]):
            diffs.append(x[rows & (source == s)].mean(axis=0) - centre)
    _, sv, vt = np.linalg.svd(np.asarray(diffs), full_matrices=False)
    return np.asarray(vt[sv > sv[0] * 1e-6])


def pair_directions(x: np.ndarray, y: np.ndarray, rank: int) -> np.ndarray:
    """Orthonormal rows spanning where attacks differ from their nearest benign text.

    A sentence embedding places texts by topic first, so a model fitted on
    it learns which topics the attacks are about, and flags benign text on
    those topics (a question about spotting scams beside a request to run
    one). The difference between an attack and its nearest benign training
    text (cosine) holds the topic roughly fixed; the top ``rank`` principal
    directions of those differences are where a request differs from a
    benign one *on its own topic*, the subspace an intent reader should use.
    """
    unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    benign = np.flatnonzero(y == 0)
    attacks = np.flatnonzero(y == 1)
    nearest = np.empty(len(attacks), dtype=np.int64)
    for start in range(0, len(attacks), 2048):
        rows = attacks[start : start + 2048]
        nearest[start : start + len(rows)] = benign[np.argmax(unit[rows] @ unit[benign].T, axis=1)]
    diffs = x[attacks] - x[nearest]
    _, _, vt = np.linalg.svd(diffs - diffs.mean(axis=0), full_matrices=False)
    return np.asarray(vt[:rank])


def topic_centres(x: np.ndarray, k: int, seed: int) -> Callable[[np.ndarray], np.ndarray]:
    """A map that subtracts from each row the centre of its nearest of ``k`` topics.

    The topics are k-means clusters of the training rows, labels unseen. What
    is left of a row is how it differs from other text on its topic, so a
    linear model on it cannot score a topic as such.
    """
    from sklearn.cluster import MiniBatchKMeans

    km = MiniBatchKMeans(n_clusters=k, random_state=seed, n_init=3, batch_size=4096).fit(x)
    centres = km.cluster_centers_
    return lambda rows: np.asarray(rows - centres[km.predict(rows)])


def neighbour_columns(
    unit: np.ndarray,
    rows: np.ndarray,
    bank: np.ndarray,
    y: np.ndarray,
    source: np.ndarray,
    consensus: int,
) -> np.ndarray:
    """Per row of ``rows``: similarity columns to the attacks and benign rows of ``bank``.

    A row's own source is left out of the bank, so the fitted rows read their
    neighbours as a never-seen source's rows do. ``consensus`` 0: the highest
    similarity to each label. ``consensus=m``: the mean of the ``m`` highest
    *per-source* maxima instead, so a text beside one source's attacks only
    (one source's labelling of its topic) scores lower than a text beside
    attacks of several sources.
    """
    order = np.lexsort((source[bank], y[bank]))  # by label, then source
    ranked = bank[order]
    cells = np.flatnonzero(
        np.r_[True, (y[ranked][1:] != y[ranked][:-1]) | (source[ranked][1:] != source[ranked][:-1])]
    )
    cell_label = y[ranked][cells]
    cell_source = source[ranked][cells]
    out = np.zeros((len(rows), 2))
    k = max(consensus, 1)
    for start in range(0, len(rows), 1024):
        block = rows[start : start + 1024]
        per = np.maximum.reduceat(unit[block] @ unit[ranked].T, cells, axis=1)
        per[source[block][:, None] == cell_source[None, :]] = -1.0
        for label in (0, 1):
            top = -np.sort(-per[:, cell_label == label], axis=1)[:, :k]
            out[start : start + len(block), 1 - label] = top.mean(axis=1)
    return out


def _attack_kind(source: np.ndarray) -> np.ndarray:
    """Each row's kind of attack by its source's family (``harmful-request`` outside the four)."""
    from bench_generalisation import FAMILIES

    kinds = ("direct-injection", "indirect-injection", "jailbreak")
    family = {s: f for f, srcs in FAMILIES.items() if f in kinds for s in srcs}
    return np.array([family.get(str(s), "harmful-request") for s in source])


def _fit_per_kind(
    x: Any, y: np.ndarray, kind: np.ndarray, model: str, c: float, weight: np.ndarray | None
) -> Callable[[Any], np.ndarray]:
    """One model per kind of attack against every benign row; a row scores its highest.

    A single linear score has to put every kind of attack above every benign
    text at once, so a kind's own cues are traded against the others'. Each
    kind's model sees only its attacks and all benign text.
    """
    scorers = []
    for k in np.unique(kind[y == 1]):
        rows = np.flatnonzero((y == 0) | (kind == k))
        w = None if weight is None else weight[rows]
        scorers.append(_fit(x[rows], y[rows], model, c, w))
    return lambda r: np.max([f(r) for f in scorers], axis=0)


def spread_mask(x: sp.csr_matrix, source: np.ndarray, k: int) -> np.ndarray:
    """Which columns of ``x`` occur in at least ``k`` distinct sources.

    An n-gram that only one training source uses can tell the model nothing
    but that source's label, since nearly every source holds one label; on a
    source it never saw, such a feature is evidence drawn from one other
    source's style. Features shared by several sources are the ones whose
    weight was learnt against more than one way of writing.
    """
    seen = np.zeros(x.shape[1], dtype=np.int64)
    for s in np.unique(source):
        rows = x[np.flatnonzero(source == s)]
        seen[np.unique(rows.indices)] += 1
    return np.asarray(seen >= k)


def _keep_columns(x: sp.csr_matrix, keep: np.ndarray) -> sp.csr_matrix:
    out = x.copy()
    out.data = out.data * keep[out.indices]
    out.eliminate_zeros()
    return out


def _erase(x: np.ndarray, basis: np.ndarray) -> np.ndarray:
    return np.asarray(x - (x @ basis.T) @ basis)


def _weights(
    x: np.ndarray, y: np.ndarray, source: np.ndarray, by: str, power: float
) -> np.ndarray | None:
    """Balancing weights for the training rows (None: unweighted)."""
    if not power:
        return None
    from sklearn.cluster import MiniBatchKMeans

    from gatebench.gate.balance import balance_weights

    if by == "source":
        return balance_weights(source, y, power)
    km = MiniBatchKMeans(n_clusters=40, random_state=SEED, n_init=3, batch_size=4096)
    return balance_weights(km.fit_predict(x), y, power)


def _own_probability(x: np.ndarray, y: np.ndarray, model: str, c: float, seed: int) -> np.ndarray:
    """Each row's out-of-fold probability of its own label (3 folds)."""
    from sklearn.model_selection import StratifiedKFold

    own = np.empty(len(y))
    for fit, out in StratifiedKFold(3, shuffle=True, random_state=seed).split(x, y):
        p = _fit(x[fit], y[fit], model, c)(x[out])
        own[out] = np.where(y[out] == 1, p, 1.0 - p)
    return own


def _agreeing(
    x: np.ndarray, y: np.ndarray, model: str, c: float, floor: float, seed: int
) -> np.ndarray:
    """Rows whose out-of-fold probability of their own label is at least ``floor``.

    A row the other folds confidently give the other label is one whose source
    labels it against what similar rows from other sources say; dropping those
    asks whether the sources' disagreements, not the model, set the trade.
    """
    return _own_probability(x, y, model, c, seed) >= floor


def _hard_factor(
    x: np.ndarray, y: np.ndarray, model: str, c: float, k: float, seed: int
) -> np.ndarray:
    """``1 + k * (1 - p_own)``: more weight on rows the other folds get wrong.

    Pruning those rows costs the never-seen attacks, so they carry what the
    held-out sources need. Weighting them up asks the opposite question: is
    it the benign rows that read like attacks (security questions, texts that
    name an attack) and the attacks that read like data that a linear model
    under-learns, because the many easy rows outvote them?
    """
    return 1.0 + k * (1.0 - _own_probability(x, y, model, c, seed))


def _lodo(
    frame: pd.DataFrame,
    x: np.ndarray,
    model: str,
    c: float,
    erase: bool = False,
    balance: tuple[str, float] = ("cluster", 0.0),
    prune: float = 0.0,
    min_sources: int = 0,
    per_kind: bool = False,
    hard: float = 0.0,
    benign_half: bool = False,
    pairs: int = 0,
    topics: int = 0,
    neighbours: int = -1,
) -> tuple[dict[str, tuple[float, float | None]], dict[float, tuple[float, float]]]:
    """Each held-out source's (primary metric, AUC), and the pooled (benign FPR, attack recall).

    The pooled pair is over every held-out prompt at its own refit's
    threshold, for each FPR rule of :data:`RULES` (the first is the LODO
    rule): where a lever only moves the threshold, it slides along the
    default's curve; where it ranks never-seen text better, it lies above it.
    """
    from sklearn.metrics import roc_auc_score

    from gatebench.seeding import child_seed
    from gatebench.split.splitters import inner_split
    from gatebench.threshold import select_operating_point

    y = frame["label"].to_numpy(dtype=np.int64)
    names = frame["source"].to_numpy()
    out = {}
    flagged = {rule: [0, 0] for rule in RULES}
    counts = [0, 0]
    for source in sorted(frame.loc[frame["role"] == "evaluation", "source"].unique()):
        held = (frame["source"] == source).to_numpy().copy()
        if benign_half:
            # Half the held-out source's benign prompts join the training rows, as a
            # deployment's own benign traffic would; the rest of the source is scored.
            ids = frame.loc[held & (y == 0), "sample_id"].unique()
            rng = np.random.default_rng(child_seed(SEED, "benign-half", source))
            given = set(rng.permutation(ids)[: len(ids) // 2])
            held &= ~frame["sample_id"].isin(given).to_numpy()
        train = np.flatnonzero(~held)
        tr, va = inner_split(y[train], valid_fraction=0.15, seed=child_seed(SEED, "inner", source))
        xs = x
        if erase:
            xs = _erase(x, source_directions(x[train[tr]], y[train[tr]], names[train[tr]]))
        fit_rows = train[tr]
        if pairs:
            basis = pair_directions(x[fit_rows], y[fit_rows], pairs)
            xs = np.asarray(x @ basis.T)
        if topics:
            xs = topic_centres(x[fit_rows], topics, child_seed(SEED, "topics", source))(x)
        if neighbours >= 0:
            # Only the neighbour columns: the fitted rows' own source is left out of the bank.
            from gatebench.gate.heads.neighbours import _principal_directions

            # The neighbour banks' geometry: the fitted rows' 64 leading directions.
            flat = x @ _principal_directions(np.asarray(x[fit_rows], np.float32), 64)
            unit = flat / np.maximum(np.linalg.norm(flat, axis=1, keepdims=True), 1e-12)
            read = np.concatenate([fit_rows, train[va], np.flatnonzero(held)])
            cols = neighbour_columns(unit, read, fit_rows, y, names, neighbours)
            xs = np.zeros((len(x), 2))
            xs[read] = cols
        if min_sources:
            xs = _keep_columns(x, spread_mask(x[fit_rows], names[fit_rows], min_sources))
        if prune:
            seed = child_seed(SEED, "prune", source)
            fit_rows = fit_rows[_agreeing(xs[fit_rows], y[fit_rows], model, c, prune, seed)]
        weight = _weights(xs[fit_rows], y[fit_rows], names[fit_rows], *balance)
        if hard:
            seed = child_seed(SEED, "hard", source)
            factor = _hard_factor(xs[fit_rows], y[fit_rows], model, c, hard, seed)
            weight = factor if weight is None else weight * factor
        if per_kind:
            kind = _attack_kind(names[fit_rows])
            prob = _fit_per_kind(xs[fit_rows], y[fit_rows], kind, model, c, weight)
        else:
            prob = _fit(xs[fit_rows], y[fit_rows], model, c, weight)
        p_valid = prob(xs[train[va]])
        thetas = {
            rule: select_operating_point(y[train[va]], p_valid, max_fpr=rule).threshold
            for rule in RULES
        }
        scored = (
            pd.DataFrame(
                {
                    "id": frame["sample_id"][held],
                    "y": y[held],
                    "s": prob(xs[held]),
                }
            )
            .groupby("id")
            .agg(y=("y", "first"), s=("s", "max"))
        )
        yy, ss = scored["y"].to_numpy(), scored["s"].to_numpy()
        auc = float(roc_auc_score(yy, ss)) if 0 < yy.sum() < len(yy) else None
        out[str(source)] = (_primary(yy, ss >= thetas[RULES[0]])[1], auc)
        for label in (0, 1):
            counts[label] += int((yy == label).sum())
            for rule, theta in thetas.items():
                flagged[rule][label] += int(((ss >= theta) & (yy == label)).sum())
    return out, {
        rule: (f[0] / max(counts[0], 1), f[1] / max(counts[1], 1)) for rule, f in flagged.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("representations", nargs="+")
    ap.add_argument("--C", type=float, default=1.0, help="inverse L2 strength (lr)")
    ap.add_argument("--model", choices=("lr", "mlp"), default="lr")
    ap.add_argument(
        "--erase-sources",
        action="store_true",
        help="project out where training sources of one label differ (fitted per refit)",
    )
    ap.add_argument(
        "--balance",
        type=float,
        default=0.0,
        help="weight rows by n(group, label) ** -P (lr only; 0: unweighted)",
    )
    ap.add_argument("--balance-by", choices=("cluster", "source"), default="cluster")
    ap.add_argument(
        "--prune",
        type=float,
        default=0.0,
        help="drop training rows whose out-of-fold probability of their label is below this",
    )
    ap.add_argument(
        "--min-sources",
        type=int,
        default=0,
        help="char/word only: keep n-gram buckets found in at least K training sources (0: all)",
    )
    ap.add_argument(
        "--per-kind",
        action="store_true",
        help="one model per kind of attack (by source family) against all benign rows; max",
    )
    ap.add_argument(
        "--hard",
        type=float,
        default=0.0,
        help="weight each training row by 1 + K * (1 - its out-of-fold probability of its label)",
    )
    ap.add_argument(
        "--benign-half",
        action="store_true",
        help="train on half of each held-out source's benign prompts; score the rest",
    )
    ap.add_argument(
        "--pairs",
        type=int,
        default=0,
        help="read only the top R directions of attack-minus-nearest-benign differences",
    )
    ap.add_argument(
        "--topics",
        type=int,
        default=0,
        help="subtract each row's nearest of K k-means topic centres before fitting",
    )
    ap.add_argument(
        "--neighbours",
        type=int,
        default=-1,
        help="read only two neighbour columns (own source left out): 0 the nearest attack and "
        "benign similarity, M the mean of the M highest per-source maxima",
    )
    ap.add_argument(
        "--form-words",
        type=int,
        default=300,
        help="char~form / word~form: words kept unmasked, the most frequent in benign corpora "
        "(0: scikit-learn's English stop words)",
    )
    args = ap.parse_args()

    from gatebench.trace import TraceSpec, build_trace

    frame = build_trace(
        TraceSpec(seed=SEED),
        data_dir=os.environ.get("GATEBENCH_DATA"),
        cache_dir=".cache/gatebench",
    ).frame.reset_index(drop=True)
    texts = frame["text"].tolist()
    keep: frozenset[str] = frozenset()
    if any(p in FORM for rep in args.representations for p in rep.split("+")):
        from gatebench.gate.form import FORM_WORDS

        # Frequent words come from benign training-corpus rows, which no refit scores.
        benign_training = (frame["role"] == "training") & (frame["label"] == 0)
        keep = (
            frequent_words(frame.loc[benign_training, "text"].tolist(), args.form_words)
            if args.form_words
            else FORM_WORDS
        )
    for rep in args.representations:
        parts = rep.split("+")
        sparse = [p for p in parts if p in SPARSE or p in FORM]
        if sparse and (len(sparse) < len(parts) or args.erase_sources or args.prune):
            raise SystemExit(
                f"{rep!r}: char and word join only each other, without --erase-sources/--prune"
            )
        if args.min_sources and not sparse:
            raise SystemExit(f"--min-sources applies to char and word, not {rep!r}")
        if sparse:
            # Side by side, the n-gram views are read by the first one's head.
            x = sp.hstack([_vectors(p, texts, keep) for p in parts]).tocsr()
        else:
            x = np.hstack([_vectors(p, texts) for p in parts])
        model = parts[0].partition("~")[0] if sparse else args.model
        balance = (args.balance_by, args.balance)
        result, curve = _lodo(
            frame,
            x,
            model,
            args.C,
            args.erase_sources,
            balance,
            args.prune,
            args.min_sources,
            args.per_kind,
            args.hard,
            args.benign_half,
            args.pairs,
            args.topics,
            args.neighbours,
        )
        fpr, recall = curve[RULES[0]]
        values = [v for v, _ in result.values()]
        below = sorted(s for s, (v, _) in result.items() if v < 0.5)
        aucs = ", ".join(f"{s} {a:.3f}" for s, (_, a) in result.items() if a is not None)
        macro = (
            f"LODO macro {np.mean(values):.3f}, {len(below)} below 0.5, "
            f"never-seen benign FPR {fpr:.3f} / attack recall {recall:.3f}"
        )
        erased = ", sources erased" if args.erase_sources else ""
        if args.balance:
            erased += f", balanced by {args.balance_by} ** -{args.balance}"
        if args.prune:
            erased += f", rows below {args.prune} of their own label pruned"
        if args.per_kind:
            erased += ", one model per kind of attack"
        if args.hard:
            erased += f", rows weighted by 1 + {args.hard} * (1 - p(own label))"
        if args.min_sources:
            erased += f", n-grams in fewer than {args.min_sources} training sources dropped"
        if args.pairs:
            erased += f", top {args.pairs} attack-minus-nearest-benign directions"
        if args.topics:
            erased += f", centred on the nearest of {args.topics} topics"
        if args.neighbours >= 0:
            erased += f", neighbour columns only (consensus of {args.neighbours or 1} sources)"
        if args.benign_half:
            erased += ", half of each held-out source's benign prompts trained on"
        print(f"{rep} ({model}{erased}): {macro} | AUC {aucs}")
        print("  " + ", ".join(f"{s} {v:.3f}" for s, (v, _) in result.items()))
        points = ", ".join(f"{r:g}: {f:.3f} / {t:.3f}" for r, (f, t) in sorted(curve.items()))
        print(f"  pooled never-seen FPR / recall by rule: {points}")


if __name__ == "__main__":
    main()
