"""Constructed training rows: one persona frame, once before a benign and once before an attack.

Benign prompts that open with a persona ("I want you to act as a travel
guide", "You are a Linux terminal") are flagged far more often than other
benign prompts on sources a model never saw, because in the training data
such openings come mostly with jailbreaks. The frame itself says nothing
about intent: what follows it does. A pair here is one persona frame, taken
from a benign training-corpus prompt, written before a benign request of the
frame's own source (label 0) and before a short training-corpus attack
(label 1). Across the pairs every frame carries both labels, so only the
request separates them: the counterfactual that says "a persona frame alone
does not make a prompt an attack, and does not excuse one".

A frame is the first sentence (at most ``MAX_FRAME_CHARS``) of a benign,
single-chunk English training prompt that addresses the model as a persona
(:data:`PERSONA_RE`) and holds none of the learned trigger words of
:mod:`gatebench.twins`, so that no jailbreak opening mislabelled benign in a
weakly labelled corpus becomes a frame. Only training corpora are read,
after the trace has dropped training rows that share a group with an
evaluation row. A benign row's parent is its benign host, of the frame's own
source; an attack row's parent is its attack host; every row's id names its
frame's source, so a refit that holds out the source of either leaves the
row out (:func:`gatebench.constructed.hosted_by`). The draw is seeded by a
named child of the trace seed: the same trace gives the same rows.

Measured, the pairs did not do what they were built for: never-seen persona
openings were flagged as often as before, and more where the frames' own
source was held out (benchmarks/RESULTS.md). They are off by default.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from gatebench.augment import constructed_row
from gatebench.seeding import child_sequence
from gatebench.twins import TRIGGER_WORDS, _ranked_words, loaded_english

__all__ = [
    "PERSONA_HALVES",
    "PERSONA_RE",
    "PERSONA_SOURCE",
    "persona_frames",
    "persona_pairs",
]

PERSONA_SOURCE = "persona-twins"
PERSONA_DESCRIPTION = "one persona frame before a benign request and before a training attack"
MAX_FRAME_CHARS = 200
MIN_HOST_CHARS = 20
MAX_BENIGN_HOST_CHARS = 600
MAX_ATTACK_HOST_CHARS = 300
#: Which halves of each pair are built, and so how many rows a pair gives: ``both``, or
#: ``benign`` alone (the frame before a benign request, a twin of the kind
#: :mod:`gatebench.twins` makes).
PERSONA_HALVES = {"both": 2, "benign": 1}
#: A sentence that casts the model as someone: the construction, not a topic.
PERSONA_RE = re.compile(
    r"\b(?:act(?:ing)? as|you are (?:a|an|my|the)|you're (?:a|an|my|the)"
    r"|pretend (?:to be|you are|you're|that you are)|role-?play (?:as|a)"
    r"|i want you to|imagine (?:you are|you're))\b",
    re.IGNORECASE,
)
_SENTENCE_RE = re.compile(r"(?<=[.!?\n])\s+")
_WORD_RE = re.compile(r"[a-z]{3,}")


def persona_frames(frame: pd.DataFrame, trigger: set[str]) -> pd.DataFrame:
    """Persona frames of the benign English training rows: ``source`` and ``frame``.

    Parameters
    ----------
    frame : DataFrame
        The trace frame; only its loaded, single-chunk English training rows are read.
    trigger : set of str
        Learned trigger words; a sentence holding one is not a frame.
    """
    return _frames(loaded_english(frame), trigger)


def _frames(rows: pd.DataFrame, trigger: set[str]) -> pd.DataFrame:
    """:func:`persona_frames` of rows already narrowed to the loaded English training rows."""
    out = []
    for _, row in rows[rows["label"] == 0].iterrows():
        first = _SENTENCE_RE.split(row["text"].strip(), maxsplit=1)[0].strip()
        if len(first) > MAX_FRAME_CHARS or not PERSONA_RE.search(first):
            continue
        if set(_WORD_RE.findall(first.lower())) & trigger:
            continue
        out.append((row["source"], first))
    frames = pd.DataFrame(out, columns=["source", "frame"])
    return frames.drop_duplicates("frame").reset_index(drop=True)


def persona_pairs(frame: pd.DataFrame, *, n: int, seed: int, halves: str = "both") -> pd.DataFrame:
    """Up to ``n`` pairs (``2 n`` rows), in the trace frame's columns (role ``training``).

    Parameters
    ----------
    frame : DataFrame
        The trace frame after the training-overlap filter.
    n : int
        Pairs to construct; fewer when no source holds both a frame and a benign
        host, or when two draws give the same text.
    seed : int
        Trace root seed.
    halves : str
        ``both``, or ``benign`` for the benign rows alone; the draws are the
        same, so the benign rows are those ``both`` gives.
    """
    columns = list(frame.columns)
    if n <= 0:
        return pd.DataFrame(columns=columns)
    rows = loaded_english(frame)
    # The lexicon of :func:`gatebench.twins.trigger_words`, learned before any twin existed.
    frames = _frames(rows, set(_ranked_words(rows, TRIGGER_WORDS)))
    lengths = rows["text"].str.len()
    benign = rows[(rows["label"] == 0) & lengths.between(MIN_HOST_CHARS, MAX_BENIGN_HOST_CHARS)]
    benign = benign[~benign["text"].str.contains(PERSONA_RE)]
    attacks = rows[(rows["label"] == 1) & lengths.between(MIN_HOST_CHARS, MAX_ATTACK_HOST_CHARS)]
    frames = frames[frames["source"].isin(set(benign["source"]))].reset_index(drop=True)
    if frames.empty or attacks.empty:
        return pd.DataFrame(columns=columns)
    by_source = {s: g.reset_index(drop=True) for s, g in benign.groupby("source", sort=True)}
    attacks = attacks.reset_index(drop=True)
    rng = np.random.default_rng(child_sequence(seed, "augment", PERSONA_SOURCE))
    out = []
    for i in range(n):
        f = frames.iloc[int(rng.integers(0, len(frames)))]
        hosts = by_source[f["source"]]
        host = hosts.iloc[int(rng.integers(0, len(hosts)))]
        attack = attacks.iloc[int(rng.integers(0, len(attacks)))]
        for tag, h in (("b", host), ("a", attack))[: PERSONA_HALVES[halves]]:
            text = f"{f['frame']} {h['text'].strip()}"
            sid = f"{PERSONA_SOURCE}:{f['source']}:{i}{tag}"
            out.append(constructed_row(sid, h, text, int(h["label"]), h["position"]))
    return pd.DataFrame(out, columns=columns).drop_duplicates("text_sha256").reset_index(drop=True)
