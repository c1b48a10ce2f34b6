"""The deferred stage: a second, slower look at the requests the fast path is unsure of.

For each deferred text it gathers three kinds of evidence, each scored by
the fast path itself (so it needs no model of its own beyond a tiny
logistic regression that weighs the evidence):

* **windows**: overlapping ~500-character windows, max-pooled, so one
  injected paragraph in a long benign document is scored on its own instead
  of being diluted by the rest (paper §2.4 pools chunks the same way);
* **readings**: the text and its decoded variants (base64, hex, ROT13,
  reversed, leetspeak, NFKC and look-alike folding), max-pooled: a decoding
  *is* the text, read correctly, so it takes the place of the fast score
  rather than getting a weight of its own (encoded attacks are too rare in
  training data to learn one);
* **neighbours**: for the windows and readings, similarity to the nearest
  training attack minus that to the nearest benign text, in embedding space.

An optional LLM judge (:mod:`gatebench.gate.judge`) is blended in last.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Self

import numpy as np

from gatebench.gate._decode import decode_variants
from gatebench.gate.heads.base import sigmoid

__all__ = ["DEFERRED_FEATURES", "DeferredStage", "text_windows"]

#: Columns of the deferred evidence matrix.
DEFERRED_FEATURES = ("reading_max_logit", "window_max_logit", "neighbour_margin")
_EPS = 1e-6


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1 - _EPS)
    return np.asarray(np.log(p) - np.log1p(-p))


def text_windows(
    text: str, size: int = 500, stride: int = 250, max_windows: int = 200
) -> list[str]:
    """Overlapping windows of about ``size`` characters, cut at whitespace.

    A text no longer than ``size`` yields no windows (the fast path already
    read it whole). Past ``max_windows`` the stride grows so that a
    pathological 1 MB input still costs a bounded number of scorings.

    Examples
    --------
    >>> len(text_windows("x " * 100)), len(text_windows("word " * 400, 500, 250))
    (0, 7)
    """
    n = len(text)
    if n <= size:
        return []
    stride = max(stride, (n - size) // max(max_windows - 1, 1) + 1)
    out = []
    start = 0
    while True:
        end = min(start + size, n)
        # Snap both ends to whitespace (within 40 chars) so words are not cut.
        if start > 0:
            sp = text.find(" ", start, start + 40)
            start = sp + 1 if sp != -1 else start
        if end < n:
            sp = text.rfind(" ", end - 40, end)
            end = sp if sp > start else end
        out.append(text[start:end])
        if end >= n or start + size >= n:
            break
        start += stride
    return out


class DeferredStage:
    """Evidence gathering plus a non-negative logistic regression over it.

    Parameters
    ----------
    window : int
        Window length in characters.
    stride : int
        Window step.
    max_windows : int
        Cap on windows per text.
    C : float
        Inverse L2 strength of the evidence weights.
    """

    def __init__(
        self,
        *,
        window: int = 500,
        stride: int = 250,
        max_windows: int = 200,
        C: float = 1.0,  # noqa: N803
    ) -> None:
        self.window = int(window)
        self.stride = int(stride)
        self.max_windows = int(max_windows)
        self.C = float(C)
        self.coef = np.array([1.0, 0.0, 0.0])
        self.intercept = 0.0

    def evidence(
        self,
        texts: Sequence[str],
        p_fast: np.ndarray,
        fast: Callable[[list[str]], tuple[np.ndarray, np.ndarray]],
    ) -> np.ndarray:
        """The :data:`DEFERRED_FEATURES` matrix for ``texts``.

        Parameters
        ----------
        texts : sequence of str
        p_fast : ndarray
            Fast-path P(attack) of each text.
        fast : callable
            Scores a list of texts with the fast path, returning
            ``(p_attack, neighbour_margin)``.
        """
        return self.with_base(self.piece_evidence(texts, fast), p_fast)

    @property
    def reads_windows(self) -> bool:
        """Whether the fitted weights read anything the windows give.

        Windows feed only the window and neighbour columns. The
        non-negative fit can zero both (when they add nothing to the
        reading score), and a window then changes no score: each of its
        terms is a zero added to the sum.
        """
        return bool(self.coef[1] != 0.0 or self.coef[2] != 0.0)

    def piece_evidence(
        self,
        texts: Sequence[str],
        fast: Callable[[list[str]], tuple[np.ndarray, np.ndarray]],
        *,
        windows: bool = True,
    ) -> np.ndarray:
        """What the windows and readings of ``texts`` add, before the text's own score.

        Per text: the best reading's and the best window's logit (``-inf``
        when it has none) and the best neighbour margin (``-1`` when none).
        It needs no score of the text itself, so a caller can compute it
        while that score is still being computed; :meth:`with_base` then
        completes it. ``windows=False`` leaves the windows out (scoring
        with weights that do not read them, :attr:`reads_windows`); fitting
        needs them all.
        """
        pieces: list[str] = []
        owner: list[int] = []
        kind: list[int] = []  # 0 window, 1 reading
        for i, t in enumerate(texts):
            for w in text_windows(t, self.window, self.stride, self.max_windows) if windows else ():
                pieces.append(w)
                owner.append(i)
                kind.append(0)
            for _, decoded in decode_variants(t):
                pieces.append(decoded)
                owner.append(i)
                kind.append(1)
        out = np.full((len(texts), 3), -np.inf)
        out[:, 2] = -1.0
        if pieces:
            p, margin = fast(pieces)
            lp = _logit(p)
            own = np.asarray(owner)
            knd = np.asarray(kind)
            for col, k in ((0, 1), (1, 0)):
                sel = knd == k
                np.maximum.at(out[:, col], own[sel], lp[sel])
            np.maximum.at(out[:, 2], own, margin)
        return out

    @staticmethod
    def with_base(pieces: np.ndarray, p_fast: np.ndarray) -> np.ndarray:
        """:meth:`piece_evidence` completed with each text's own fast score."""
        base = _logit(p_fast)
        out = pieces.copy()
        out[:, 0] = np.maximum(out[:, 0], base)
        # The text itself (in its best reading) is one of its parts: a short
        # text with no windows is not penalised for lacking them.
        out[:, 1] = np.maximum(out[:, 1], out[:, 0])
        return out

    def fit(self, evidence: np.ndarray, y: np.ndarray) -> Self:
        """Fit evidence weights, constrained to be non-negative.

        Evidence may only *raise* suspicion: a feature whose fitted weight
        comes out negative (collinearity with the fast score) is dropped and
        the rest refitted, which keeps the rule monotone and explainable.
        """
        from sklearn.linear_model import LogisticRegression

        active = list(range(evidence.shape[1]))
        self.coef = np.zeros(evidence.shape[1])
        self.intercept = 0.0
        if len(np.unique(y)) < 2:
            self.coef[0] = 1.0
            return self
        # The reading score stands in for the fast score: it is never dropped.
        while active:
            lr = LogisticRegression(C=self.C, max_iter=1000).fit(evidence[:, active], y)
            w = lr.coef_.ravel()
            if (w >= 0).all():
                self.coef[active] = w
                self.intercept = float(lr.intercept_[0])
                break
            worst = int(np.argmin(w))
            if active[worst] == 0:
                # The reading weight itself is the most negative (degenerate
                # validation data): fall back to the reading score alone.
                self.coef[:] = 0.0
                self.coef[0], self.intercept = 1.0, 0.0
                break
            active.pop(worst)
        return self

    def logit(self, evidence: np.ndarray) -> np.ndarray:
        """Deferred log-odds."""
        return np.asarray(evidence @ self.coef + self.intercept)

    def proba(self, evidence: np.ndarray) -> np.ndarray:
        """Deferred P(attack)."""
        return sigmoid(self.logit(evidence))

    def config(self) -> dict[str, Any]:
        """JSON-able settings and weights."""
        return {
            "window": self.window,
            "stride": self.stride,
            "max_windows": self.max_windows,
            "C": self.C,
            "coef": [float(c) for c in self.coef],
            "intercept": self.intercept,
        }

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> DeferredStage:
        """Rebuild from :meth:`config`."""
        stage = cls(
            window=cfg["window"], stride=cfg["stride"], max_windows=cfg["max_windows"], C=cfg["C"]
        )
        stage.coef = np.asarray(cfg["coef"], dtype=np.float64)
        stage.intercept = float(cfg["intercept"])
        return stage
