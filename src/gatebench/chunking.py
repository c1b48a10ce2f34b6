"""Overlapping character windows: how a long text is cut into chunks, and put back.

The trace stores a long prompt as chunk rows, the service and bulk scoring
score a long text window by window (max-pooled), and the latency benchmark
rebuilds whole prompts from a trace's chunks. All of them must cut at the
same places, or a text would be scored differently in evaluation and in
service, so the geometry lives here once.

A text of at most ``size`` characters is one window. A longer one is cut into
windows of ``size`` characters starting every ``size - overlap`` characters,
so consecutive windows share ``overlap`` characters (an instruction cut at a
window edge still appears whole in one window); the last window may be
shorter, and a new window starts only while more than ``overlap`` characters
remain (the previous window already covers the last ``overlap``). Lengths are
in code points, as Python counts them: a lone surrogate or an emoji is one
character.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["chunk_spans", "chunk_texts", "join_chunks"]


def chunk_spans(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """``(start, end)`` character spans of the overlapping windows covering ``text``.

    Parameters
    ----------
    text : str
        The text to cut.
    size : int
        Window length in characters (``chunk_chars``).
    overlap : int
        Characters shared by consecutive windows (``chunk_overlap``); callers
        keep it below ``size``.

    Examples
    --------
    >>> chunk_spans("abcdefghij", 4, 1)
    [(0, 4), (3, 7), (6, 10)]
    >>> chunk_spans("abcd", 4, 1)
    [(0, 4)]
    """
    if len(text) <= size:
        return [(0, len(text))]
    step = size - overlap
    return [(s, min(s + size, len(text))) for s in range(0, len(text) - overlap, step)]


def chunk_texts(text: str, size: int, overlap: int) -> list[str]:
    """The windows of :func:`chunk_spans` as strings.

    Examples
    --------
    >>> chunk_texts("abcdefghij", 4, 1)
    ['abcd', 'defg', 'ghij']
    """
    return [text[a:b] for a, b in chunk_spans(text, size, overlap)]


def join_chunks(chunks: Sequence[str], overlap: int) -> str:
    """The text :func:`chunk_texts` cut into ``chunks``, rebuilt whole.

    Chunk ``i + 1`` starts ``overlap`` characters before chunk ``i`` ends, so
    the text is the first chunk plus every later chunk minus its first
    ``overlap`` characters.

    Examples
    --------
    >>> join_chunks(["abcd", "defg", "ghij"], 1)
    'abcdefghij'
    """
    return chunks[0] + "".join(c[overlap:] for c in chunks[1:])
