"""Rows only the combiners learn from: the heads never see them, the combiners do."""

from __future__ import annotations

import numpy as np
import pytest

from gatebench.gate import Gate


def _sources(n: int) -> np.ndarray:
    src = np.array(["base"] * n, dtype=object)
    src[::5] = "planted"
    return src


def _margins(gate: Gate, texts: list[str]) -> dict[str, np.ndarray]:
    views = gate._get_featurizer()(texts)
    return {n: h.decision_x(h.x_of(views)) for n, h in gate.heads.items()}


def test_the_heads_are_those_fitted_without_the_rows(dataset, gate_kw, tmp_path) -> None:  # type: ignore[no-untyped-def]
    texts, y = dataset
    src = _sources(len(texts))
    kw = gate_kw | {"balance": 0.0, "balance_languages": False}
    valid = (texts[:60], y[:60])
    only = Gate(seed=4, combiner_only=["planted"], **kw).fit(texts, y, valid=valid, sources=src)
    keep = np.flatnonzero(src != "planted")
    alone = Gate(seed=4, **kw).fit(
        [texts[i] for i in keep], y[keep], valid=valid, sources=src[keep]
    )
    everything = Gate(seed=4, **kw).fit(texts, y, valid=valid, sources=src)
    probe = texts[:50]
    a, b, c = _margins(only, probe), _margins(alone, probe), _margins(everything, probe)
    for name in a:
        assert np.allclose(a[name], b[name]), name
    assert any(not np.allclose(a[n], c[n]) for n in a)
    # The combiner did learn from them: its training rows are all of them.
    assert only.fit_info["combiner_only_rows"] == int((src == "planted").sum())
    assert everything.fit_info["combiner_only_rows"] == 0
    assert not np.allclose(only.score(probe), alone.score(probe))
    only.save(tmp_path / "m")
    loaded = Gate.load(tmp_path / "m")
    assert loaded.combiner_only == ("planted",)
    assert np.allclose(loaded.score(probe), only.score(probe))


def test_the_rows_are_found_by_source_and_named_when_they_cannot_be(dataset, gate_kw) -> None:  # type: ignore[no-untyped-def]
    texts, y = dataset
    with pytest.raises(ValueError, match=r"combiner_only=\['planted'\] names sources"):
        Gate(combiner_only=["planted"], **gate_kw).fit(texts, y)
    with pytest.raises(ValueError, match=r"combiner_only='planted' must be a list"):
        Gate(combiner_only="planted", **gate_kw)
    # A source absent from the fit leaves every row to the heads.
    none = Gate(seed=1, combiner_only=["elsewhere"], **gate_kw)
    none.fit(texts, y, sources=_sources(len(texts)))
    assert none.fit_info["combiner_only_rows"] == 0
