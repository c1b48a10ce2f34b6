"""Adapters: real detectors not trained by gatebench, run through the same harness.

All of them are frozen (``requires_fit = False``): the harness still runs
every fold, so their operating point is chosen on the OOF scores exactly like
a trained detector's. Failures and truncation are recorded per row in the
audit ledger (:mod:`gatebench.detectors.adapters._audit`).

Registration is lazy (the ``"module:attr"`` strings of
:mod:`gatebench.detectors.catalog`): importing this package imports no backend.
"""

from __future__ import annotations

from gatebench.detectors.catalog import ADAPTERS, THIRD_PARTY
from gatebench.detectors.protocol import DETECTORS
from gatebench.registry import Registry

__all__ = ["ADAPTERS", "THIRD_PARTY", "register_adapters"]


def register_adapters(registry: Registry[object] | None = None) -> list[str]:
    """Add every adapter missing from ``registry`` (default: the detector registry).

    Returns
    -------
    list of str
        The names added (already-registered names are left alone).
    """
    if registry is None:
        registry = DETECTORS  # type: ignore[assignment]
    assert registry is not None
    added = []
    for name, path in ADAPTERS.items():
        if name not in registry:
            registry.add(name, path)
            added.append(name)
    return added
