"""Shared look of the figures: colours, sizes and the rc settings used to save them.

Drawers build :class:`matplotlib.figure.Figure` objects directly, never via
``pyplot``, so nothing global is touched, figures are garbage-collected, and
the Agg canvas is used without selecting a backend process-wide.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullLocator

__all__ = [
    "BLUE",
    "GREEN",
    "GREY",
    "ORANGE",
    "RC",
    "RED",
    "STATUS_COLOURS",
    "new_figure",
    "no_frame",
    "probit",
    "probit_ticks",
    "rate_axis",
    "rate_limits",
    "style",
]

BLUE = "#1f6fb4"
ORANGE = "#e8790c"
RED = "#c62828"
GREEN = "#2e7d32"
GREY = "#8a8a8a"
PURPLE = "#6a3d9a"
#: Room past the ends of a probit axis (normal-quantile units): a marker's radius and more.
PROBIT_PAD = 0.3
STATUS_COLOURS = {"PASS": GREEN, "WARN": ORANGE, "FAIL": RED, "NOT_APPLICABLE": GREY}

#: rc settings applied while drawing and saving. Text stays text in SVG
#: (``svg.fonttype: none``) so the report is searchable and small; the font
#: list ends in a generic family so no font file is ever needed.
RC: dict[str, Any] = {
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "sans-serif"],
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "svg.fonttype": "none",
    "svg.hashsalt": "gatebench",
    "figure.dpi": 100,
}


def style() -> AbstractContextManager[Any]:
    """Context in which figures are drawn and saved with :data:`RC`."""
    # rc_context is typed with a Literal key set; RC's keys are all valid ones.
    params: Any = RC
    return mpl.rc_context(params)


def new_figure(width: float = 6.4, height: float = 3.6, **kw: Any) -> Figure:
    """A figure with constrained layout (labels never clipped), not registered in pyplot."""
    return Figure(figsize=(width, height), layout="constrained", **kw)


def no_frame(ax: Axes) -> None:
    """Hide an axis' frame and ticks (for annotation-only panels)."""
    ax.set_axis_off()


def probit(p: Iterable[float] | np.ndarray, floor: float = 1e-4) -> np.ndarray:
    """Normal quantile of rates clipped to ``[floor, 1 - floor]`` (0 and 1 are infinite)."""
    # ndtri is the normal quantile without the second-long import of scipy.stats.
    from scipy.special import ndtri

    arr = np.clip(
        np.asarray(list(p) if not isinstance(p, np.ndarray) else p, float), floor, 1 - floor
    )
    return np.asarray(ndtri(arr), dtype=float)


def _percent(v: float, _pos: Any = None) -> str:
    return f"{100 * v:g}%"


def rate_axis(ax: Axes, *, linthresh: float | None = None, axis: str = "x") -> None:
    """A log (or symlog, when rates of exactly 0 must show) axis labelled in percent.

    Plain labels (0.1%, 1%, 10%) read faster than 10⁻³ and skip mathtext layout.
    """
    target = ax.xaxis if axis == "x" else ax.yaxis
    if linthresh is None:
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    else:
        (ax.set_xscale if axis == "x" else ax.set_yscale)(
            "symlog", linthresh=linthresh, linscale=0.5
        )
    target.set_major_formatter(FuncFormatter(_percent))
    # No minor ticks: each is a full Tick artist, and log axes make dozens.
    target.set_minor_locator(NullLocator())


def rate_limits(ax: Axes, *, linthresh: float) -> None:
    """An F1-against-FPR axis whose limits keep whole markers at FPR 0 or 1 and F1 0 or 1.

    The FPR axis is :func:`rate_axis` symlog; both axes reach a little past the
    data's range (a negative FPR, an F1 above 1), where no tick is drawn, so a
    point on an edge is drawn whole instead of halved.
    """
    rate_axis(ax, linthresh=linthresh)
    ax.set_xlim(-0.3 * linthresh, 1.6)
    ax.set_ylim(-0.05, 1.07)
    ax.set_yticks(np.linspace(0, 1, 6))


def probit_ticks(ax: Axes, axis: str = "both", floor: float = 1e-4) -> None:
    """Label probit axes with rates in percent, from ``floor`` to ``1 - floor``.

    :func:`probit` draws rates of 0 and 1 at ``floor`` and ``1 - floor``; the
    limits reach a little past both so those points (and markers on them) are
    drawn whole, and the end ticks say where they are.
    """
    ticks = [floor, 0.001, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99, 1 - floor]
    labels = [f"{100 * t:g}%" for t in ticks]
    pos = probit(ticks, floor)
    lo, hi = float(pos[0]) - PROBIT_PAD, float(pos[-1]) + PROBIT_PAD
    if axis in ("x", "both"):
        ax.set_xticks(pos, labels)
        ax.set_xlim(lo, hi)
    if axis in ("y", "both"):
        ax.set_yticks(pos, labels)
        ax.set_ylim(lo, hi)
