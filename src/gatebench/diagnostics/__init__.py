"""Generalisation diagnostics: one registered check per module, each with its pass criterion.

``run_diagnostics(ctx, tier)`` runs the checks of a tier on a
:class:`DiagnosticContext` (what ``api.evaluate`` has after its metrics step)
and returns :class:`DiagnosticResult` records (``as_dict()`` for result.json).

==========================  =========  ==============================================
check                       tier       what it needs
==========================  =========  ==============================================
leakage_premium             cheap      both passes' OOF scores (paired bootstrap)
random_label                cheap      headline hard predictions
adversarial_validation      cheap      texts + folds (auxiliary TF-IDF model)
train_vs_oof                cheap      fold results (train scores)
length_bias                 cheap      headline OOF scores + prompt lengths
cross_source_conflicts      cheap      composite groups
threshold_transferability   cheap      summary numbers
shortcut_controls           cheap      CV of the length-only and keyword baselines
lodo                        expensive  one refit per source (parallel)
random_label_retrain        expensive  one refit per headline fold
determinism_replay          expensive  two refits of headline fold 0
permutation_importance      expensive  fold-0 model; PermutableDetector only
head_agreement              expensive  fold-0 model; HeadedDetector only
paraphrase_invariance       expensive  fold-0 model (shared with the two above)
==========================  =========  ==============================================

>>> from gatebench.diagnostics import DIAGNOSTICS
>>> len(DIAGNOSTICS), DIAGNOSTICS.get("length_bias").tier
(14, 'cheap')
"""

from gatebench.diagnostics._base import (
    DIAGNOSTICS,
    TIERS,
    Check,
    DiagnosticResult,
    register_diagnostic,
)
from gatebench.diagnostics.build import build_context
from gatebench.diagnostics.context import DiagnosticContext
from gatebench.diagnostics.protocols import HeadedDetector, PermutableDetector
from gatebench.diagnostics.report import diagnose_rows, result_rows
from gatebench.diagnostics.runner import checks_for, run_diagnostics

__all__ = [
    "DIAGNOSTICS",
    "TIERS",
    "Check",
    "DiagnosticContext",
    "DiagnosticResult",
    "HeadedDetector",
    "PermutableDetector",
    "build_context",
    "checks_for",
    "diagnose_rows",
    "register_diagnostic",
    "result_rows",
    "run_diagnostics",
]
