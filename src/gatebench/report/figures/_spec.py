"""What a report figure is: an extractor (run -> data or a reason) and a pure drawer.

Splitting the two keeps every drawer a pure function of plain data, testable
without a run directory, and lets the report say in one line why a figure
is left out instead of drawing an empty axis.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure

from gatebench.rundata import UNNAMED_DETECTOR, RunData

__all__ = ["DEFAULT_NAMES", "Absent", "FigureSpec", "Prepared"]

#: Names used when the run records none: neutral words for the detector, and the
#: product name of the competitor the comparison figures single out.
DEFAULT_NAMES = {"detector": UNNAMED_DETECTOR, "competitor": "Lakera Guard"}


@dataclass(frozen=True)
class Prepared:
    """Data for one figure, with the words that go around it.

    Attributes
    ----------
    data : Any
        The drawer's only input (plain dicts, lists and numbers).
    alt : str
        Alternative text: what the figure shows, with its key numbers.
    caption : str
        How to read the figure, as the paper's captions do.
    """

    data: Any
    alt: str
    caption: str


@dataclass(frozen=True)
class Absent:
    """Why a figure cannot be drawn from this run (one line)."""

    reason: str


@dataclass(frozen=True)
class FigureSpec:
    """One figure of the report.

    Attributes
    ----------
    number : int
        Position in the report (the issue's numbering, 1-20; 21 is per language,
        22 per position in an agent's input).
    key : str
        Stable slug, used for HTML ids and file names.
    title : str
        Short title; ``{detector}`` and ``{competitor}`` stand for the run's
        detector and the named competitor (see :meth:`heading`).
    paper : str
        The paper figure it reproduces, e.g. ``"paper Fig. 1"``.
    extract : callable
        ``RunData -> Prepared | Absent``; reads, never recomputes, a metric.
    draw : callable
        ``data -> matplotlib Figure``; pure.
    """

    number: int
    key: str
    title: str
    paper: str
    extract: Callable[[RunData], Prepared | Absent]
    draw: Callable[[Any], Figure]

    def heading(self, names: Mapping[str, str]) -> str:
        """The title with the run's names filled in.

        Parameters
        ----------
        names : mapping
            ``detector`` and ``competitor`` display names, read from the run.

        Examples
        --------
        >>> spec = FigureSpec(19, "k", "{detector} vs {competitor}", "", print, print)
        >>> spec.heading({"detector": "tfidf-lr", "competitor": "lakera-guard"})
        'tfidf-lr vs lakera-guard'
        """
        return self.title.format_map({**DEFAULT_NAMES, **names})

    @property
    def slug(self) -> str:
        """File and anchor name, e.g. ``fig04-f1-fpr-sweep``."""
        return f"fig{self.number:02d}-{self.key}"
