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

:class:`Gate` holds the model and its fast path; fitting it is
:mod:`~gatebench.gate.training`, one scoring pass through the stages is
:mod:`~gatebench.gate.cascade`, and the combiners' column layout is
:mod:`~gatebench.gate.columns`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np

from gatebench.conversation import (
    Conversation,
    ScanPolicy,
    parse_conversation,
    score_conversations,
)
from gatebench.gate.cache import DEFAULT_CACHE_DIR, VectorCache
from gatebench.gate.cascade import exit_fractions, new_stats, route, run_cascade, stage_report
from gatebench.gate.columns import column_names, combiner_input, feature_columns
from gatebench.gate.combiner import Blend, Combiner, HeadMean
from gatebench.gate.data_guard import (
    DataGuard,
    at_data,
    attacked_sources,
    check_positions,
    guard_only_rows,
)
from gatebench.gate.deferred import DeferredStage
from gatebench.gate.encoder import MiniLMEncoder
from gatebench.gate.features import STYLE_FEATURES
from gatebench.gate.heads import (
    HEAD_TYPES,
    MULTILINGUAL_HEADS,
    SENTENCE_HEAD_TYPES,
    FeatureHead,
    Head,
    MultilingualHead,
    NeighbourHead,
    RoutedMultilingualHead,
    SentenceHead,
    SentenceNeighbourHead,
)
from gatebench.gate.heads.base import Valid
from gatebench.gate.judge import LLMJudge
from gatebench.gate.multilingual import MultilingualEncoder
from gatebench.gate.params import check_params
from gatebench.gate.permute import ColumnShuffle, feature_groups, group_columns
from gatebench.gate.persist import open_gate, save_gate
from gatebench.gate.segment_negatives import hard_segments
from gatebench.gate.segment_reading import SegmentReading, read_segments
from gatebench.gate.static_embed import StaticEmbedder, distill_static
from gatebench.gate.training import fit_gate, holdout_rows
from gatebench.gate.views import Featurizer, Views
from gatebench.parallel import one_native_thread
from gatebench.served import ServeSettings
from gatebench.types import StagedScores

__all__ = ["DEFAULT_HEADS", "ENGLISH_HEADS", "STYLE_FEATURES", "Gate"]

#: The heads a Gate stacks unless told otherwise (every head in :data:`HEAD_TYPES` can be named).
#: The routed multilingual head reads non-English text by meaning rather than by script:
#: on training corpora held out whole it lifted recall at the shipped threshold by about
#: a tenth at a lower false-alarm rate (benchmarks/RESULTS.md), and English traffic pays
#: only the language check.
DEFAULT_HEADS: tuple[str, ...] = (
    "char",
    "word",
    "embed",
    "features",
    "neighbours",
    "multilingual_routed",
)
#: The heads fitted mostly on English text (n-grams and the static MiniLM table): by default
#: their combiner columns are read only for text the routed head's route calls English.
ENGLISH_HEADS: tuple[str, ...] = ("char", "word", "embed", "neighbours", "form")
#: The service's window geometry, so a conversation scores here as it does when served.
_WINDOWS = ServeSettings()
#: What :meth:`Gate.warm` routes: English, and long enough to be identified.
_WARM_TEXT = "This sentence is long enough for the language check to read it."


class Gate:
    """The reference cascade detector.

    Parameters
    ----------
    seed : int
        The only source of randomness (inner folds, SGD, LightGBM).
    heads : sequence of str
        Which heads to stack: :data:`DEFAULT_HEADS`, or any of the heads in
        :data:`~gatebench.gate.heads.HEAD_TYPES` (``multilingual`` included).
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
        Tokens MiniLM reads per deferred text. 128 by default: reading 256
        matched it on LODO and on the held-out corpora in two draws each,
        at about an eighth less batch throughput.
    encoder : MiniLMEncoder, optional
        A ready encoder; built (exported, quantised, cached) when omitted.
    multilingual_chars : int
        Characters of each text the ``multilingual`` head reads (its start).
        500 by default, chosen together with ``sentence_tokens=128``: the
        pair matched 1000 on LODO and the held-out corpora, except for a
        slightly higher benign FPR on translated prompts.
    meta_features : {"content", "all", "none"}
        Which handcrafted features the fast path reads: ``content`` (cues
        and obfuscation signals only, without the :data:`STYLE_FEATURES`
        that identify a source by its form), or ``all``, both as combiner
        columns and as the feature head's input; ``none`` gives the
        combiners the heads' columns alone (a stacked feature head still
        reads the content columns). ``content`` is the default because
        length, script and layout tell the training sources apart rather
        than attacks from benign text: with them the combiners rank text
        from a source they never saw worse (LODO in benchmarks/RESULTS.md),
        though they score the sources they saw better. ``none`` measured as
        a trade along the default's curve, not a better ranking.
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
    balance : float
        In [0, 1]. 0: every training row counts once. Above 0, the heads and
        the combiners weight each row by ``n ** -balance``, ``n`` being the
        rows of its label from its source (rescaled per label), so that a
        few large sources do not decide what the model learns (see
        :mod:`~gatebench.gate.balance`). It needs ``fit(..., sources=...)``,
        which the harness passes; a fit without sources takes every row to
        come from one source, where the weights are all 1.
    stack_sources : bool
        Hold whole training sources out of each inner cross-fit instead of
        random rows (or ``stack_groups`` clusters), so the combiners learn
        how each head does on a source it was not fitted on; ``fit`` then
        needs ``sources``. Excludes ``stack_groups``.
    hard_rows : float
        0: off. Above 0, the heads are cross-fitted twice: the second time
        (and in the final fits) each row's weight is multiplied by
        ``1 + hard_rows * (1 - p)``, ``p`` being the head's out-of-fold
        probability of the row's label from the first, with each label's
        total weight kept (:func:`~gatebench.gate.training.hard_weights`).
        It doubles the heads' fitting time.
    balance_languages : bool
        Detect each training text's language and rescale the row weights so
        that every language holds the attack share of the whole training set
        (:func:`~gatebench.gate.balance.language_weights`): a language is then
        no evidence of attack on its own. On by default: the non-English text
        public training data offers is mostly translated harmful requests, so
        without it never-seen non-English benign text is flagged far more often
        than English. ``fit_info["language_attack_share"]`` records each
        language's attack share before and after.
    balance_lengths : bool
        The same for power-of-two bands of text length
        (:func:`~gatebench.gate.balance.length_buckets`), so that length alone
        is no evidence of attack either; with ``balance_languages`` both are
        raked together (:func:`~gatebench.gate.balance.rake_weights`).
        ``fit_info["length_attack_share"]`` records each band's share.
    english_heads : sequence of str or None
        Heads whose combiner columns are read only for text the route calls
        English (missing, NaN, for the text the ``multilingual_routed`` head
        reads). The static MiniLM table, its neighbours and the n-gram heads
        are fitted mostly on English; on another language their columns
        carry that language's training mix more than what the text asks,
        which a source never seen does not share. Needs the routed head.
        ``None`` (default): the :data:`ENGLISH_HEADS` among ``heads`` when
        the routed head is one of them, else none; ``()`` turns it off.
    english_scope : {"encoder", "routed"}
        Which routed texts lose the ``english_heads`` columns: those whose
        opening is in a language the multilingual encoder was trained on
        (:data:`~gatebench.gate.multilingual.ENCODER_LANGUAGES`; default), or
        every routed text. Where the encoder does not know the language its
        vector reads the script, and the n-gram heads are all that is left.
    routed_copies : bool
        Fit the combiners on every English training row twice: as it is,
        and as the route would read it in a language the encoder knows (the
        ``english_heads`` columns missing, the routed head's margin present).
        The trees then learn what to make of the multilingual column alone
        from the whole training set, read through the encoder, and not only
        from the non-English training text. Needs ``english_heads``.
    shift_features : bool
        Give the combiners three topic-shift columns
        (:mod:`~gatebench.gate.topic_shift`): how far a text's most distant line or
        sentence reads from the rest of it, how much it stands out, and whether
        it instructs. An instruction planted in a document changes its subject
        where the heads, reading the document as one bag, see nothing.
    combiner_only : sequence of str
        Training sources whose rows only the combiners learn from: the heads
        are cross-fitted and fitted without them, and their columns come from
        the final heads, which never saw them. For constructed rows whose
        lesson lies in the combiner columns (a planted instruction's topic
        shift), not in their words: fitted on such rows, the n-gram heads
        learn the planted request's wording as attack everywhere. Needs
        ``fit(..., sources=...)``. Empty by default.
    data_guard : bool
        Read tool results and documents a second time for instructions
        (:mod:`~gatebench.gate.data_guard`): a text at a data position scores
        the higher of Gate's score and how much one of its lines or sentences
        reads as a request to an assistant. It needs each text's position,
        in ``fit(..., positions=..., valid_positions=...)`` and in
        ``score(texts, positions=...)``; texts scored without positions are
        user turns and the guard does not read them. It learns from the
        benign tool results and documents in training, which the default
        trace holds few of: build it with ``--documents``. Given
        ``fit(..., sources=..., valid_sources=...)``, the benign data texts
        of sources with no attack at a data position are the guard's alone:
        the heads and combiner fit without them. Off by default: measured
        by LODO it gains on two draws of refits and costs little in
        distribution, but it flags benign data that holds requests to its
        reader (an email's "let me know") (benchmarks/RESULTS.md).
    guard_positives : {"requests", "planted", "both"}
        What the data guard learns as an instruction: the training set's user
        turns (the default), the units planted in its attacks at a data
        position, found as those no benign data text holds, or both
        (:class:`~gatebench.gate.data_guard.DataGuard`). Read only with
        ``data_guard=True``.
    segment_negatives : int
        Teach the heads, as benign, up to this many segments of benign
        training tool results and documents: each one's segment that a fast
        char n-gram reader scores highest (:mod:`~gatebench.gate.segment_negatives`),
        so that segment reading raises fewer benign data texts past the
        threshold. Needs ``fit(..., positions=...)``. 0 (the default) adds none.
    segment_reading : bool
        Read tool results and documents a second time, line by line and
        sentence by sentence (:mod:`~gatebench.gate.segment_reading`): a text at
        a data position of three or more segments scores the higher of its
        own score and its most attack-like segment's, each read alone by the
        same cascade. A planted instruction is then not diluted by its
        benign host. Like the data guard, it needs ``score(texts,
        positions=...)``; user turns are never read this way. Nothing is
        learned for it, so a fit is the same with it on or off. On by
        default: on the LODO refits it catches more of the held-out planted
        instructions with no more benign tool results flagged (AgentDojo,
        InjecAgent), or a few more benign documents (BIPIA)
        (benchmarks/RESULTS.md). A model saved without the setting loads
        with it off, and scores as it did.
    """

    name = "gate"
    requires_fit = True
    #: Set only while :meth:`score_permuted` scores: the columns every combiner sees shuffled.
    _shuffle: ColumnShuffle | None = None

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
        sentence_tokens: int = 128,
        encoder: MiniLMEncoder | None = None,
        multilingual_chars: int = 500,
        meta_features: str = "content",
        monotone: bool = False,
        combine: str = "trees",
        stack_groups: int = 0,
        blend_heads: Sequence[str] = ("embed",),
        balance: float = 0.5,
        stack_sources: bool = False,
        hard_rows: float = 0.0,
        balance_languages: bool = True,
        balance_lengths: bool = False,
        english_heads: Sequence[str] | None = None,
        english_scope: str = "encoder",
        routed_copies: bool = False,
        shift_features: bool = False,
        combiner_only: Sequence[str] = (),
        data_guard: bool = False,
        guard_positives: str = "requests",
        segment_negatives: int = 0,
        segment_reading: bool = True,
    ) -> None:
        if english_heads is None:
            routed = RoutedMultilingualHead.name in heads
            english_heads = tuple(h for h in ENGLISH_HEADS if h in heads) if routed else ()
        check_params(
            heads=heads,
            meta_features=meta_features,
            combine=combine,
            band_fraction=band_fraction,
            stack_groups=stack_groups,
            blend_heads=blend_heads,
            balance=balance,
            stack_sources=stack_sources,
            hard_rows=hard_rows,
            english_heads=english_heads,
            english_scope=english_scope,
            routed_copies=routed_copies,
            shift_features=shift_features,
            combiner_only=combiner_only,
            guard_positives=guard_positives,
            segment_negatives=segment_negatives,
        )
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
        self.stats = new_stats()
        self.sentence = bool(sentence)
        self.sentence_tokens = int(sentence_tokens)
        self._encoder = encoder
        self.multilingual_chars = int(multilingual_chars)
        self._multilingual: MultilingualEncoder | None = None
        self._sentence_cache: VectorCache | None = None
        self.sentence_heads: dict[str, Head] = {}
        self.sentence_combiner: Combiner | HeadMean | Blend | None = None
        self.meta_features = meta_features
        self.monotone = bool(monotone)
        self.combine = combine
        self.stack_groups = int(stack_groups)
        self.blend_heads = tuple(blend_heads)
        self.balance = float(balance)
        self.stack_sources = bool(stack_sources)
        self.hard_rows = float(hard_rows)
        self.balance_languages = bool(balance_languages)
        self.balance_lengths = bool(balance_lengths)
        self.english_heads = tuple(english_heads)
        self.english_scope = english_scope
        self.routed_copies = bool(routed_copies)
        self.shift_features = bool(shift_features)
        self.combiner_only = tuple(combiner_only)
        self.data_guard = bool(data_guard)
        self.guard_positives = guard_positives
        self.segment_negatives = int(segment_negatives)
        self.guard: DataGuard | None = None
        self.segment_reading = bool(segment_reading)
        self._feature_cols = feature_columns(meta_features)

    def params(self) -> dict[str, Any]:
        """The switches that decide how this Gate fits and scores (a model directory records them).

        The heads', combiner's and encoders' own parameters are not listed:
        the model directory's state holds each one's.
        """
        return {
            "seed": self.seed,
            "heads": list(self.head_names),
            "english_heads": list(self.english_heads),
            "english_scope": self.english_scope,
            "combine": self.combine,
            "combiner_only": list(self.combiner_only),
            "blend_heads": list(self.blend_heads),
            "meta_features": self.meta_features,
            "monotone": self.monotone,
            "n_folds": self.n_folds,
            "stack_groups": self.stack_groups,
            "stack_sources": self.stack_sources,
            "balance": self.balance,
            "balance_languages": self.balance_languages,
            "balance_lengths": self.balance_lengths,
            "hard_rows": self.hard_rows,
            "routed_copies": self.routed_copies,
            "shift_features": self.shift_features,
            "static_dims": self._embedder.dims if self._embedder is not None else self.static_dims,
            "multilingual_chars": self.multilingual_chars,
            "sentence": self.sentence,
            "band_fraction": self.band_fraction,
            "escalate": self.escalate,
            "judge": self.judge is not None,
            "data_guard": self.data_guard,
            "guard_positives": self.guard_positives,
            "segment_negatives": self.segment_negatives,
            "segment_reading": self.segment_reading,
        }

    # -- construction helpers ---------------------------------------------------------
    def _get_featurizer(self) -> Featurizer:
        if self._featurizer is None:
            if self._embedder is None:
                root = self.cache_dir.parent if self.cache_dir is not None else None
                vectors, tok = distill_static(dims=self.static_dims, cache_dir=root)
                self._embedder = StaticEmbedder(vectors, tok)
            # The shared n-gram views must match what the heads would build alone.
            heads = list(self.heads.values()) or self._make_heads()
            probe = {h.name: h for h in heads if h.view in ("char", "word", "form")}
            char, word, form = probe.get("char"), probe.get("word"), probe.get("form")
            self._featurizer = Featurizer(
                self._embedder,
                char_ngrams=getattr(char, "ngram_range", (2, 5)),
                word_ngrams=getattr(word, "ngram_range", (1, 2)),
                char_features=getattr(char, "n_features", 1 << 20),
                word_features=getattr(word, "n_features", 1 << 20),
                cache_dir=self.cache_dir,
                multilingual=(
                    self._multilingual_encoder()
                    if set(MULTILINGUAL_HEADS) & set(self.head_names)
                    else None
                ),
                route=RoutedMultilingualHead.name in self.head_names,
                shift=self.shift_features,
                form_ngrams=getattr(form, "ngram_range", None),
                form_features=getattr(form, "n_features", 1 << 20),
            )
            self._plain = self._featurizer.without_cache()
        return self._featurizer

    def _multilingual_encoder(self) -> MultilingualEncoder:
        """The one multilingual encoder, shared by the views and the heads.

        A head scored alone (``head.score``) then reads the characters the
        views read, not its class's default cut.
        """
        if self._multilingual is None:
            self._multilingual = MultilingualEncoder(max_chars=self.multilingual_chars)
        return self._multilingual

    def _lend_encoders(self, heads: Sequence[Head]) -> None:
        """Give ``heads`` that embed texts themselves the embedder and encoders Gate reads with.

        Without them a head scored alone has no static embedder, or builds its
        class's default encoder, which cuts texts elsewhere than Gate does
        (``multilingual_chars``, ``sentence_tokens``). MiniLM heads get the
        encoder once it is built (fitting builds it before it makes them;
        loading reads it first).
        """
        minilm = self._encoder
        for head in heads:
            if hasattr(head, "embedder"):
                head.embedder = self._embedder
            if isinstance(head, MultilingualHead):
                head.encoder = self._multilingual_encoder()
            elif isinstance(head, SentenceHead | SentenceNeighbourHead) and minilm is not None:
                head.encoder = minilm

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
        heads = [
            cls(**({"seed": self.seed} | self.head_params.get(name, {})))
            for name, cls in SENTENCE_HEAD_TYPES.items()
        ]
        self._lend_encoders(heads)
        return heads

    def _make_heads(self) -> list[Head]:
        out = []
        for name in self.head_names:
            params = {"seed": self.seed} | self.head_params.get(name, {})
            if name == FeatureHead.name:
                # "content" and "none" keep style out of the whole fast path, this head included.
                params.setdefault("content_only", self.meta_features != "all")
            out.append(HEAD_TYPES[name](**params))
        self._lend_encoders(out)
        return out

    def _combiner_x(self, per_head: list[np.ndarray], views: Views) -> np.ndarray:
        """A combiner's input: head columns and meta-features, or one log-odds column per head.

        ``per_head`` holds the fast heads' :meth:`Head.meta_x` columns, then
        (for the deferred combiner) the MiniLM heads'.
        """
        heads = [*self.heads.values(), *self.sentence_heads.values()]
        x = combiner_input(
            per_head,
            heads,
            views,
            self._feature_cols,
            combine=self.combine,
            english_heads=self.english_heads,
            english_scope=self.english_scope,
        )
        if self._shuffle is None:
            return x
        return self._shuffle.apply(x, self.meta_names(sentence=len(per_head) > len(self.heads)))

    def meta_names(self, *, sentence: bool = False) -> list[str]:
        """Column names of the fast combiner's input (``sentence``: the deferred one's)."""
        heads = [*self.head_names, *(SENTENCE_HEAD_TYPES if sentence else ())]
        return column_names(
            heads, self._feature_cols, combine=self.combine, shift=self.shift_features
        )

    # -- fit ---------------------------------------------------------------------------
    def fit(
        self,
        texts: Sequence[str],
        labels: np.ndarray,
        *,
        valid: Valid = None,
        sources: Sequence[str] | None = None,
        positions: Sequence[str] | None = None,
        valid_positions: Sequence[str] | None = None,
        valid_sources: Sequence[str] | None = None,
    ) -> Self:
        """Fit heads, combiner, band and deferred stage (and the data guard).

        Parameters
        ----------
        texts : sequence of str
            Training texts.
        labels : ndarray
            1 = attack, 0 = benign.
        valid : (texts, labels), optional
            Early-stopping, calibration and band-setting rows. When omitted,
            a stratified 15% of the training rows is held out for them.
        sources : sequence of str, optional
            The source of each training text; ``balance`` and
            ``stack_sources`` need it, and nothing else reads it.
        positions, valid_positions : sequence of str, optional
            Where each training and validation text sits (``user``, ``tool``,
            ``document``; None is a user turn). ``data_guard`` needs them;
            ``valid_positions`` is required with ``positions`` and ``valid``.
        valid_sources : sequence of str, optional
            The source of each validation text. The data guard sets its scale
            with every source's benign data texts weighing the same, so that
            one large corpus of one kind of document does not set it alone.
        """
        # One native thread, so that the fitted model is the same on any core count.
        with one_native_thread():
            return self._fit(
                texts, labels, valid, sources, positions, valid_positions, valid_sources
            )

    def _fit(
        self,
        texts: Sequence[str],
        labels: np.ndarray,
        valid: Valid,
        sources: Sequence[str] | None,
        positions: Sequence[str] | None,
        valid_positions: Sequence[str] | None,
        valid_sources: Sequence[str] | None,
    ) -> Self:
        pos, v_pos = None, None
        v_src = None if valid_sources is None else list(valid_sources)
        if positions is not None:
            pos = check_positions(positions, len(texts), "positions")
            if valid is None:
                # Held out here exactly as fit_gate would, so that the
                # validation rows' positions are known.
                tr, va = holdout_rows(np.asarray(labels), self.seed)
                valid = ([texts[i] for i in va], np.asarray(labels)[va])
                texts, labels, v_pos = [texts[i] for i in tr], np.asarray(labels)[tr], pos[va]
                v_src = None if sources is None else [sources[i] for i in va]
                sources = None if sources is None else [sources[i] for i in tr]
                pos = pos[tr]
            elif valid_positions is None:
                raise ValueError(
                    "fit() got positions for the training texts but no valid_positions for "
                    "the validation texts; pass both, or neither"
                )
            else:
                v_pos = check_positions(valid_positions, len(valid[0]), "valid_positions")
        n_given = len(texts)
        if self.segment_negatives and pos is not None:
            texts, labels, sources, pos = self._with_hard_segments(texts, labels, sources, pos)
        kept = self._guard_only(pos, labels, sources, valid, v_pos, v_src)
        if kept is None:
            fit_gate(self, texts, labels, valid, sources)
        else:
            tr, va = kept
            assert valid is not None
            fit_gate(
                self,
                [texts[i] for i in tr],
                np.asarray(labels)[tr],
                ([valid[0][i] for i in va], np.asarray(valid[1])[va]),
                None if sources is None else [sources[i] for i in tr],
            )
            self.fit_info["guard_only_rows"] = {
                "train": len(texts) - len(tr),
                "valid": len(valid[0]) - len(va),
            }
        if self.segment_negatives:
            self.fit_info["segment_negatives"] = {"added": len(texts) - n_given}
        self.guard = None
        if self.data_guard:
            self._fit_guard(list(texts), np.asarray(labels), pos, valid, v_pos, v_src)
        return self

    def _with_hard_segments(
        self,
        texts: Sequence[str],
        labels: np.ndarray,
        sources: Sequence[str] | None,
        positions: np.ndarray,
    ) -> tuple[list[str], np.ndarray, list[str] | None, np.ndarray]:
        """The training rows with the benign data texts' hardest segments added as benign rows.

        Each added row keeps its text's source and position.
        """
        rows, found = hard_segments(
            texts, labels, positions, limit=self.segment_negatives, seed=self.seed
        )
        return (
            [*texts, *found],
            np.r_[np.asarray(labels), np.zeros(len(found), dtype=np.asarray(labels).dtype)],
            None if sources is None else [*sources, *(sources[i] for i in rows)],
            np.r_[positions, positions[rows]],
        )

    def _guard_only(
        self,
        positions: np.ndarray | None,
        labels: np.ndarray,
        sources: Sequence[str] | None,
        valid: Valid,
        valid_positions: np.ndarray | None,
        valid_sources: list[str] | None,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The training and validation rows the heads and combiner fit on, when the guard
        takes some for itself (:func:`~gatebench.gate.data_guard.guard_only_rows`).

        Should the guard then be left out (too few validation rows to set its
        map), the heads have still fitted without those rows; ``fit_info``
        records both.
        """
        if not self.data_guard or positions is None or sources is None:
            return None
        if valid is None or valid_positions is None or valid_sources is None:
            return None
        attacked = attacked_sources(positions, labels, sources)
        only = guard_only_rows(positions, labels, sources, attacked)
        v_only = guard_only_rows(valid_positions, np.asarray(valid[1]), valid_sources, attacked)
        if not only.any() and not v_only.any():
            return None
        return np.flatnonzero(~only), np.flatnonzero(~v_only)

    def _fit_guard(
        self,
        texts: list[str],
        labels: np.ndarray,
        positions: np.ndarray | None,
        valid: Valid,
        valid_positions: np.ndarray | None,
        valid_sources: list[str] | None,
    ) -> None:
        """Fit the data guard, or record in ``fit_info`` why it was left out."""
        if positions is None or valid is None or valid_positions is None:
            self.fit_info["data_guard"] = {"skipped": "fit() was given no positions"}
            return
        guard = DataGuard(seed=self.seed, positives=self.guard_positives)
        v_texts, v_y = list(valid[0]), np.asarray(valid[1])
        benign = np.flatnonzero(v_y == 0)
        ref = np.flatnonzero(at_data(valid_positions[benign]))
        try:
            info = guard.fit(texts, list(positions), labels)
            scores = run_cascade(self, [v_texts[i] for i in benign])[0]
            reference = [v_texts[i] for i in benign[ref]]
            groups = None if valid_sources is None else [valid_sources[i] for i in benign[ref]]
            info |= guard.match(reference, scores[ref], scores, groups)
        except ValueError as exc:
            # A training set of user turns only (a user's own data) has nothing to
            # teach the guard; Gate is complete without it.
            self.fit_info["data_guard"] = {"skipped": str(exc)}
            return
        finally:
            self.reset_stats()
        self.guard = guard
        self.fit_info["data_guard"] = info

    @staticmethod
    def _data_rows(n: int, positions: Sequence[str] | None) -> np.ndarray | None:
        """The rows at a data position, positions checked once (None: none given)."""
        if positions is None:
            return None
        return np.flatnonzero(at_data(check_positions(positions, n, "positions")))

    def _guarded(self, texts: list[str], scores: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``scores``, raised by the data guard for the texts at the data ``rows``."""
        if self.guard is None or rows.size == 0:
            return scores
        out = np.array(scores, dtype=np.float64)
        out[rows] = self.guard.raise_scores([texts[i] for i in rows], out[rows])
        return out

    def _read_segments(
        self, texts: list[str], scores: np.ndarray, rows: np.ndarray
    ) -> SegmentReading | None:
        """``scores`` raised to the top segment's for the data ``rows`` (None: unread)."""
        if not self.segment_reading or rows.size == 0:
            return None
        t0 = time.perf_counter()
        # Segments are derived texts: they are scored apart from the request counters.
        reading = read_segments(
            lambda pieces: run_cascade(self, pieces, stats=new_stats())[0], texts, scores, rows
        )
        self.stats["segments"] += reading.n_segments
        self.stats["segment_seconds"] += time.perf_counter() - t0
        return reading

    def _sentence_proba(self, views: Views, fast_meta: list[np.ndarray]) -> np.ndarray:
        """The deferred combiner's P(attack) for ``views`` given the fast heads' columns."""
        assert self.sentence_combiner is not None
        self._sentence_views(views)
        s_meta = [h.meta_x(h.x_of(views)) for h in self.sentence_heads.values()]
        return self.sentence_combiner.proba(self._combiner_x([*fast_meta, *s_meta], views))

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
        return self._fast_views(self._plain(pieces, full=False))

    def score_fast(self, texts: Sequence[str]) -> np.ndarray:
        """Fast-path P(attack) only (no deferred stage)."""
        self._check_fitted()  # before the featurizer, which may build the static table
        return self._fast_views(self._get_featurizer()(list(texts), full=False))[0]

    def route(self, p_fast: np.ndarray, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which rows the deferred stage takes: ``(in_band, escalated)``.

        ``in_band``: the fast score lies in the uncertainty band.
        ``escalated``: below the band's top, but an escalation cue fired.
        """
        return route(p_fast, features, self.band, escalate=self.escalate)

    def score(self, texts: Sequence[str], positions: Sequence[str] | None = None) -> np.ndarray:
        """Cascade P(attack): the fast score, or the deferred score for routed rows.

        ``positions`` (one per text: ``user``, ``tool`` or ``document``; None is
        a user turn) lets the data guard read tool results and documents for
        planted instructions; without them every text is a user turn.
        """
        return self.score_report(texts, positions).scores

    def score_stages(
        self, texts: Sequence[str], positions: Sequence[str] | None = None
    ) -> tuple[np.ndarray, list[str], dict[str, float]]:
        """:meth:`score`, plus the stage that decided each text and per-stage milliseconds.

        Returns
        -------
        scores : ndarray
            As :meth:`score`.
        stages : list of str
            ``"fast"`` or ``"deferred"`` per text, or ``"segment"`` for a data
            text whose score one of its segments, read alone, raised.
        stage_ms : dict
            Wall milliseconds of this call in ``fast`` and, when any text went
            there, ``deferred`` (and ``judge``, ``segments``, ``guard``).
        """
        staged = self.score_report(texts, positions)
        return staged.scores, staged.stages, staged.stage_ms

    def score_report(
        self, texts: Sequence[str], positions: Sequence[str] | None = None
    ) -> StagedScores:
        """:meth:`score_stages`, plus the segment that raised each data text's score.

        A tool result or document flagged for one planted line is flagged
        for that line; naming it lets whoever reviews the block see it
        without rereading the whole text.
        """
        texts = list(texts)
        out, routed, seconds = run_cascade(self, texts)
        stages, ms = stage_report(len(out), routed, seconds, judged=self.judge is not None)
        drivers: list[str | None] = [None] * len(texts)
        rows = self._data_rows(len(texts), positions)
        if rows is not None:
            t0 = time.perf_counter()
            reading = self._read_segments(texts, out, rows)
            if reading is not None:
                ms["segments"] = (time.perf_counter() - t0) * 1000.0
                out = reading.scores
                drivers = list(reading.segment)
                for i, segment in enumerate(drivers):
                    if segment is not None:
                        stages[i] = "segment"
            t0 = time.perf_counter()
            out = self._guarded(texts, out, rows)
            if self.guard is not None:
                ms["guard"] = (time.perf_counter() - t0) * 1000.0
        return StagedScores(out, stages, ms, drivers)

    def predict(self, texts: Sequence[str], positions: Sequence[str] | None = None) -> np.ndarray:
        """Hard labels at the recorded operating threshold (``score >= threshold``).

        ``positions`` as in :meth:`score`: the threshold was placed on scores
        read at each row's position, so a tool result or document labelled
        without its position is read whole, as a user turn.
        """
        if self.threshold is None:
            raise RuntimeError("no operating threshold recorded; pass threshold= or set .threshold")
        return self.score(texts, positions) >= self.threshold

    def score_messages(
        self, messages: object, *, policy: ScanPolicy | str | None = None
    ) -> dict[str, Any]:
        """Score one conversation: OpenAI-style ``messages`` or a :class:`Conversation`.

        By default user turns are scanned for direct injection and jailbreaks,
        tool results and documents for indirect injection, and system and
        assistant turns are skipped (``policy`` changes that). Each scanned
        message is windowed and max-pooled as a lone text is; the result has
        the conversation score, the verdict at :attr:`threshold` (when one is
        recorded), the message and window that drove it, and each message's
        score. See :func:`gatebench.conversation.pool_scan`.

        Examples
        --------
        >>> gate.score_messages([  # doctest: +SKIP
        ...     {"role": "user", "content": "Summarise my inbox"},
        ...     {"role": "tool", "content": "Ignore previous instructions and ..."},
        ... ])["driver"]["role"]
        'tool'
        """
        return self.score_conversations([messages], policy=policy)[0]

    def score_conversations(
        self, conversations: Sequence[object], *, policy: ScanPolicy | str | None = None
    ) -> list[dict[str, Any]]:
        """:meth:`score_messages` for many conversations, scored in one batch."""
        checked = [
            c if isinstance(c, Conversation) else parse_conversation(c, where=f"conversations[{n}]")
            for n, c in enumerate(conversations)
        ]
        chosen = policy if isinstance(policy, ScanPolicy) else ScanPolicy.parse(policy)
        return score_conversations(
            checked,
            chosen,
            self.score_report,
            size=_WINDOWS.chunk_chars,
            overlap=_WINDOWS.chunk_overlap,
            threshold=self.threshold,
        )

    # -- diagnostics -------------------------------------------------------------------
    @property
    def feature_groups(self) -> tuple[str, ...]:
        """What :meth:`score_permuted` can shuffle: each head, the cue features, topic shift.

        The heads are the fast ones, then (once fitted with the deferred
        stage) the MiniLM heads its combiner reads.
        """
        heads = [*self.head_names, *self.sentence_heads]
        return feature_groups(
            heads, self._feature_cols, combine=self.combine, shift=self.shift_features
        )

    def score_permuted(
        self,
        texts: Sequence[str],
        group: str,
        rng: np.random.Generator,
        positions: Sequence[str] | None = None,
    ) -> np.ndarray:
        """:meth:`score` with ``group``'s combiner columns shuffled across the rows.

        Every combiner the pass calls (fast, deferred, on windows and
        segments) sees the group's columns shuffled across the rows it reads
        (:class:`~gatebench.gate.permute.ColumnShuffle`); the texts are scored
        in an order drawn from ``rng``, so a combiner's rows are a random draw
        of the texts, not neighbours in the caller's order. A diagnostic: the
        shuffle holds for every call on this model until it returns, so do
        not call it on a model that is serving requests.
        """
        self._check_fitted()
        if positions is not None and len(positions) != len(texts):
            raise ValueError(
                f"positions has {len(positions)} entries for {len(texts)} texts; give one per text"
            )
        if group not in self.feature_groups:
            raise ValueError(
                f"group={group!r} is not one of this Gate's feature groups "
                f"{list(self.feature_groups)}; pick one of them"
            )
        texts = list(texts)
        order = rng.permutation(len(texts))
        where = None if positions is None else [positions[i] for i in order]
        columns = group_columns(group, self._feature_cols, combine=self.combine)
        self._shuffle = ColumnShuffle(columns, int(rng.integers(2**63 - 1)))
        try:
            shuffled = self.score([texts[i] for i in order], where)
        finally:
            self._shuffle = None
        out = np.empty_like(shuffled)
        out[order] = shuffled
        return out

    def head_scores(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Each head's calibrated P(attack) (for permutation importance and plots)."""
        self._check_fitted()
        views = self._get_featurizer()(list(texts))
        if self.sentence_heads:
            self._sentence_views(views)
        heads = {**self.heads, **self.sentence_heads}
        return {n: h.proba_from_decision(h.decision_x(h.x_of(views))) for n, h in heads.items()}

    def nearest_training(
        self, texts: Sequence[str], k: int = 5
    ) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
        """The ``k`` nearest training attacks and benign texts of each text, by the neighbour head.

        Returns ``(banks, read)``. ``banks`` is ``[(similarity, text key) of
        attacks, (similarity, text key) of benign texts]``, each array of
        shape ``(len(texts), min(k, bank size))``, nearest first: the training
        text a score sits next to, in the static embedding the fast path
        reads. Text keys are :func:`gatebench.gate.views.text_keys` of the
        training rows, so a caller holding the training trace can name them.
        ``read`` marks the texts whose score reads the neighbour head at all:
        for text the route reads by meaning, the English heads' columns are
        missing (``english_heads``), and its neighbours are evidence only of
        what the text is near, not of why it scored as it did.

        Raises
        ------
        ValueError
            When the model has no neighbour head (``heads`` without it).
        """
        self._check_fitted()
        head = self.heads.get(NeighbourHead.name)
        if not isinstance(head, NeighbourHead):
            raise ValueError(
                f"this Gate has no {NeighbourHead.name!r} head (heads={list(self.heads)}), so it "
                "keeps no training texts to search; train one with the default heads"
            )
        texts = list(texts)
        feat = self._get_featurizer()
        emb = feat.static(texts).reshape(len(texts), feat.embedder.dims)
        read = np.ones(len(texts), dtype=bool)
        flags = feat.route_flags(texts) if NeighbourHead.name in self.english_heads else None
        if flags is not None:
            column = 1 if self.english_scope == "encoder" else 0
            read = ~(flags[:, column] > 0.5)
        return head.nearest(emb, k), read

    def head_predictions(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Each head's hard prediction at its own validation-chosen threshold (Cohen's kappa)."""
        return {n: p >= self.head_thresholds[n] for n, p in self.head_scores(texts).items()}

    def exit_fractions(self) -> dict[str, float]:
        """Share of scored requests that exited fast, or were deferred by band or by cue."""
        return exit_fractions(self.stats)

    def reset_stats(self) -> None:
        """Zero the exit and latency counters."""
        self.stats = new_stats()

    def warm(self) -> Self:
        """Load now what the first scoring call would load, so no request waits for it.

        The route's language identifier and multilingual encoder load lazily,
        so that a caller who never scores non-English text never pays for the
        encoder (about a second to load on two cores), and the fast path
        builds its lookups on first use (the neighbour banks' text keys), and
        the deferred stage's MiniLM graph runs slower the first time. A service
        calls this at start instead; its first request otherwise took about
        half a second. Scores and counters are untouched.
        """
        self._check_fitted()
        feat = self._get_featurizer()
        # Long enough for the language check to read it: a shorter text is
        # answered "undetermined" without loading the identifier.
        feat.route_flags([_WARM_TEXT])
        if feat.multilingual is not None:
            feat.multilingual.encode(["warm"])
        # The fast path and the deferred reading, outside the cascade, which counts
        # requests: the MiniLM graph's first run is slower than the rest.
        views = feat([_WARM_TEXT], full=False)
        _, per_head = self._fast_meta(views)
        if self.sentence_combiner is not None:
            self._sentence_proba(views, per_head)
        return self

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
        return open_gate(Path(path), Gate)
