"""The ``mlp`` head: a small perceptron on the static MiniLM sentence embedding.

The same 256 numbers the ``embed`` head reads, through a hidden ReLU layer
instead of one hyperplane. Fitted alone under the leave-one-source-out rule,
logistic regression on the static embedding scores a LODO macro of 0.38 and
the perceptron 0.57; stacked with the other heads it leaves Gate's LODO
where it was, so it is opt-in (``benchmarks/RESULTS.md``).

Scoring is a numpy forward pass over the stored weights (well under a
millisecond per text); only fitting needs scikit-learn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

import numpy as np

from gatebench.gate.heads.base import Head
from gatebench.gate.heads.embed import EmbeddingInput
from gatebench.gate.static_embed import StaticEmbedder

__all__ = ["MLPHead"]


class MLPHead(EmbeddingInput, Head):
    """A multi-layer perceptron (ReLU, Adam, early stopping) on the static embedding.

    Parameters
    ----------
    seed : int
        Seeds the weight initialisation, the batch order and the
        early-stopping split, so a refit on the same rows is identical.
    hidden : sequence of int
        Width of each hidden layer.
    alpha : float
        L2 penalty on the weights.
    max_epochs : int
        Upper bound on passes over the data; training stops earlier when
        the score on an internal 10% split has not improved for 10 epochs.
    embedder : StaticEmbedder, optional
        Needed only for standalone ``fit``/``score``; distilled (cached) when omitted.
    """

    name = "mlp"
    view = "static"
    settings = ("seed", "hidden", "alpha", "max_epochs")

    def __init__(
        self,
        *,
        seed: int = 0,
        hidden: tuple[int, ...] | list[int] = (256,),
        alpha: float = 1e-3,
        max_epochs: int = 200,
        embedder: StaticEmbedder | None = None,
    ) -> None:
        super().__init__(seed=seed)
        self.hidden = tuple(int(h) for h in hidden)
        if not self.hidden or min(self.hidden) < 1:
            raise ValueError(
                f"hidden={hidden!r} is invalid; give one positive width per layer, e.g. [256]"
            )
        self.alpha = float(alpha)
        self.max_epochs = int(max_epochs)
        self.embedder = embedder
        self.weights: list[np.ndarray] = []
        self.biases: list[np.ndarray] = []

    def fit_x(self, x: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None) -> Self:
        from sklearn.neural_network import MLPClassifier

        model = MLPClassifier(
            hidden_layer_sizes=self.hidden,
            alpha=self.alpha,
            early_stopping=True,
            max_iter=self.max_epochs,
            random_state=self.seed,
        ).fit(np.asarray(x, dtype=np.float32), y, sample_weight=weight)
        self.weights = [w.astype(np.float32) for w in model.coefs_]
        self.biases = [b.astype(np.float32) for b in model.intercepts_]
        return self

    def decision_x(self, x: np.ndarray) -> np.ndarray:
        """The output unit's log-odds: ReLU layers, then one linear unit."""
        h = np.asarray(x, dtype=np.float32)
        for w, b in zip(self.weights[:-1], self.biases[:-1], strict=True):
            h = np.maximum(h @ w + b, 0.0)
        return np.asarray(h @ self.weights[-1] + self.biases[-1], dtype=np.float64).ravel()

    def fitted_state(self) -> dict[str, Any]:
        arrays = {f"w{i}": w for i, w in enumerate(self.weights)}
        return arrays | {f"b{i}": b for i, b in enumerate(self.biases)}

    def restore_fitted(self, state: Mapping[str, Any]) -> None:
        n = len(self.hidden) + 1
        self.weights = [np.asarray(state[f"w{i}"], dtype=np.float32) for i in range(n)]
        self.biases = [np.asarray(state[f"b{i}"], dtype=np.float32) for i in range(n)]
