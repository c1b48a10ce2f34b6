"""The report's twenty-two figures: the issue's twenty in its order, then per language and
per position in an agent's input.

Each :class:`FigureSpec` pairs an extractor (run directory -> data, or the one
line that says why the figure is left out) with a pure drawer (data ->
matplotlib Figure). :func:`prepare` runs the extractors; nothing here draws.
"""

from __future__ import annotations

from gatebench.report.figures._competitors import lakera_name
from gatebench.report.figures._spec import Absent, FigureSpec, Prepared
from gatebench.report.figures.calibration import RELIABILITY
from gatebench.report.figures.compare import BENIGN_FPR, LAKERA, PARETO, POINTS
from gatebench.report.figures.cv import ADVERSARIAL, ROC, TRAIN_VS_OOF
from gatebench.report.figures.detection import DET, MAX_TPR
from gatebench.report.figures.diagnostics import (
    KAPPA,
    LENGTH_BIAS,
    LODO,
    PERMUTATION,
    RANDOM_LABEL,
)
from gatebench.report.figures.forest import FOREST
from gatebench.report.figures.language import LANGUAGES
from gatebench.report.figures.latency import LATENCY
from gatebench.report.figures.operating import PREVALENCE, SWEEP, THETA_S
from gatebench.report.figures.position import POSITIONS
from gatebench.rundata import RunData

__all__ = ["FIGURES", "Absent", "FigureSpec", "Prepared", "names", "prepare"]

FIGURES: tuple[FigureSpec, ...] = (
    ROC,
    ADVERSARIAL,
    TRAIN_VS_OOF,
    SWEEP,
    PREVALENCE,
    THETA_S,
    LODO,
    RANDOM_LABEL,
    LENGTH_BIAS,
    PERMUTATION,
    KAPPA,
    RELIABILITY,
    FOREST,
    DET,
    MAX_TPR,
    POINTS,
    PARETO,
    BENIGN_FPR,
    LAKERA,
    LATENCY,
    LANGUAGES,
    POSITIONS,
)


def names(run: RunData) -> dict[str, str]:
    """The names titles are filled with (:meth:`FigureSpec.heading`), read from the run."""
    return {"detector": run.detector, "competitor": lakera_name(run)}


def prepare(run: RunData) -> list[tuple[FigureSpec, Prepared | Absent]]:
    """Run every extractor; an extractor that fails on odd data yields an Absent.

    An unexpected layout written by another module must cost one figure, with
    its reason shown, never the whole report.
    """
    out: list[tuple[FigureSpec, Prepared | Absent]] = []
    for spec in FIGURES:
        try:
            got = spec.extract(run)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            got = Absent(
                f"its data in result.json has an unexpected layout ({type(exc).__name__}: {exc})."
            )
        out.append((spec, got))
    return out
