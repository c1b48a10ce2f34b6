"""The chunk windows are pinned: the trace's rows (and so its id and every score) depend on them.

The trace, the service, bulk scoring and the latency benchmark all cut text
through :mod:`gatebench.chunking`; a change to where windows start or end
would silently change every chunked row, so the expected spans are written
out literally here rather than recomputed.
"""

from __future__ import annotations

import pytest

from gatebench.chunking import chunk_spans, chunk_texts, join_chunks
from gatebench.served import ServeSettings
from gatebench.trace import TraceSpec

SURROGATE = "\ud800"  # a lone surrogate, as surrogateescape leaves undecodable bytes


@pytest.mark.parametrize(
    ("length", "size", "overlap", "spans"),
    [
        (0, 10, 3, [(0, 0)]),  # empty text: one empty window
        (1, 10, 3, [(0, 1)]),
        (9, 10, 3, [(0, 9)]),
        (10, 10, 3, [(0, 10)]),  # exactly one window long: not cut
        (11, 10, 3, [(0, 10), (7, 11)]),  # one character over: a second, short window
        (17, 10, 3, [(0, 10), (7, 17)]),  # the second window ends exactly at the end
        (18, 10, 3, [(0, 10), (7, 17), (14, 18)]),
        (20, 10, 3, [(0, 10), (7, 17), (14, 20)]),
        (21, 10, 3, [(0, 10), (7, 17), (14, 21)]),  # no window starts in the last 3 characters
        (22, 10, 3, [(0, 10), (7, 17), (14, 22)]),
        (25, 10, 3, [(0, 10), (7, 17), (14, 24), (21, 25)]),
        (20, 10, 0, [(0, 10), (10, 20)]),  # no overlap: windows tile the text
        (21, 10, 0, [(0, 10), (10, 20), (20, 21)]),
        (4000, 4000, 400, [(0, 4000)]),  # the default settings
        (4001, 4000, 400, [(0, 4000), (3600, 4001)]),
        (9000, 4000, 400, [(0, 4000), (3600, 7600), (7200, 9000)]),
        (250, 100, 20, [(0, 100), (80, 180), (160, 250)]),
    ],
)
def test_window_spans_are_pinned(
    length: int, size: int, overlap: int, spans: list[tuple[int, int]]
) -> None:
    text = "".join(chr(0x61 + i % 26) for i in range(length))
    assert chunk_spans(text, size, overlap) == spans
    assert chunk_texts(text, size, overlap) == [text[a:b] for a, b in spans]
    assert join_chunks(chunk_texts(text, size, overlap), overlap) == text


def test_windows_hold_the_expected_characters() -> None:
    text = "abcdefghijklmnopqrstuvwxy"
    assert chunk_texts(text, 10, 3) == ["abcdefghij", "hijklmnopq", "opqrstuvwx", "vwxy"]
    assert chunk_texts("", 10, 3) == [""]


def test_lengths_count_code_points_and_keep_surrogates_whole() -> None:
    # An emoji is one character (not a UTF-16 pair) and a lone surrogate is
    # kept as it is, never split or replaced.
    text = "😀" * 8 + SURROGATE + "b" * 3
    assert len(text) == 12
    assert chunk_spans(text, 10, 3) == [(0, 10), (7, 12)]
    assert chunk_texts(text, 10, 3) == ["😀" * 8 + SURROGATE + "b", "😀" + SURROGATE + "bbb"]
    assert join_chunks(chunk_texts(text, 10, 3), 3) == text


def test_trace_and_service_defaults_cut_alike() -> None:
    # The service scores a long text with the windows the trace stored it as.
    spec, settings = TraceSpec(sources=("xstest",)), ServeSettings()
    assert (spec.chunk_chars, spec.chunk_overlap) == (settings.chunk_chars, settings.chunk_overlap)
