"""Where each adapter lives, as lazy ``"module:attr"`` paths.

Plain data with no imports, so both :mod:`gatebench.detectors.protocol` (which
registers these names) and :mod:`gatebench.detectors.adapters` (which
implements them and can register them into another registry) read one table.
"""

from __future__ import annotations

__all__ = ["ADAPTERS", "THIRD_PARTY"]

_P = "gatebench.detectors.adapters"

#: Offline third-party detectors from PyPI (optional installs).
THIRD_PARTY: dict[str, str] = {
    "jailguard": f"{_P}.jailguard:JailGuard",
    "prompt-dictator": f"{_P}.rules:PromptDictator",
    "ai-injection-guard": f"{_P}.rules:AIInjectionGuard",
    "nukon-pi-detect": f"{_P}.rules:NukonPIDetect",
    "promptsafe": f"{_P}.rules:PromptSafe",
    "picket": f"{_P}.rules:Picket",
    "toolwall-guard": f"{_P}.rules:ToolwallGuard",
}

#: Every adapter: generic wrappers plus :data:`THIRD_PARTY`.
ADAPTERS: dict[str, str] = {
    "hf-local": f"{_P}.hf:HFTextClassifier",
    "http-json": f"{_P}.http:HTTPJSONDetector",
    "precomputed": f"{_P}.precomputed:PrecomputedScores",
    "guardbench-callable": f"{_P}.callables:GuardBenchCallable",
    "pint-callable": f"{_P}.callables:PINTCallable",
    **THIRD_PARTY,
}
