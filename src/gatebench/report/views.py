"""A figure as the report pages show it: drawn (inline SVG and words) or absent, with why.

Its own module because both pages read it: :mod:`gatebench.report.html`
builds and shows the views, :mod:`gatebench.report.markdown` lists the absent ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from gatebench.report.figures import FigureSpec

__all__ = ["FigureView"]


@dataclass(frozen=True)
class FigureView:
    """One figure as the template shows it: inline SVG with words, or the reason it is absent."""

    spec: FigureSpec
    title: str = ""
    svg: Markup | None = None
    alt: str = ""
    caption: str = ""
    absent: str = ""
    files: tuple[str, ...] = ()
