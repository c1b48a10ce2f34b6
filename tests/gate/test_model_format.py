"""Model directories already on disk keep loading and scoring as they did when written.

``data/gate-format3`` is a small Gate saved by ``Gate.save`` at model format
version 3 (no MiniLM stage, 1,024 hash buckets, 30 boosting rounds, so it is
a few kilobytes), and ``data/gate-format3-scores.json`` holds the scores
that same fitted object gave before it was saved. Refactors of the heads or
of the persistence code must leave both loadable and the scores unchanged;
a deliberate format change bumps the version and keeps this directory
readable.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from gatebench.gate import Gate

DATA = Path(__file__).parent / "data"


def test_format_3_directory_loads_and_scores_as_written() -> None:
    expected = json.loads((DATA / "gate-format3-scores.json").read_text(encoding="utf-8"))
    gate = Gate.load(DATA / "gate-format3")
    texts = expected["texts"]
    assert gate.trace_id == "format-3-fixture" and gate.threshold == 0.5
    # Tolerance only for another machine's BLAS; on the writer's machine they are equal.
    np.testing.assert_allclose(gate.score(texts), expected["score"], rtol=1e-9, atol=0)
    np.testing.assert_allclose(gate.score_fast(texts), expected["score_fast"], rtol=1e-9, atol=0)
    heads = gate.head_scores(texts)
    assert list(heads) == list(expected["head_scores"])
    for name, p in heads.items():
        np.testing.assert_allclose(p, expected["head_scores"][name], rtol=1e-9, atol=0)
