"""Constructed training rows: benign counterfactual twins that carry trigger words.

Over-defence sets (benign prompts that mention "ignore", "bypass", "explicit"
and the like) are where a detector that learned words instead of intent goes
wrong: every word that is far more common in attacks than in benign text
becomes evidence on its own. A twin is a benign training prompt with one to
``MAX_WORDS_PER_TWIN`` such words inserted at word boundaries. It stays
benign, and its host stays in the trace beside it, so the pair differs only
by the trigger words: the minimal counterfactual that says "this word alone
does not make a prompt an attack". The inserted words read oddly in place;
the lesson is for the heads that score words and character n-grams, which
are the ones that learn single-word shortcuts.

The trigger words are learned, not listed: the ``TRIGGER_WORDS`` English
words with the highest smoothed log-odds of appearing in a training-corpus
attack rather than a training-corpus benign prompt, among words in at least
``MIN_ATTACK_ROWS`` attacks. Only English training-corpus rows are read, for
the lexicon and the hosts alike: the other languages hold too few rows for a
stable lexicon, and a word of one language inserted into another would teach
a language shortcut instead. Like :mod:`gatebench.augment`, only training
corpora are read, after the trace has dropped training rows that share a
group with an evaluation row, so no evaluated text shapes a twin. Each twin's
parent is its host, so the two never split across folds. The draw is seeded
by a named child of the trace seed: the same trace gives the same rows.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pandas as pd

from gatebench.augment import constructed_row
from gatebench.seeding import child_sequence

__all__ = ["TWINS_SOURCE", "benign_twins", "loaded_english", "trigger_words"]

TWINS_SOURCE = "benign-twins"
TWINS_DESCRIPTION = "benign English training prompts with learned trigger words inserted"
TRIGGER_WORDS = 200
MIN_ATTACK_ROWS = 15
MAX_WORDS_PER_TWIN = 3
# Hosts short enough that an inserted word is a visible share of the prompt.
MIN_HOST_CHARS = 20
MAX_HOST_CHARS = 600
_WORD_RE = re.compile(r"[a-z]{3,}")
_GAP_RE = re.compile(r"\s+")


def _english_training(frame: pd.DataFrame) -> pd.DataFrame:
    """Single-chunk English training-corpus prompts (the only rows twins read).

    Prompts are user turns: the corpora's documents (worked solutions, reports)
    are text a model reads, and a trigger word in one teaches nothing about the
    requests that over-defence sets hold.
    """
    keep = (
        (frame["role"] == "training")
        & (frame["n_chunks"] == 1)
        & (frame["language"] == "en")
        & (frame["position"].fillna("user") == "user")
    )
    return frame[keep]


def loaded_english(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`_english_training` rows that no twin is: the hosts other constructed rows read."""
    rows = _english_training(frame)
    return rows[rows["source"] != TWINS_SOURCE]


def trigger_words(frame: pd.DataFrame, k: int = TRIGGER_WORDS) -> list[str]:
    """The ``k`` words most indicative of an attack in the English training corpora.

    Parameters
    ----------
    frame : DataFrame
        The trace frame (``text``, ``label``, ``role``, ``language``, ``n_chunks``).
    k : int
        Words returned.

    Returns
    -------
    list of str
        Lower-case words, highest add-one-smoothed log-odds of appearing in an
        attack rather than a benign prompt first; ties broken alphabetically,
        so the list depends on the rows only.
    """
    return _ranked_words(_english_training(frame), k)


def _ranked_words(rows: pd.DataFrame, k: int) -> list[str]:
    """:func:`trigger_words` of rows already narrowed to the English training corpora."""
    in_attacks: Counter[str] = Counter()
    in_benign: Counter[str] = Counter()
    for text, label in zip(rows["text"], rows["label"], strict=True):
        (in_attacks if label == 1 else in_benign).update(set(_WORD_RE.findall(text.lower())))
    n_attack, n_benign = int((rows["label"] == 1).sum()), int((rows["label"] == 0).sum())
    score = {
        w: np.log((c + 1) / (n_attack + 2)) - np.log((in_benign[w] + 1) / (n_benign + 2))
        for w, c in in_attacks.items()
        if c >= MIN_ATTACK_ROWS
    }
    return sorted((w for w in score if score[w] > 0), key=lambda w: (-score[w], w))[:k]


def benign_twins(frame: pd.DataFrame, *, n: int, seed: int) -> pd.DataFrame:
    """Up to ``n`` benign twins, in the trace frame's columns (role ``training``).

    Parameters
    ----------
    frame : DataFrame
        The trace frame after the training-overlap filter.
    n : int
        Twins to construct; fewer when the corpora hold no host or no trigger
        word, or when two draws give the same text.
    seed : int
        Trace root seed.

    Returns
    -------
    DataFrame
        One single-chunk benign row per twin (empty when ``n`` is 0).
    """
    columns = list(frame.columns)
    if n <= 0:
        return pd.DataFrame(columns=columns)
    rows = _english_training(frame)
    words = _ranked_words(rows, TRIGGER_WORDS)
    hosts = rows[
        (rows["label"] == 0) & rows["text"].str.len().between(MIN_HOST_CHARS, MAX_HOST_CHARS)
    ].reset_index(drop=True)
    if not words or hosts.empty:
        return pd.DataFrame(columns=columns)
    rng = np.random.default_rng(child_sequence(seed, "augment", TWINS_SOURCE))
    host_idx = rng.integers(0, len(hosts), size=n)
    n_words = rng.integers(1, MAX_WORDS_PER_TWIN + 1, size=n)
    out = []
    for i in range(n):
        host = hosts.iloc[host_idx[i]]
        picked = [words[j] for j in rng.choice(len(words), size=n_words[i], replace=False)]
        text = _insert(host["text"], picked, rng)
        out.append(constructed_row(f"{TWINS_SOURCE}:{i}", host, text, 0, host["position"]))
    return pd.DataFrame(out, columns=columns).drop_duplicates("text_sha256").reset_index(drop=True)


def _insert(text: str, words: list[str], rng: np.random.Generator) -> str:
    """``text`` with each of ``words`` placed at a random gap between its words."""
    for word in words:
        gaps = [0, *(m.start() for m in _GAP_RE.finditer(text)), len(text)]
        at = gaps[int(rng.integers(0, len(gaps)))]
        text = f"{text[:at].rstrip()} {word} {text[at:].lstrip()}".strip()
    return text
