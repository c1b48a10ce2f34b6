"""Instructions inside data: a second reading of tool results and documents.

A user turn is a request by nature, so Gate asks of it whether the request is
an attack. A tool result or a retrieved document is data: an instruction
inside it is out of place whatever it asks ("Write a poem about ...", "Please
grant access to my friend Amy"), and that is what an indirect injection is.
Gate's heads learned what attacks say, mostly from user turns, so they pass
planted instructions that ask for nothing harmful.

The guard learns the other question: does a line or sentence read as a
request to an assistant? Its positives are the training set's user turns,
every one a request whatever its label; its negatives are the lines and
sentences of the benign tool results and documents (worked solutions,
reports, code, records). A text at a data position scores the highest of its
units. That score is moved onto Gate's log-odds scale by a linear map set on
the validation set, and a data text keeps the higher of the two: the guard
can only raise a score.

The map is anchored at the tail, where the operating threshold lies: the
guard's 99th percentile of benign data texts is put on Gate's 99th
percentile of all benign texts, so that near a threshold at FPR <= 1% the
guard flags about as many benign data texts as Gate flags benign texts. The
slope matches the two scores' spreads on benign data texts. Anchoring the
means instead (tried first) let the map fall wherever the validation set's
documents happened to put them: on one draw of refits the guard caught
most of a held-out source's planted instructions, on the next none of them.

What counts as an instruction can be learned from the attacks themselves
(``positives="planted"`` or ``"both"``). Of each training attack at a data
position, the units that no benign data text holds are what was planted in
it: a source that pairs each attacked document with its clean original
leaves the planted sentence alone. Where a host is unique to its attack,
more than one unit is left, and the most request-like of them, by a first
reading of requests against data, is taken. A user turn asks for something
by nature; a planted unit asks an assistant for something from inside data,
which is the case the guard exists for, and which an e-mail asking its human
reader for a report is not.

Documents from a source with no attack at a data position (worked
solutions, threat reports, code) teach the guard only: Gate's heads and
combiner fit without them (:func:`guard_only_rows`). Given to the heads they
teach that document-like text is benign, with nothing planted to learn from.

Each source of those data texts weighs the same in the percentile and the
spreads: a corpus of one kind of document (thousands of worked maths
solutions) would otherwise set a map that holds for that kind and flags the
others. A source with only a few rows weighs what its rows do, so that one
stray document cannot set a fifth of the map.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gatebench.gate.heads import CharHead, sigmoid
from gatebench.types import DATA_POSITIONS, POSITIONS

__all__ = [
    "GUARD_POSITIVES",
    "DataGuard",
    "at_data",
    "attacked_sources",
    "check_positions",
    "guard_only_rows",
    "planted_candidates",
    "source_weights",
    "tail_map",
    "text_units",
]

#: Shorter units are field names, numbers and list markers, not sentences.
MIN_UNIT_CHARS = 12
#: User turns longer than this carry context besides their request.
MAX_REQUEST_CHARS = 400
#: At most this many user turns are read as requests (drawn with the seed).
MAX_REQUESTS = 20_000
#: Below this many benign data rows in validation the map is not trusted.
MIN_MATCH_ROWS = 30
#: Where the map is anchored: one minus the FPR the operating point is held to.
TAIL_QUANTILE = 0.99
#: What the guard learns as an instruction: user turns, planted units, or both.
GUARD_POSITIVES = ("requests", "planted", "both")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# Quotes, brackets and separators that serialised data wraps sentences in.
_EDGES = " \t\"',{}[]"


def check_positions(positions: Sequence[str | None], n: int, name: str) -> np.ndarray:
    """``positions`` as an array of position names, None read as ``user``.

    Raises
    ------
    ValueError
        There is not one position per text, or one is not a position; the
        message names the parameter, the row and the accepted values.
    """
    pos = np.array(["user" if p is None else str(p) for p in positions], dtype=object)
    if len(pos) != n:
        raise ValueError(f"{name}: got {len(pos)} positions for {n} texts; give one per text")
    allowed = list(POSITIONS)
    bad = np.flatnonzero(~np.isin(pos, allowed))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"{name}[{i}] is {positions[i]!r}, not a position; use one of {allowed} "
            "(None is a user turn)"
        )
    return pos


def guard_only_rows(
    positions: np.ndarray, labels: np.ndarray, sources: Sequence[str], attacked: set[str]
) -> np.ndarray:
    """Mask of the data texts that only the guard should learn from.

    They are the benign tool results and documents of sources outside
    ``attacked`` (the sources with an attack at a data position). A source of
    documents with no injected counterpart (worked solutions, threat reports,
    code) teaches a classifier only that long, document-like text is benign:
    a shortcut of style that lowers the scores of injected tool outputs it
    never saw. What such documents do show is how benign data reads, which is
    the guard's question.
    """
    src = np.asarray(sources, dtype=object)
    return at_data(positions) & (np.asarray(labels) == 0) & ~np.isin(src, sorted(attacked))


def attacked_sources(positions: np.ndarray, labels: np.ndarray, sources: Sequence[str]) -> set[str]:
    """The sources with at least one attack at a data position."""
    attacks = at_data(positions) & (np.asarray(labels) == 1)
    return {str(s) for s in np.asarray(sources, dtype=object)[attacks]}


def at_data(positions: Sequence[str] | np.ndarray) -> np.ndarray:
    """Mask of the positions that are data (a tool result or a document)."""
    return np.isin(np.asarray(positions, dtype=object), list(DATA_POSITIONS))


def text_units(text: str) -> list[str]:
    """The lines and sentences of ``text`` long enough to carry a request.

    A text with none (one short line) is its own single unit.
    """
    units = [
        unit
        for line in text.split("\n")
        for piece in _SENTENCE_END.split(line)
        if len(unit := piece.strip(_EDGES)) >= MIN_UNIT_CHARS
    ]
    return units or [text]


def _unit_key(unit: str) -> str:
    return " ".join(unit.lower().split())


def planted_candidates(
    texts: Sequence[str], positions: Sequence[str], labels: np.ndarray
) -> list[list[str]]:
    """For each attack at a data position, its units that no benign data text holds.

    Rows whose every unit also occurs in a benign data text give an empty
    list: nothing in them can be told apart from data. Units are compared
    case- and whitespace-blind.
    """
    is_data = at_data(positions)
    y = np.asarray(labels)
    benign_rows = np.flatnonzero(is_data & (y == 0))
    benign = {_unit_key(u) for i in benign_rows for u in text_units(texts[int(i)])}
    return [
        [u for u in text_units(texts[int(i)]) if _unit_key(u) not in benign]
        for i in np.flatnonzero(is_data & (y == 1))
    ]


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(np.asarray(p, dtype=np.float64), 1e-7, 1 - 1e-7)
    return np.asarray(np.log(q) - np.log1p(-q))


def _spread(values: np.ndarray, weight: np.ndarray) -> float:
    """Weighted standard deviation."""
    mean = np.average(values, weights=weight)
    return float(np.sqrt(np.average((values - mean) ** 2, weights=weight)))


def source_weights(groups: Sequence[str]) -> np.ndarray:
    """Each text's weight when every group (source) weighs the same.

    A group of fewer than ``MIN_MATCH_ROWS`` texts weighs what that many
    texts' share would: one stray document must not hold a whole source's
    share of the map.
    """
    _, which, counts = np.unique(np.asarray(groups), return_inverse=True, return_counts=True)
    return np.asarray(1.0 / np.maximum(counts[which], MIN_MATCH_ROWS))


def tail_map(
    guard: np.ndarray,
    gate: np.ndarray,
    benign: np.ndarray,
    weight: np.ndarray,
    guard_quantile: float = TAIL_QUANTILE,
) -> tuple[float, float, float]:
    """The linear map (guard anchor, slope, Gate anchor) from log-odds on validation rows.

    ``guard`` and ``gate`` are the two log-odds of the benign data texts
    (weighted by ``weight``), ``benign`` Gate's log-odds of every benign text.
    The guard's ``guard_quantile`` lands on Gate's ``TAIL_QUANTILE``.
    """
    anchor = np.quantile(guard, guard_quantile, weights=weight, method="inverted_cdf")
    slope = _spread(gate, weight) / max(_spread(guard, weight), 1e-6)
    return float(anchor), slope, float(np.quantile(benign, TAIL_QUANTILE))


class DataGuard:
    """Scores how much a data text holds an instruction, on Gate's scale.

    Parameters
    ----------
    seed : int
        Seeds the draw of user turns and the head's SGD.
    positives : {"requests", "planted", "both"}
        What the guard learns as an instruction: the training set's user
        turns, the units planted in its attacks at a data position (see the
        module docstring), or both, each then weighing half the class.
    """

    def __init__(self, *, seed: int = 0, positives: str = "requests") -> None:
        if positives not in GUARD_POSITIVES:
            raise ValueError(f"positives={positives!r}: choose one of {list(GUARD_POSITIVES)}")
        self.seed = int(seed)
        self.positives = positives
        self.head = CharHead(seed=self.seed)
        #: (guard anchor, slope, Gate anchor): guard log-odds u map to (u - a) * slope + b.
        self.scale: tuple[float, float, float] | None = None

    def fit(
        self,
        texts: Sequence[str],
        positions: Sequence[str],
        labels: np.ndarray,
    ) -> dict[str, Any]:
        """Fit the instruction reader on user turns or planted units against benign data units.

        Returns what it was fitted on, for ``fit_info``; raises ``ValueError``
        when the training set has no user turn or no benign data text.
        """
        is_data = at_data(positions)
        lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
        requests = np.flatnonzero(~is_data & (lengths <= MAX_REQUEST_CHARS))
        benign_data = np.flatnonzero(is_data & (np.asarray(labels) == 0))
        if requests.size == 0 or benign_data.size == 0:
            raise ValueError(
                f"data_guard needs user turns and benign tool results or documents in training; "
                f"got {requests.size} user turns of at most {MAX_REQUEST_CHARS} characters and "
                f"{benign_data.size} benign data texts. Add such rows or pass data_guard=false."
            )
        rng = np.random.default_rng(self.seed)
        if requests.size > MAX_REQUESTS:
            requests = np.sort(rng.choice(requests, size=MAX_REQUESTS, replace=False))
        asks = [texts[int(i)] for i in requests]
        negatives = [u for i in benign_data for u in text_units(texts[int(i)])]
        self._fit_units([asks], negatives)
        info: dict[str, Any] = {"requests": len(asks), "data_units": len(negatives)}
        if self.positives == "requests":
            return info
        planted = self._pick_planted(planted_candidates(texts, positions, labels))
        if not planted:
            if self.positives == "planted":
                raise ValueError(
                    "data_guard with guard_positives='planted' needs attacks at a data position "
                    "with a unit no benign data text holds; the training set has none. Pass "
                    "guard_positives='requests' or add such rows."
                )
            return info | {"planted": 0}
        groups = [planted] if self.positives == "planted" else [asks, planted]
        self.head = CharHead(seed=self.seed)
        self._fit_units(groups, negatives)
        return info | {"planted": len(planted)}

    def _fit_units(self, positive_groups: list[list[str]], negatives: list[str]) -> None:
        """Fit the head: the negatives weigh half, each group of positives an equal share."""
        positives = [u for group in positive_groups for u in group]
        y = np.r_[np.ones(len(positives)), np.zeros(len(negatives))].astype(np.int64)
        # Each class weighs half, however many units the documents split into.
        share = np.concatenate(
            [np.full(len(g), len(y) / (2 * len(positive_groups) * len(g))) for g in positive_groups]
        )
        weight = np.r_[share, np.full(len(negatives), len(y) / (2 * len(negatives)))]
        self.head.fit_x(self.head.represent(positives + negatives), y, weight)

    def _pick_planted(self, candidates: list[list[str]]) -> list[str]:
        """Each row's most request-like candidate unit, read by the head as fitted so far."""
        rows = [units for units in candidates if units]
        if not rows:
            return []
        flat = [u for units in rows for u in units]
        decision = self.head.decision_x(self.head.represent(flat))
        sizes = np.array([len(units) for units in rows])
        starts = np.cumsum(sizes) - sizes
        return [
            rows[k][int(np.argmax(decision[s : s + n]))]
            for k, (s, n) in enumerate(zip(starts, sizes, strict=True))
        ]

    def unit_logits(self, texts: Sequence[str]) -> np.ndarray:
        """The highest request log-odds among each text's units."""
        units = [text_units(t) for t in texts]
        flat = [u for us in units for u in us]
        if not flat:
            return np.empty(0)
        decision = self.head.decision_x(self.head.represent(flat))
        sizes = np.array([len(us) for us in units])
        return np.maximum.reduceat(decision, np.cumsum(sizes) - sizes)

    def match(
        self,
        texts: Sequence[str],
        gate_scores: np.ndarray,
        benign_scores: np.ndarray,
        groups: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Set the map onto Gate's scale from validation rows.

        Parameters
        ----------
        texts : sequence of str
            The benign tool results and documents among the validation rows.
        gate_scores : ndarray
            Gate's scores of ``texts``.
        benign_scores : ndarray
            Gate's scores of every benign validation text, whatever its position:
            their 99th percentile is about where the operating threshold will lie.
        groups : sequence of str, optional
            Each text's source: every group gets the same total weight in the
            percentile and spreads, a group of fewer than ``MIN_MATCH_ROWS``
            texts the weight of that many texts' share. None weighs texts alike.
        """
        if len(texts) < MIN_MATCH_ROWS:
            raise ValueError(
                f"data_guard needs at least {MIN_MATCH_ROWS} benign tool results or documents "
                f"among the validation rows to set its scale; got {len(texts)}. Add such rows "
                "or pass data_guard=false."
            )
        weight = np.ones(len(texts)) if groups is None else source_weights(groups)
        self.scale = tail_map(
            self.unit_logits(texts), _logit(gate_scores), _logit(benign_scores), weight
        )
        n_groups = None if groups is None else len(set(groups))
        return {"match_rows": len(texts), "match_groups": n_groups, "scale": list(self.scale)}

    def raise_scores(self, texts: Sequence[str], gate_scores: np.ndarray) -> np.ndarray:
        """Gate's scores of data texts, raised where the guard reads an instruction."""
        if self.scale is None:
            raise RuntimeError("DataGuard is not fitted: call fit() and match() first")
        anchor, slope, gate_anchor = self.scale
        moved = (self.unit_logits(texts) - anchor) * slope + gate_anchor
        return np.asarray(sigmoid(np.maximum(_logit(gate_scores), moved)))

    def get_state(self) -> dict[str, Any]:
        """The head's state (see :meth:`Head.get_state`) and the map, for the model directory."""
        if self.scale is None:
            raise RuntimeError("DataGuard is not fitted: nothing to save")
        return {**self.head.get_state(), "guard_map": list(self.scale)}

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> DataGuard:
        """Rebuild a fitted guard from :meth:`get_state`.

        A state saved with the means matched (``guard_scale``: guard mean and
        spread, Gate mean and spread) is read as the same linear map.
        """
        rest = {k: v for k, v in state.items() if k not in ("guard_map", "guard_scale")}
        guard = cls(seed=int(rest.get("seed", 0)))
        guard.head = CharHead.from_state(rest)
        if "guard_map" in state:
            a, slope, b = (float(v) for v in state["guard_map"])
        else:
            g_mean, g_std, s_mean, s_std = (float(v) for v in state["guard_scale"])
            a, slope, b = g_mean, s_std / g_std, s_mean
        guard.scale = (a, slope, b)
        return guard
