"""Where a drawn figure's artists landed: the problems a reader sees as clipping or overlap.

Everything is measured in display pixels after one Agg draw (which runs
constrained layout), so the checks see the same geometry the saved PNG has.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Tick
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from matplotlib.transforms import Bbox

#: Anti-aliasing and rounding slack, in pixels.
TOL = 1.0
#: A subscript written as plain text (θ_op) that mathtext or Unicode should set.
RAW_SUBSCRIPT = re.compile(r"[θρσκ]\*?_|\bp_[a-zŷ]")
_NO_MARKER = {None, "None", "none", "", " "}


def draw(fig: Figure) -> RendererBase:
    """Draw once on an Agg canvas (constrained layout runs here) and return its renderer."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def _outside(x: np.ndarray, y: np.ndarray, r: np.ndarray, box: Bbox) -> np.ndarray:
    return (
        (x - r < box.x0 - TOL)
        | (x + r > box.x1 + TOL)
        | (y - r < box.y0 - TOL)
        | (y + r > box.y1 + TOL)
    )


def _points(fig: Figure, ax: Axes) -> Iterator[tuple[str, np.ndarray, np.ndarray, bool]]:
    """``(name, display xy, marker radius px, in data coordinates)`` per data artist."""
    px_per_pt = fig.dpi / 72
    for line in ax.get_lines():
        xy = np.asarray(line.get_xydata(), float)
        if not line.get_visible() or xy.size == 0:
            continue
        xy = xy[np.isfinite(xy).all(axis=1)]
        marker = line.get_marker()
        r = 0.0 if marker in _NO_MARKER else line.get_markersize() / 2 * px_per_pt
        name = f"Line2D {line.get_label()!r}"
        yield (
            name,
            line.get_transform().transform(xy),
            np.full(len(xy), r),
            (line.get_transform() == ax.transData),
        )
    for coll in ax.collections:
        if not isinstance(coll, PathCollection) or not coll.get_visible():
            continue
        offsets = np.asarray(coll.get_offsets(), float)
        if offsets.size == 0:
            continue
        sizes = np.asarray(coll.get_sizes(), float)
        sizes = np.resize(sizes if sizes.size else np.array([36.0]), len(offsets))
        keep = np.isfinite(offsets).all(axis=1)
        xy = coll.get_offset_transform().transform(offsets[keep])
        name = f"PathCollection {coll.get_label()!r}"
        yield name, xy, np.sqrt(sizes[keep]) / 2 * px_per_pt, True


def clipped_points(fig: Figure) -> list[str]:
    """Line2D and scatter points (markers whole) that fall outside their axes."""
    problems = []
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible() or not ax.axison:
            continue
        box = ax.bbox
        for name, xy, r, _ in _points(fig, ax):
            bad = _outside(xy[:, 0], xy[:, 1], r, box)
            if bad.any():
                inv = ax.transData.inverted().transform(xy[bad][:3])
                problems.append(
                    f"axes {i} ({ax.get_title()!r}): {name} has {int(bad.sum())} of "
                    f"{len(xy)} points outside the axes, e.g. {inv.round(4).tolist()}"
                )
    return problems


def _texts(fig: Figure) -> Iterator[Text]:
    """Visible, non-empty texts other than tick labels (see :func:`escaped_texts`)."""
    ticks = {id(t) for tick in fig.findobj(Tick) for t in (tick.label1, tick.label2)}
    for t in fig.findobj(Text):
        if id(t) not in ticks and t.get_visible() and t.get_text().strip():
            yield t


def escaped_texts(fig: Figure, renderer: RendererBase) -> list[str]:
    """Legends and texts (titles, labels, ticks, annotations) that leave the figure."""
    box = fig.bbox
    problems = []
    legends: list[Legend] = list(fig.legends)
    legends += [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    for leg in legends:
        ext = leg.get_window_extent(renderer)
        if not _inside(ext, box):
            problems.append(f"legend {_bounds(ext)} leaves the figure {_bounds(box)}")
    for t in _texts(fig):
        ext = t.get_window_extent(renderer)
        if ext.width > 0 and not _inside(ext, box):
            problems.append(f"text {t.get_text()!r} {_bounds(ext)} leaves the figure")
    # Tick labels outside the view limits exist but are never drawn: the axis'
    # tight box holds just the drawn ones (and the axis label).
    for i, ax in enumerate(fig.axes):
        for axis in (ax.xaxis, ax.yaxis):
            ext = axis.get_tightbbox(renderer) if ax.axison else None
            if ext is not None and ext.width > 0 and not _inside(ext, box):
                problems.append(
                    f"axes {i}: {axis.axis_name} tick labels {_bounds(ext)} leave the figure"
                )
    return problems


def legends_over_data(fig: Figure, renderer: RendererBase) -> list[str]:
    """Legends placed inside an axes that cover its data (points, bars, histogram)."""
    problems = []
    for i, ax in enumerate(fig.axes):
        leg = ax.get_legend()
        if leg is None or not leg.get_visible():
            continue
        box = leg.get_window_extent(renderer)
        for name, xy, _, in_data in _points(fig, ax):
            if in_data and _within(xy, box).any():
                problems.append(f"axes {i}: the legend covers points of {name}")
        for patch in ax.patches:
            if patch.get_data_transform() != ax.transData or not patch.get_visible():
                continue  # spans and other axes-fraction shapes are backdrop, not data
            if isinstance(patch, Rectangle):
                ext = patch.get_window_extent(renderer)
                if ext.height > 0 and _overlap(ext, box):
                    problems.append(f"axes {i}: the legend covers a bar {_bounds(ext)}")
                    break
            else:
                xy = patch.get_transform().transform(patch.get_path().vertices)
                if _within(xy, box).any():
                    problems.append(f"axes {i}: the legend covers a {type(patch).__name__}")
                    break
    return problems


def raw_subscripts(fig: Figure) -> list[str]:
    """Texts that spell a subscript as ``_`` outside mathtext (θ_op rather than θₒₚ)."""
    out = []
    for t in _texts(fig):
        plain = re.sub(r"\$[^$]*\$", "", t.get_text())
        if RAW_SUBSCRIPT.search(plain):
            out.append(t.get_text())
    return out


def _inside(inner: Bbox, outer: Bbox) -> bool:
    return bool(
        inner.x0 >= outer.x0 - TOL
        and inner.y0 >= outer.y0 - TOL
        and inner.x1 <= outer.x1 + TOL
        and inner.y1 <= outer.y1 + TOL
    )


def _within(xy: np.ndarray, b: Bbox) -> np.ndarray:
    x, y = xy[:, 0], xy[:, 1]
    return (x > b.x0) & (x < b.x1) & (y > b.y0) & (y < b.y1)


def _overlap(a: Bbox, b: Bbox) -> bool:
    # Any shared area counts: histogram bars can be under a pixel wide.
    return bool(min(a.x1, b.x1) > max(a.x0, b.x0) and min(a.y1, b.y1) > max(a.y0, b.y0))


def _bounds(b: Bbox) -> str:
    return f"[{b.x0:.0f}, {b.y0:.0f}, {b.x1:.0f}, {b.y1:.0f}]"


def problems(fig: Figure) -> list[str]:
    """Every layout problem of one figure, as readable lines (empty when it is clean)."""
    renderer = draw(fig)
    return (
        clipped_points(fig)
        + escaped_texts(fig, renderer)
        + legends_over_data(fig, renderer)
        + [f"raw subscript in {t!r}" for t in raw_subscripts(fig)]
    )


__all__ = [
    "clipped_points",
    "draw",
    "escaped_texts",
    "legends_over_data",
    "problems",
    "raw_subscripts",
]
