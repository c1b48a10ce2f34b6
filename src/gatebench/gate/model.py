"""Gate: heads, a stacked LightGBM combiner, and a two-stage cascade.

Fast path (every request): featurise once, five heads, LightGBM, Platt.
A request exits there unless its calibrated score falls in the uncertainty
band, or an escalation cue fires (an encoded payload, invisible or
look-alike characters, or an override/extraction cue inside a long
document: cases the fast path reads poorly by construction). Those go to
the deferred stage. It first reads the text with the real MiniLM encoder
(int8 ONNX, :mod:`gatebench.gate.encoder`): two more heads (a linear head and
the attack-bank neighbours in MiniLM space) join the fast heads' outputs in a
second LightGBM combiner, stacked the same way. That score is then the base
of :mod:`gatebench.gate.deferred`'s windows, decodings and neighbour
evidence, whose calibrated score replaces the fast one. The band is set on
validation rows so that about ``band_fraction`` of them fall in it, centred
(in log-odds) on the validation threshold that maximises F1 at FPR <= 1%:
the region where the global operating point will sit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np

from gatebench.gate.cache import DEFAULT_CACHE_DIR, VectorCache
from gatebench.gate.combiner import COMBINER_KINDS, Blend, Combiner, HeadMean, cross_fit
from gatebench.gate.deferred import DeferredStage
from gatebench.gate.encoder import MiniLMEncoder
from gatebench.gate.features import FEATURE_NAMES, STYLE_FEATURES, escalation_cues
from gatebench.gate.heads import (
    HEAD_TYPES,
    SENTENCE_HEAD_TYPES,
    FeatureHead,
    Head,
    NeighbourHead,
    sigmoid,
)
from gatebench.gate.judge import LLMJudge
from gatebench.gate.persist import load_gate, save_gate
from gatebench.gate.static_embed import StaticEmbedder, distill_static
from gatebench.gate.views import Featurizer, Views

__all__ = ["DEFAULT_HEADS", "STYLE_FEATURES", "Gate"]

Valid = tuple[Sequence[str], np.ndarray] | None
DEFAULT_HEADS: tuple[str, ...] = tuple(HEAD_TYPES)
_EPS = 1e-6
META_FEATURE_SETS = ("all", "content")


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1 - _EPS)
    return np.asarray(np.log(p) - np.log1p(-p))


def _direction(column: str) -> int:
    """Monotone direction of a combiner column: +1 attack evidence, -1 benign, 0 free."""
    if column.endswith(("_ben_max", "_ben_topk")):
        return -1
    if column.endswith(("_margin", "_att_max", "_att_topk")):
        return 1
    return 0


def _new_stats() -> dict[str, float]:
    return {
        "requests": 0,
        "fast_exit": 0,
        "deferred_band": 0,
        "deferred_cue": 0,
        "judge_calls": 0,
        "judge_failures": 0,
        "fast_seconds": 0.0,
        "deferred_seconds": 0.0,
        "judge_seconds": 0.0,
    }


class Gate:
    """The reference cascade detector.

    Parameters
    ----------
    seed : int
        The only source of randomness (inner folds, SGD, LightGBM).
    heads : sequence of str
        Which heads to stack, from :data:`DEFAULT_HEADS`.
    head_params : dict, optional
        Per-head constructor overrides, e.g. ``{"char": {"alpha": 3e-6}}``.
    n_folds : int
        Inner cross-fit folds for the stacked (out-of-fold) head outputs.
    combiner_params : dict, optional
        :class:`~gatebench.gate.combiner.Combiner` overrides.
    band_fraction : float
        Share of validation rows the uncertainty band should hold (~10%).
    escalate : bool
        Also defer rows that show an escalation cue, whatever their score.
    deferred_params : dict, optional
        :class:`~gatebench.gate.deferred.DeferredStage` overrides.
    judge : LLMJudge or dict or None
        Optional LLM judge for deferred rows (off by default).
    cache_dir : path or None
        Embedding/feature cache (by text hash) and the distilled static
        table; ``None`` disables on-disk caching.
    embedder : StaticEmbedder, optional
        A ready static embedder (tests pass a tiny one); distilled from
        MiniLM and cached when omitted.
    static_dims : int
        Width of the distilled static embedding.
    threshold : float or None
        Operating threshold to record with the model (chosen by the caller
        on out-of-fold scores); ``predict`` uses it.
    sentence : bool
        Give the deferred stage the MiniLM heads and their combiner. Off, the
        deferred stage starts from the fast score (no onnxruntime needed).
    sentence_tokens : int
        Tokens MiniLM reads per deferred text.
    encoder : MiniLMEncoder, optional
        A ready encoder; built (exported, quantised, cached) when omitted.
    meta_features : {"all", "content"}
        Which handcrafted features the fast path reads: ``all``, or
        ``content`` (cues and obfuscation signals only, without the
        :data:`STYLE_FEATURES` that identify a source by its form), both as
        combiner columns and as the feature head's input.
    monotone : bool
        Constrain the combiners to be non-decreasing in every head's attack
        evidence (and non-increasing in benign-neighbour similarity), so that
        trees cannot invert a head's meaning in a region one source fills.
    combine : {"trees", "mean", "blend"}
        How the heads are joined, in the fast path and in the deferred stage:
        ``trees`` (LightGBM over the out-of-fold head columns and the
        meta-features), ``mean`` (the mean of the heads' calibrated
        log-odds, recalibrated on the validation rows; see
        :class:`~gatebench.gate.combiner.HeadMean`) or ``blend`` (the trees'
        log-odds averaged with the ``blend_heads``'; see
        :class:`~gatebench.gate.combiner.Blend`).
    blend_heads : sequence of str
        The heads ``blend`` averages with the trees.
    stack_groups : int
        0: the inner cross-fit that produces the combiners' training columns
        uses stratified folds. ``k`` >= 2: the training texts are first
        clustered into ``k`` groups (k-means on the static embedding, seeded)
        and whole clusters are held out together, so the combiners learn how
        each head behaves on text unlike what it was fitted on, not on
        near-copies of it: the situation of a source the model never saw.
    """

    name = "gate"
    requires_fit = True

    def __init__(
        self,
        *,
        seed: int = 0,
        heads: Sequence[str] = DEFAULT_HEADS,
        head_params: dict[str, dict[str, Any]] | None = None,
        n_folds: int = 5,
        combiner_params: dict[str, Any] | None = None,
        band_fraction: float = 0.10,
        escalate: bool = True,
        deferred_params: dict[str, Any] | None = None,
        judge: LLMJudge | dict[str, Any] | None = None,
        cache_dir: Path | str | None = DEFAULT_CACHE_DIR,
        embedder: StaticEmbedder | None = None,
        static_dims: int = 256,
        threshold: float | None = None,
        sentence: bool = True,
        sentence_tokens: int = 256,
        encoder: MiniLMEncoder | None = None,
        meta_features: str = "all",
        monotone: bool = False,
        combine: str = "trees",
        stack_groups: int = 0,
        blend_heads: Sequence[str] = ("embed",),
    ) -> None:
        unknown = [h for h in heads if h not in HEAD_TYPES]
        if unknown or not heads:
            raise ValueError(
                f"heads={list(heads)!r}: unknown or empty; choose from {list(HEAD_TYPES)}"
            )
        if meta_features not in META_FEATURE_SETS:
            raise ValueError(
                f"meta_features={meta_features!r}: choose one of {list(META_FEATURE_SETS)}"
            )
        if combine not in COMBINER_KINDS:
            raise ValueError(f"combine={combine!r}: choose one of {list(COMBINER_KINDS)}")
        if not 0.0 <= band_fraction < 1.0:
            raise ValueError(f"band_fraction={band_fraction!r} must be in [0, 1), e.g. 0.1")
        self.seed = int(seed)
        self.head_names = tuple(heads)
        self.head_params = {k: dict(v) for k, v in (head_params or {}).items()}
        self.n_folds = int(n_folds)
        self.combiner_params = dict(combiner_params or {})
        self.band_fraction = float(band_fraction)
        self.escalate = bool(escalate)
        self.deferred = DeferredStage(**(deferred_params or {}))
        self.judge = LLMJudge(**judge) if isinstance(judge, dict) else judge
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.static_dims = int(static_dims)
        self.threshold = threshold
        self._embedder = embedder
        self._featurizer: Featurizer | None = None
        self._plain: Featurizer
        self.heads: dict[str, Head] = {}
        self.combiner: Combiner | HeadMean | Blend | None = None
        self.band = (1.0, 1.0)
        self.head_thresholds: dict[str, float] = {}
        self.fit_info: dict[str, Any] = {}
        self.trace_id: str | None = None
        self.stats = _new_stats()
        self.sentence = bool(sentence)
        self.sentence_tokens = int(sentence_tokens)
        self._encoder = encoder
        self._sentence_cache: VectorCache | None = None
        self.sentence_heads: dict[str, Head] = {}
        self.sentence_combiner: Combiner | HeadMean | Blend | None = None
        self.meta_features = meta_features
        self.monotone = bool(monotone)
        self.combine = combine
        if stack_groups < 0 or stack_groups == 1:
            raise ValueError(f"stack_groups={stack_groups!r}: use 0 (off) or at least 2, e.g. 40")
        self.stack_groups = int(stack_groups)
        self.blend_heads = tuple(blend_heads)
        if combine == "blend" and (
            not self.blend_heads
            or set(self.blend_heads) - set(self.head_names)
            or NeighbourHead.name in self.blend_heads
        ):
            raise ValueError(
                f"blend_heads={list(self.blend_heads)!r}: name one or more of the linear heads "
                f"in heads={list(self.head_names)!r}, e.g. ['embed']"
            )
        self._feature_cols = np.array(
            [meta_features == "all" or f not in STYLE_FEATURES for f in FEATURE_NAMES]
        )

    # -- construction helpers ---------------------------------------------------------
    def _get_featurizer(self) -> Featurizer:
        if self._featurizer is None:
            if self._embedder is None:
                root = self.cache_dir.parent if self.cache_dir is not None else None
                vectors, tok = distill_static(dims=self.static_dims, cache_dir=root)
                self._embedder = StaticEmbedder(vectors, tok)
            # The shared n-gram views must match what the heads would build alone.
            heads = list(self.heads.values()) or self._make_heads()
            probe = {h.name: h for h in heads if h.view in ("char", "word")}
            char, word = probe.get("char"), probe.get("word")
            self._featurizer = Featurizer(
                self._embedder,
                char_ngrams=getattr(char, "ngram_range", (2, 5)),
                word_ngrams=getattr(word, "ngram_range", (1, 2)),
                char_features=getattr(char, "n_features", 1 << 20),
                word_features=getattr(word, "n_features", 1 << 20),
                cache_dir=self.cache_dir,
            )
            self._plain = self._featurizer.without_cache()
        return self._featurizer

    def _get_encoder(self) -> MiniLMEncoder:
        if self._encoder is None:
            root = self.cache_dir.parent if self.cache_dir is not None else DEFAULT_CACHE_DIR.parent
            self._encoder = MiniLMEncoder.build(root / "minilm", max_tokens=self.sentence_tokens)
        if self._sentence_cache is None and self.cache_dir is not None:
            self._sentence_cache = VectorCache(
                self.cache_dir, f"minilm-{self._encoder.fingerprint()}"
            )
        return self._encoder

    def _sentence_views(self, views: Views) -> Views:
        """``views`` with MiniLM embeddings filled in (through the cache when there is one)."""
        if views.minilm is None:
            enc = self._get_encoder()
            if self._sentence_cache is not None and len(views):
                views.minilm = self._sentence_cache.get_or_compute(views.texts, enc.encode)
            else:
                views.minilm = enc.encode(views.texts)
        return views

    def _make_sentence_heads(self) -> list[Head]:
        return [
            cls(**({"seed": self.seed} | self.head_params.get(name, {})))
            for name, cls in SENTENCE_HEAD_TYPES.items()
        ]

    def _make_heads(self) -> list[Head]:
        out = []
        for name in self.head_names:
            params = {"seed": self.seed} | self.head_params.get(name, {})
            if name == FeatureHead.name:
                # "content" keeps style out of the whole fast path, this head included.
                params.setdefault("content_only", self.meta_features == "content")
            head = HEAD_TYPES[name](**params)
            if hasattr(head, "embedder"):
                head.embedder = self._embedder
            out.append(head)
        return out

    def _combiner_x(self, per_head: list[np.ndarray], views: Views) -> np.ndarray:
        """A combiner's input: head columns and meta-features, or one log-odds column per head.

        ``per_head`` holds the fast heads' :meth:`Head.meta_x` columns, then
        (for the deferred combiner) the MiniLM heads'.
        """
        if self.combine == "mean":
            heads = [*self.heads.values(), *self.sentence_heads.values()][: len(per_head)]
            cols = [
                h.logit_from_decision(h.decision_from_meta(m))
                for h, m in zip(heads, per_head, strict=True)
            ]
            return np.column_stack(cols).astype(np.float64)
        features = views.features[:, self._feature_cols]
        return np.column_stack([*per_head, features]).astype(np.float64)

    def _new_combiner(self, *, sentence: bool) -> Combiner | HeadMean | Blend:
        if self.combine == "mean":
            return HeadMean()
        params = dict(self.combiner_params)
        names = self.meta_names(sentence=sentence)
        if self.monotone:
            params["monotone_constraints"] = [_direction(n) for n in names]
        trees = Combiner(seed=self.seed, **params)
        if self.combine == "blend":
            columns = [names.index(f"{h}_margin") for h in self.blend_heads]
            return Blend(trees, columns, [self.heads[h].platt for h in self.blend_heads])
        return trees

    def meta_names(self, *, sentence: bool = False) -> list[str]:
        """Column names of the fast combiner's input (``sentence``: the deferred one's)."""
        heads = [*self.head_names, *(SENTENCE_HEAD_TYPES if sentence else ())]
        if self.combine == "mean":
            return [f"{h}_logit" for h in heads]
        names = []
        for h in heads:
            if h in (NeighbourHead.name, "minilm_neighbours"):
                names += [f"{h}_att_max", f"{h}_att_topk", f"{h}_ben_max", f"{h}_ben_topk"]
            else:
                names.append(f"{h}_margin")
        return names + [
            f for f, keep in zip(FEATURE_NAMES, self._feature_cols, strict=True) if keep
        ]

    # -- fit ---------------------------------------------------------------------------
    def fit(self, texts: Sequence[str], labels: np.ndarray, *, valid: Valid = None) -> Self:
        """Fit heads, combiner, band and deferred stage.

        Parameters
        ----------
        texts : sequence of str
            Training texts.
        labels : ndarray
            1 = attack, 0 = benign.
        valid : (texts, labels), optional
            Early-stopping, calibration and band-setting rows. When omitted,
            a stratified 15% of the training rows is held out for them.
        """
        t0 = time.perf_counter()
        y = np.asarray(labels, dtype=np.int64)
        texts = list(texts)
        if valid is None:
            from sklearn.model_selection import train_test_split

            idx = np.arange(len(texts))
            tr, va = train_test_split(idx, test_size=0.15, stratify=y, random_state=self.seed)
            valid = ([texts[i] for i in va], y[va])
            texts, y = [texts[i] for i in tr], y[tr]
        v_texts, v_y = list(valid[0]), np.asarray(valid[1], dtype=np.int64)
        feat = self._get_featurizer()
        views, v_views = feat(texts), feat(v_texts)
        t_feat = time.perf_counter()

        # One clustering per fit: the fast and MiniLM heads are cross-fitted on the same folds.
        groups = self._groups(views)
        heads, oof_meta = self._stack(self._make_heads, views, y, groups)
        t_cross = time.perf_counter()
        self.heads = {h.name: h for h in heads}
        v_meta = [h.meta_x(h.x_of(v_views)) for h in heads]
        self.combiner = self._new_combiner(sentence=False).fit(
            self._combiner_x(oof_meta, views), y, self._combiner_x(v_meta, v_views), v_y
        )
        t_comb = time.perf_counter()

        p_valid = self.combiner.proba(self._combiner_x(v_meta, v_views))
        p_base = p_valid
        t_sent = time.perf_counter()
        if self.sentence:
            p_base = self._fit_sentence(views, y, v_views, v_y, oof_meta, v_meta, groups)
        t_sent = time.perf_counter() - t_sent
        self._set_head_thresholds(v_views, v_y)
        self._fit_cascade(v_texts, v_views, v_y, p_valid, p_base)
        t_end = time.perf_counter()
        self.fit_info = {
            "n_train": len(texts),
            "n_valid": len(v_texts),
            "best_iteration": self.combiner.best_iteration,
            "band": list(self.band),
            "deferred_coef": [float(c) for c in self.deferred.coef],
            "seconds": {
                "featurise": t_feat - t0,
                "cross_fit": t_cross - t_feat,
                "heads_and_combiner": t_comb - t_cross,
                "sentence_stage": t_sent,
                "cascade": t_end - t_comb - t_sent,
                "total": t_end - t0,
            },
        }
        return self

    def _stack(
        self,
        make: Callable[[], list[Head]],
        views: Views,
        y: np.ndarray,
        groups: np.ndarray | None,
    ) -> tuple[list[Head], list[np.ndarray]]:
        """Cross-fit ``make()``'s heads, then fit each on every row.

        Returns the fitted heads (Platt-calibrated on their out-of-fold
        margins) and the out-of-fold combiner columns of every head.
        """
        oof_meta, oof_dec = cross_fit(
            make, views, y, n_folds=self.n_folds, seed=self.seed, groups=groups
        )
        heads = make()
        for j, head in enumerate(heads):
            head.fit_x(head.x_of(views), y)
            head.calibrate(oof_dec[:, j], y)
        return heads, oof_meta

    def _groups(self, views: Views) -> np.ndarray | None:
        """Cluster labels of the training texts for the inner cross-fit (None: plain folds)."""
        if not self.stack_groups:
            return None
        from sklearn.cluster import MiniBatchKMeans

        k = min(self.stack_groups, max(2, len(views) // 50))
        km = MiniBatchKMeans(n_clusters=k, random_state=self.seed, n_init=3, batch_size=4096)
        return np.asarray(km.fit_predict(np.asarray(views.static, dtype=np.float64)))

    def _fit_sentence(
        self,
        views: Views,
        y: np.ndarray,
        v_views: Views,
        v_y: np.ndarray,
        oof_meta: list[np.ndarray],
        v_meta: list[np.ndarray],
        groups: np.ndarray | None,
    ) -> np.ndarray:
        """Fit the MiniLM heads and the deferred combiner; return its validation P(attack).

        The MiniLM heads are cross-fitted with the fast heads' seed, so every
        training row's fast and MiniLM columns come from sub-fits that never
        saw it, and the deferred combiner stacks them like the fast one does.
        """
        self._sentence_views(views)
        self._sentence_views(v_views)
        heads, s_oof = self._stack(self._make_sentence_heads, views, y, groups)
        self.sentence_heads = {h.name: h for h in heads}
        v_s = [h.meta_x(h.x_of(v_views)) for h in heads]
        self.sentence_combiner = self._new_combiner(sentence=True).fit(
            self._combiner_x([*oof_meta, *s_oof], views),
            y,
            self._combiner_x([*v_meta, *v_s], v_views),
            v_y,
        )
        return self.sentence_combiner.proba(self._combiner_x([*v_meta, *v_s], v_views))

    def _sentence_proba(self, views: Views, fast_meta: list[np.ndarray]) -> np.ndarray:
        """The deferred combiner's P(attack) for ``views`` given the fast heads' columns."""
        assert self.sentence_combiner is not None
        self._sentence_views(views)
        s_meta = [h.meta_x(h.x_of(views)) for h in self.sentence_heads.values()]
        return self.sentence_combiner.proba(self._combiner_x([*fast_meta, *s_meta], views))

    def _set_head_thresholds(self, v_views: Views, v_y: np.ndarray) -> None:
        from gatebench.threshold import fold_threshold

        for name, head in {**self.heads, **self.sentence_heads}.items():
            p = head.proba_from_decision(head.decision_x(head.x_of(v_views)))
            self.head_thresholds[name] = float(fold_threshold(v_y, p)[0]) if v_y.any() else 0.5

    def _fit_cascade(
        self,
        v_texts: list[str],
        v_views: Views,
        v_y: np.ndarray,
        p_valid: np.ndarray,
        p_base: np.ndarray,
    ) -> None:
        """Set the band on the fast scores; fit the evidence weights on the deferred base."""
        from gatebench.threshold import select_operating_point

        centre = 0.5
        if v_y.any() and not v_y.all():
            op = select_operating_point(v_y, p_valid, max_fpr=0.01)
            centre = op.threshold if op.feasible else 0.5
        c = float(_logit(np.array([centre]))[0])
        dist = np.abs(_logit(p_valid) - c)
        if self.band_fraction <= 0 or not len(dist):
            self.band = (1.0, 1.0)
            return
        d = float(np.quantile(dist, self.band_fraction))
        self.band = (float(sigmoid(np.array(c - d))), float(sigmoid(np.array(c + d))))
        # The evidence weights are fitted on a band three times as wide: the
        # real band holds too few validation rows for four weights.
        wide = float(np.quantile(dist, min(1.0, 3 * self.band_fraction)))
        train = (dist <= wide) | escalation_cues(v_views.features)
        if min(int(v_y[train].sum()), int((1 - v_y[train]).sum())) < 10:
            train = np.ones(len(v_y), dtype=bool)
        idx = np.flatnonzero(train)
        ev = self.deferred.evidence([v_texts[i] for i in idx], p_base[idx], self._fast_pieces)
        self.deferred.fit(ev, v_y[idx])

    # -- scoring -----------------------------------------------------------------------
    def _check_fitted(self) -> Combiner | HeadMean | Blend:
        if self.combiner is None:
            raise RuntimeError("Gate is not fitted: call fit() or Gate.load(path) first")
        return self.combiner

    def _fast_meta(self, views: Views) -> tuple[np.ndarray, list[np.ndarray]]:
        comb = self._check_fitted()
        per_head = [h.meta_x(h.x_of(views)) for h in self.heads.values()]
        return comb.proba(self._combiner_x(per_head, views)), per_head

    def _fast_views(self, views: Views) -> tuple[np.ndarray, np.ndarray]:
        p, per_head = self._fast_meta(views)
        margin = np.zeros(len(views))
        if NeighbourHead.name in self.heads:
            j = list(self.heads).index(NeighbourHead.name)
            margin = per_head[j][:, 0] - per_head[j][:, 2]
        return p, margin

    def _fast_pieces(self, pieces: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Fast-path scores of derived texts (windows, decodings): never cached on disk."""
        self._get_featurizer()
        return self._fast_views(self._plain(pieces))

    def score_fast(self, texts: Sequence[str]) -> np.ndarray:
        """Fast-path P(attack) only (no deferred stage)."""
        return self._fast_views(self._get_featurizer()(list(texts)))[0]

    def route(self, p_fast: np.ndarray, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which rows the deferred stage takes: ``(in_band, escalated)``.

        ``in_band``: the fast score lies in the uncertainty band.
        ``escalated``: below the band's top, but an escalation cue fired.
        """
        lo, hi = self.band
        in_band = (p_fast >= lo) & (p_fast <= hi)
        escalated = np.zeros_like(in_band)
        if self.escalate:
            escalated = ~in_band & (p_fast < hi) & escalation_cues(features)
        return in_band, escalated

    def score(self, texts: Sequence[str]) -> np.ndarray:
        """Cascade P(attack): the fast score, or the deferred score for routed rows."""
        return self._cascade(list(texts))[0]

    def score_stages(self, texts: Sequence[str]) -> tuple[np.ndarray, list[str], dict[str, float]]:
        """:meth:`score`, plus the stage that decided each text and per-stage milliseconds.

        Returns
        -------
        scores : ndarray
            As :meth:`score`.
        stages : list of str
            ``"fast"`` or ``"deferred"`` per text.
        stage_ms : dict
            Wall milliseconds of this call in ``fast`` and, when any text went
            there, ``deferred`` (and ``judge``).
        """
        out, routed, seconds = self._cascade(list(texts))
        stages = ["fast"] * len(out)
        for i in routed:
            stages[i] = "deferred"
        ms = {"fast": seconds[0] * 1e3}
        if routed.size:
            ms["deferred"] = seconds[1] * 1e3
            if self.judge is not None:
                ms["judge"] = seconds[2] * 1e3
        return out, stages, ms

    def _cascade(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, tuple[float, ...]]:
        """Scores, the indices routed to the deferred stage, and seconds per stage."""
        if not texts:
            self._check_fitted()
            return np.zeros(0), np.zeros(0, dtype=np.intp), (0.0, 0.0, 0.0)
        t0 = time.perf_counter()
        views = self._get_featurizer()(texts)
        p, per_head = self._fast_meta(views)
        in_band, escalated = self.route(p, views.features)
        t1 = time.perf_counter()
        routed = np.flatnonzero(in_band | escalated)
        out = p.copy()
        if routed.size:
            base = p[routed]
            if self.sentence_combiner is not None:
                base = self._sentence_proba(views.take(routed), [m[routed] for m in per_head])
            ev = self.deferred.evidence([texts[i] for i in routed], base, self._fast_pieces)
            out[routed] = self.deferred.proba(ev)
        t2 = time.perf_counter()
        if routed.size and self.judge is not None:
            out[routed] = self._apply_judge([texts[i] for i in routed], out[routed])
        t3 = time.perf_counter()
        s = self.stats
        s["requests"] += len(texts)
        s["fast_exit"] += len(texts) - routed.size
        s["deferred_band"] += int(in_band.sum())
        s["deferred_cue"] += int(escalated.sum())
        s["fast_seconds"] += t1 - t0
        s["deferred_seconds"] += t2 - t1
        s["judge_seconds"] += t3 - t2
        return np.clip(out, 0.0, 1.0), routed, (t1 - t0, t2 - t1, t3 - t2)

    def _apply_judge(self, texts: list[str], p: np.ndarray) -> np.ndarray:
        assert self.judge is not None
        out = p.copy()
        for i, t in enumerate(texts):
            self.stats["judge_calls"] += 1
            v = self.judge.verdict(t)
            if v is None:
                self.stats["judge_failures"] += 1
                continue
            out[i] = (1 - self.judge.weight) * p[i] + self.judge.weight * v
        return out

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        """Hard labels at the recorded operating threshold (``score >= threshold``)."""
        if self.threshold is None:
            raise RuntimeError("no operating threshold recorded; pass threshold= or set .threshold")
        return self.score(texts) >= self.threshold

    # -- diagnostics -------------------------------------------------------------------
    def head_scores(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Each head's calibrated P(attack) (for permutation importance and plots)."""
        self._check_fitted()
        views = self._get_featurizer()(list(texts))
        if self.sentence_heads:
            self._sentence_views(views)
        heads = {**self.heads, **self.sentence_heads}
        return {n: h.proba_from_decision(h.decision_x(h.x_of(views))) for n, h in heads.items()}

    def head_predictions(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Each head's hard prediction at its own validation-chosen threshold (Cohen's kappa)."""
        return {n: p >= self.head_thresholds[n] for n, p in self.head_scores(texts).items()}

    def exit_fractions(self) -> dict[str, float]:
        """Share of scored requests that exited fast, or were deferred by band or by cue."""
        n = max(self.stats["requests"], 1)
        return {
            "fast": self.stats["fast_exit"] / n,
            "deferred_band": self.stats["deferred_band"] / n,
            "deferred_cue": self.stats["deferred_cue"] / n,
        }

    def reset_stats(self) -> None:
        """Zero the exit and latency counters."""
        self.stats = _new_stats()

    # -- persistence -------------------------------------------------------------------
    def save(self, path: Path | str, *, trace_id: str | None = None) -> Path:
        """Write the model directory (see :mod:`gatebench.gate.persist`)."""
        if trace_id is not None:
            self.trace_id = trace_id
        return save_gate(self, Path(path))

    @classmethod
    def load(cls, path: Path | str) -> Gate:
        """Load a Gate model directory; no pickle is involved.

        ``path`` is either a directory written by ``gatebench train -d gate``
        (then the threshold is the operating point it ships) or one written
        by :meth:`save`.
        """
        from gatebench.modeldir import MANIFEST, load_model

        p = Path(path)
        if (p / MANIFEST).is_file():
            loaded = load_model(p)
            if not isinstance(loaded.detector, Gate):
                raise TypeError(
                    f"{p} holds a {loaded.meta['detector']['name']!r} model, not Gate; "
                    "load it with gatebench.served.served_model or `gatebench detect`"
                )
            loaded.detector.threshold = loaded.threshold
            return loaded.detector
        return load_gate(p, Gate)
