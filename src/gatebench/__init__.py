"""gatebench: honest evaluation of prompt-injection and jailbreak detectors, and Gate.

The public surface is small: the ``gatebench`` command, :mod:`gatebench.api`
(``evaluate``, ``train``, ``detect``) and :class:`gatebench.Gate`, the
reference detector (``gatebench.Gate.load(MODEL_DIR).score(texts)``).
Attributes load lazily, so ``import gatebench`` stays cheap.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gatebench.gate.model import Gate

__all__ = ["Gate", "__version__"]

try:
    __version__ = version("gatebench")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "Gate":
        from gatebench.gate.model import Gate

        return Gate
    raise AttributeError(f"module 'gatebench' has no attribute {name!r}")
