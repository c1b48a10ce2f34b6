"""Optional detector capabilities that some diagnostics use.

A detector opts in by having these members; nothing needs to subclass
anything. The Gate detector implements both; the baselines implement
neither, and the checks that need them report NOT_APPLICABLE.

Examples
--------
A ten-line detector with two feature groups, usable by the permutation check:

>>> import numpy as np
>>> class TwoCues:
...     name, requires_fit = "two-cues", False
...     feature_groups = ("length", "bang")
...     def fit(self, texts, labels, *, valid=None):
...         return self
...     def _features(self, texts):
...         return np.array([[len(t) > 20, "!" in t] for t in texts], float)
...     def score(self, texts):
...         return self._features(texts).mean(axis=1)
...     def score_permuted(self, texts, group, rng):
...         x = self._features(texts)
...         j = self.feature_groups.index(group)
...         x[:, j] = rng.permutation(x[:, j])
...         return x.mean(axis=1)
>>> isinstance(TwoCues(), PermutableDetector)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["HeadedDetector", "PermutableDetector"]


@runtime_checkable
class PermutableDetector(Protocol):
    """A detector whose features (or heads) come in named groups that can be permuted.

    Attributes
    ----------
    feature_groups : sequence of str
        Names of the groups, e.g. ``("ngrams", "cues", "embedding")`` or head names.
    """

    feature_groups: Sequence[str]

    def score_permuted(
        self, texts: Sequence[str], group: str, rng: np.random.Generator
    ) -> np.ndarray:
        """P(attack) for ``texts`` with ``group``'s columns permuted across the rows.

        Everything else (other groups, the combiner) must be computed exactly
        as in ``score``, so the score drop is due to ``group`` alone. A head
        group is permuted by permuting that head's output across rows before
        the combiner sees it. ``rng`` is the only source of randomness. A
        detector whose ``score`` reads positions takes them here too, as a
        ``positions`` keyword (one per text), and the check passes them.
        """
        ...


@runtime_checkable
class HeadedDetector(Protocol):
    """A detector made of several classifier heads whose outputs are combined."""

    def head_scores(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Each head's P(attack) for ``texts``: head name -> array of shape (n,).

        A head's hard prediction is ``score >= head_thresholds[name]`` when the
        detector has a ``head_thresholds`` mapping, else ``score >= 0.5``.
        """
        ...
