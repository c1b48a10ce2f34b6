"""Constructed training rows: a training attack quoted inside a benign question about it.

Four in five of the benign prompts Gate flags on sources it never saw sit
next to harmful requests on the same topic (benchmarks/RESULTS.md, "What
never-seen false alarms sit next to"): a question about avoiding scams beside
a request to run one. The training data holds harmful topics almost only in
attacks, so the heads learn the topic. A quoted row puts a short English
training-corpus attack, verbatim, inside a question a moderator, a parent or
a security team would ask about it ("How do security teams detect and block
prompts such as "..."?"), labelled benign: the counterfactual that says "the
harmful text, reported rather than requested, is not an attack". The frames
are fixed (:data:`QUOTE_FRAMES`), written before any measurement.

Only training corpora are read, after the trace has dropped training rows
that share a group with an evaluation row. Each row's parent is its host
attack, so the two never split across folds, and a refit that holds out the
host's source leaves the row out (:func:`gatebench.constructed.hosted_by`).
The draw is seeded by a named child of the trace seed: the same trace gives
the same rows. Measured by LODO on two draws, the rows lowered the harm
benchmarks' ranking against never-seen benign text, and the shipped model
gained less recall at its threshold than two draws differ by, so they are off
by default (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gatebench.augment import constructed_row
from gatebench.seeding import child_sequence
from gatebench.twins import loaded_english

__all__ = ["QUOTES_DESCRIPTION", "QUOTES_SOURCE", "QUOTE_FRAMES", "quote_twins"]

QUOTES_SOURCE = "quote-twins"
QUOTES_DESCRIPTION = "a training attack quoted inside a benign question about it"
QUOTE_FRAMES = (
    'How can I protect myself from someone who asks: "{a}"?',
    'I am writing a safety policy. Why should an assistant refuse this request: "{a}"',
    'As a content moderator, how should I handle a user message like "{a}"?',
    'Explain why the following request is harmful, without answering it: "{a}"',
    'How do security teams detect and block prompts such as "{a}"?',
    'Our classifier flagged this message: "{a}". Which policy does it break?',
    'What should I do if I receive a message that says: "{a}"?',
    'My teenager searched for "{a}". How do I talk to them about it?',
)
MIN_HOST_CHARS = 20
MAX_HOST_CHARS = 300


def quote_twins(frame: pd.DataFrame, *, n: int, seed: int) -> pd.DataFrame:
    """Up to ``n`` benign rows, each a training attack inside a frame, in the trace's columns.

    Parameters
    ----------
    frame : DataFrame
        The trace frame after the training-overlap filter; its loaded,
        single-chunk English training attacks of 20-300 characters are the hosts.
    n : int
        Rows to construct; fewer when two draws give the same text.
    seed : int
        Trace root seed.
    """
    columns = list(frame.columns)
    rows = loaded_english(frame)
    rows = rows[rows["label"] == 1]
    hosts = rows[rows["text"].str.len().between(MIN_HOST_CHARS, MAX_HOST_CHARS)]
    if n <= 0 or hosts.empty:
        return pd.DataFrame(columns=columns)
    hosts = hosts.reset_index(drop=True)
    rng = np.random.default_rng(child_sequence(seed, "augment", QUOTES_SOURCE))
    out = []
    for i in range(n):
        host = hosts.iloc[int(rng.integers(0, len(hosts)))]
        frame_text = QUOTE_FRAMES[int(rng.integers(0, len(QUOTE_FRAMES)))]
        quoted = " ".join(str(host["text"]).split()).strip('"')
        sid = f"{QUOTES_SOURCE}:{host['source']}:{i}"
        out.append(constructed_row(sid, host, frame_text.format(a=quoted), 0, host["position"]))
    return pd.DataFrame(out, columns=columns).drop_duplicates("text_sha256").reset_index(drop=True)
