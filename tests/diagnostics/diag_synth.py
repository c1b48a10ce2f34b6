"""Synthetic traces and fake detectors for the diagnostics tests.

Texts are made of pseudo-words, so no real benchmark phrase (and no keyword
of the keyword baseline) occurs by accident; attacks carry one of a few
pseudo-word cue phrases; lengths are drawn from one distribution for both
labels unless a test plants otherwise.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import pandas as pd

from gatebench.detectors import DETECTORS, DetectorSpec
from gatebench.diagnostics import DiagnosticContext, build_context

CUES = ("zorblat quenix vash", "plimmo dravek sult", "krenneth obu fazz")


def words(rng: np.random.Generator, n: int, alphabet: str = string.ascii_lowercase) -> list[str]:
    letters = list(alphabet)
    return ["".join(rng.choice(letters, size=rng.integers(3, 8))) for _ in range(n)]


def make_frame(
    n: int = 240,
    *,
    seed: int = 0,
    sources: Sequence[str] = ("alpha", "beta"),
    cues: Sequence[str] = CUES,
    vocab: list[str] | None = None,
) -> pd.DataFrame:
    """Balanced rows spread over ``sources``; attacks contain a cue phrase."""
    rng = np.random.default_rng(seed)
    vocab = vocab or words(np.random.default_rng(99), 300)
    rows = []
    for i in range(n):
        label = i % 2
        body = list(rng.choice(vocab, size=rng.integers(6, 30)))
        if label:
            body.insert(int(rng.integers(0, len(body))), str(rng.choice(list(cues))))
        rows.append(
            {
                "sample_id": f"s{seed}:{i}",
                "text": " ".join(body),
                "label": label,
                "source": sources[
                    i % len(sources) if len(sources) > 2 else (i // 2) % len(sources)
                ],
            }
        )
    return pd.DataFrame(rows)


def leaky_frame(n_groups: int = 120, copies: int = 3, *, seed: int = 0) -> pd.DataFrame:
    """Groups of near-duplicate texts with a random label per group: no generalisable signal.

    Copies differ by one substituted character, so MinHash joins them (J ≈ 0.95)
    while a model that memorises one copy recognises the others.
    """
    rng = np.random.default_rng(seed)
    vocab = words(np.random.default_rng(7), 400)
    rows = []
    labels = rng.permutation(np.arange(n_groups) % 2)
    for g in range(n_groups):
        base = " ".join(rng.choice(vocab, size=40))
        for c in range(copies):
            pos = int(rng.integers(0, len(base)))
            text = base[:pos] + "xyzq"[c % 4] + base[pos + 1 :]
            rows.append(
                {
                    "sample_id": f"g{g}:{c}",
                    "text": text,
                    "label": int(labels[g]),
                    "source": "alpha" if g % 2 else "beta",
                }
            )
    return pd.DataFrame(rows)


class LengthKeyed:
    """Fake detector whose score is a function of text length only."""

    name = "test-length-keyed"
    requires_fit = False

    def __init__(self, *, seed: int = 0) -> None:
        del seed

    def fit(self, texts: Sequence[str], labels: np.ndarray, *, valid: Any = None) -> Self:
        return self

    def score(self, texts: Sequence[str]) -> np.ndarray:
        n = np.array([len(t) for t in texts], float)
        return 1.0 / (1.0 + np.exp(-(n - 100.0) / 30.0))


class Noisy:
    """Fake detector that draws fresh OS entropy on every call: not reproducible."""

    name = "test-noisy"
    requires_fit = False

    def __init__(self, *, seed: int = 0) -> None:
        del seed

    def fit(self, texts: Sequence[str], labels: np.ndarray, *, valid: Any = None) -> Self:
        return self

    def score(self, texts: Sequence[str]) -> np.ndarray:
        cue = np.array([any(c in t for c in CUES) for t in texts], float)
        return np.clip(0.1 + 0.8 * cue + np.random.default_rng().normal(0, 0.05, len(texts)), 0, 1)


class CaseSensitive:
    """Fake detector that only recognises the cues in lower case (a planted paraphrase failure)."""

    name = "test-case-sensitive"
    requires_fit = False

    def __init__(self, *, seed: int = 0) -> None:
        del seed

    def fit(self, texts: Sequence[str], labels: np.ndarray, *, valid: Any = None) -> Self:
        return self

    def score(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([0.9 if any(c in t for c in CUES) else 0.1 for t in texts])


class TwoGroups:
    """Fake detector with a signal group ("cue") and a useless one ("noise"), and two heads."""

    name = "test-two-groups"
    requires_fit = False
    feature_groups = ("cue", "noise")

    def __init__(self, *, seed: int = 0, redundant: bool = False) -> None:
        self.redundant = redundant
        del seed

    def fit(self, texts: Sequence[str], labels: np.ndarray, *, valid: Any = None) -> Self:
        return self

    def _x(self, texts: Sequence[str]) -> np.ndarray:
        cue = [any(c in t for c in CUES) for t in texts]
        noise = [len(t) % 2 == 0 for t in texts]
        return np.column_stack([cue, noise]).astype(float)

    def _combine(self, x: np.ndarray) -> np.ndarray:
        return 0.05 + 0.85 * x[:, 0] + 0.1 * x[:, 1]

    def score(self, texts: Sequence[str]) -> np.ndarray:
        return self._combine(self._x(texts))

    def score_permuted(
        self, texts: Sequence[str], group: str, rng: np.random.Generator
    ) -> np.ndarray:
        x = self._x(texts)
        j = self.feature_groups.index(group)
        x[:, j] = rng.permutation(x[:, j])
        return self._combine(x)

    def head_scores(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        x = self._x(texts)
        second = x[:, 0] if self.redundant else x[:, 1]
        return {"cue_head": x[:, 0], "other_head": second}


class DataOnly:
    """Fake detector that flags a cue only in a tool result or document, as a data guard would."""

    name = "test-data-only"
    requires_fit = False
    feature_groups = ("cue",)

    def __init__(self, *, seed: int = 0) -> None:
        del seed

    def fit(self, texts: Sequence[str], labels: np.ndarray, *, valid: Any = None) -> Self:
        return self

    def _cue(self, texts: Sequence[str], positions: Sequence[str] | None) -> np.ndarray:
        where = positions or ["user"] * len(texts)
        pairs = zip(texts, where, strict=True)
        return np.array([p != "user" and any(c in t for c in CUES) for t, p in pairs])

    def score(self, texts: Sequence[str], positions: Sequence[str] | None = None) -> np.ndarray:
        return np.where(self._cue(texts, positions), 0.9, 0.1)

    def score_permuted(
        self,
        texts: Sequence[str],
        group: str,
        rng: np.random.Generator,
        positions: Sequence[str] | None = None,
    ) -> np.ndarray:
        assert group == "cue"
        return np.where(rng.permutation(self._cue(texts, positions)), 0.9, 0.1)


FAKES = {d.name: d for d in (LengthKeyed, Noisy, CaseSensitive, TwoGroups, DataOnly)}
for _name, _cls in FAKES.items():
    if _name not in DETECTORS:
        DETECTORS.add(_name, _cls)


def context(frame: pd.DataFrame, detector: str = "tfidf-lr", **kw: Any) -> DiagnosticContext:
    """A small context: 3 folds, τ = 5 %, 200 resamples, in-process."""
    params = kw.pop("params", {})
    base: dict[str, Any] = {"seed": 3, "n_splits": 3, "fpr": 0.05, "n_resamples": 200}
    base.update(kw)
    return build_context(frame, DetectorSpec(detector, params), **base)
