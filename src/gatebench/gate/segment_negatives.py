"""The sentences of benign tool results and documents that read most like attacks, taught as benign.

Segment reading scores a data text as the higher of its own score and its
most attack-like segment's. A benign e-mail's hardest line read alone ("Bring
a laptop; the Wi-Fi password will be on the welcome sheet") can score like
an attack, and such lines raise benign data texts past the operating point:
the threshold then rises for every text, and user turns lose recall.

The heads learn from whole texts, so they never see those lines alone. This
module finds, in each benign training text at a data position, the segment
a fast reader scores highest, and returns it as one more benign training
text: the heads then learn the lines that data texts are falsely flagged on.
Only segments that segment reading would read are taken (texts of
:data:`~gatebench.gate.segment_reading.MIN_SEGMENTS` segments or more,
segments of :data:`~gatebench.gate.segment_reading.MIN_WORDS` plain words or
more). The fast reader is a char n-gram head fitted on the same training
rows: it is what the fast path mostly reads, and it fits in seconds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gatebench.gate.data_guard import at_data
from gatebench.gate.heads import CharHead
from gatebench.gate.segment_reading import read_segments

__all__ = ["hard_segments"]


def hard_segments(
    texts: Sequence[str],
    labels: np.ndarray,
    positions: np.ndarray,
    *,
    limit: int,
    seed: int = 0,
) -> tuple[np.ndarray, list[str]]:
    """The most attack-like segment of each benign data text, hardest first, at most ``limit``.

    Parameters
    ----------
    texts, labels : sequence of str, ndarray
        The training rows (1 = attack).
    positions : ndarray
        Each row's position (``user``, ``tool``, ``document``).
    limit : int
        How many segments to return at most; the highest-scoring are kept.
    seed : int
        Seeds the fast reader's SGD.

    Returns
    -------
    rows : ndarray of int
        The row each segment comes from.
    segments : list of str
        The segments, distinct, in the order of ``rows``.
    """
    y = np.asarray(labels)
    benign_data = np.flatnonzero(at_data(positions) & (y == 0))
    if limit <= 0 or benign_data.size == 0:
        return np.empty(0, dtype=np.int64), []
    reader = CharHead(seed=seed).fit(texts, y)
    reading = read_segments(reader.score, texts, np.zeros(len(texts)), benign_data)
    hardest_first = sorted(
        (i for i in map(int, benign_data) if reading.segment[i]),
        key=lambda i: (-float(reading.scores[i]), i),
    )
    rows: list[int] = []
    picked: dict[str, None] = {}  # distinct segments, in the order they were taken
    for i in hardest_first:
        segment = str(reading.segment[i])
        if segment not in picked:
            picked[segment] = None
            rows.append(i)
            if len(rows) == limit:
                break
    return np.asarray(rows, dtype=np.int64), list(picked)
