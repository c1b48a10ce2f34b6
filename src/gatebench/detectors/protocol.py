"""The detector contract and the registry every detector is built through.

A detector is anything with ``fit(texts, labels, *, valid=None) -> self`` and
``score(texts) -> P(attack)``. Frozen and black-box detectors set
``requires_fit = False``; the harness still calls ``fit`` (a no-op for them) so
that every fold follows one code path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Self, TypeVar, runtime_checkable

import numpy as np

from gatebench.detectors.catalog import ADAPTERS
from gatebench.errors import DetectorError
from gatebench.registry import Registry

__all__ = [
    "DETECTORS",
    "Detector",
    "DetectorSpec",
    "check_scores",
    "fit_detector",
    "make_detector",
    "register_detector",
    "score_detector",
    "takes",
]


@runtime_checkable
class Detector(Protocol):
    """What the harness needs from a detector."""

    name: str
    requires_fit: bool

    def fit(
        self,
        texts: Sequence[str],
        labels: np.ndarray,
        *,
        valid: tuple[Sequence[str], np.ndarray] | None = None,
    ) -> Self:
        """Train on ``texts``; iterative learners early-stop on ``valid``."""
        ...

    def score(self, texts: Sequence[str]) -> np.ndarray:
        """Return P(attack) in [0, 1] for each text."""
        ...


DetectorFactory = Callable[..., Detector]
F = TypeVar("F", bound=Callable[..., Any])


def _not_a_factory(name: str, obj: Any) -> str | None:
    if callable(obj):
        return None
    return (
        f"it names an object of type {type(obj).__name__}, "
        "not a class or function that builds a detector"
    )


DETECTORS: Registry[DetectorFactory] = Registry(
    "detector",
    group="gatebench.detectors",
    check=_not_a_factory,
    listing="gatebench detectors list",
)


def register_detector(name: str) -> Callable[[F], F]:
    """Register a detector class (or factory function) under ``name``.

    The factory is called as ``factory(seed=..., **params)`` once per fold and
    must return a :class:`Detector`. Its docstring's first line is what
    ``gatebench detectors list`` shows. A third-party package also declares
    the class as an entry point in the ``gatebench.detectors`` group, so that
    gatebench finds it without being told to import it::

        @register_detector("my-detector")
        class MyDetector:
            name = "my-detector"
            requires_fit = True

            def __init__(self, *, seed: int = 0) -> None: ...
    """
    return DETECTORS.register(name)


@dataclass(frozen=True)
class DetectorSpec:
    """A detector's registry name and constructor parameters, as recorded in manifests."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "params": dict(self.params)}


def make_detector(spec: DetectorSpec, *, seed: int) -> Detector:
    """Build a fresh detector from its spec; ``seed`` is this fold's child seed."""
    factory = DETECTORS.get(spec.name)
    try:
        return factory(seed=seed, **spec.params)
    except (TypeError, ValueError) as exc:
        raise DetectorError(
            f"detector {spec.name!r} rejected parameters {spec.params}: {exc}. "
            f"It accepts: {_accepted(factory)}; pass them as --param KEY=JSON_VALUE."
        ) from exc


def takes(method: Any, name: str) -> bool:
    """Whether ``method`` has a parameter called ``name`` (an opt-in capability)."""
    import inspect

    try:
        return name in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def fit_detector(
    detector: Detector,
    texts: Sequence[str],
    labels: np.ndarray,
    *,
    valid: tuple[Sequence[str], np.ndarray] | None,
    sources: Sequence[str] | None = None,
    positions: Sequence[str] | None = None,
    valid_positions: Sequence[str] | None = None,
    valid_sources: Sequence[str] | None = None,
) -> Detector:
    """Fit ``detector``, handing it what else it says it can use about each text.

    The protocol's ``fit`` sees texts and labels only. A detector that can
    use where each row comes from (Gate's source-balanced weighting) says so
    by taking a ``sources`` keyword; one that reads a text differently by
    where it sits in an agent's input (a user turn, a tool result, a
    document: :class:`~gatebench.types.Position`) takes ``positions`` and
    ``valid_positions``; one that weighs validation rows by source takes
    ``valid_sources``. Every other detector is fitted exactly as before, so
    third-party detectors need no change.
    """
    extra: dict[str, Any] = {}
    if sources is not None and takes(detector.fit, "sources"):
        extra["sources"] = sources
    if positions is not None and takes(detector.fit, "positions"):
        extra["positions"] = positions
        extra["valid_positions"] = valid_positions
    if valid_sources is not None and takes(detector.fit, "valid_sources"):
        extra["valid_sources"] = valid_sources
    return detector.fit(texts, labels, valid=valid, **extra)


def score_detector(
    detector: Detector, texts: Sequence[str], positions: Sequence[str] | None = None
) -> Any:
    """``detector.score(texts)``, with each text's position when its ``score`` takes them.

    ``positions`` None means every text is a user turn, which is what a
    detector that takes no positions assumes; so a position-aware detector
    scores a plain list of texts exactly as any other does.
    """
    if positions is not None and takes(detector.score, "positions"):
        return detector.score(texts, positions=positions)  # type: ignore[call-arg]
    return detector.score(texts)


def _accepted(factory: Any) -> str:
    """The keyword parameters a detector factory takes, for error messages."""
    import inspect

    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return "(its signature could not be read)"
    names = [n for n, p in params.items() if n != "seed" and p.kind is not p.VAR_POSITIONAL]
    return ", ".join(names) or "no parameters"


def check_scores(name: str, scores: Any, n: int) -> np.ndarray:
    """Validate a detector's output: shape ``(n,)``, finite, within [0, 1].

    Raises
    ------
    DetectorError
        Naming the detector and the first offending row.
    """
    arr = np.asarray(scores, dtype=np.float64)
    if arr.shape != (n,):
        raise DetectorError(
            f"detector {name!r} returned scores of shape {arr.shape} for {n} texts; "
            f"score() must return one probability per text, shape ({n},)"
        )
    bad = np.flatnonzero(~np.isfinite(arr) | (arr < 0.0) | (arr > 1.0))
    if bad.size:
        i = int(bad[0])
        raise DetectorError(
            f"detector {name!r} returned {float(arr[i])!r} for row {i} "
            f"({bad.size} bad rows in all); scores must be finite probabilities in [0, 1]"
        )
    return arr


# Lazy registration keeps heavy detectors (Gate, embeddings) out of import time.
for _name, _path in {
    "always-allow": "gatebench.detectors.baselines:AlwaysAllow",
    "always-block": "gatebench.detectors.baselines:AlwaysBlock",
    "length-only": "gatebench.detectors.baselines:LengthOnly",
    "keyword": "gatebench.detectors.baselines:KeywordList",
    "tfidf-lr": "gatebench.detectors.baselines:TfidfLogReg",
    "gate": "gatebench.gate:Gate",
}.items():
    DETECTORS.add(_name, _path)

# Adapters register lazily too: importing this package imports no backend.
for _name, _path in ADAPTERS.items():
    DETECTORS.add(_name, _path)
