"""What a figure must be to read at a glance, checked on the figure's own matplotlib objects (drawn with Agg):

- every panel shows data (no empty axes);
- every series is labelled and its label is in a legend, or it is shaded by a colour map keyed by a colorbar;
- no legend overlaps a panel (legends outside the data);
- the panels share one x axis;
- series that coincide are all visible (another line style or width) and the later ones say "same as".
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import Collection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D


def panels(fig: Figure) -> list[Axes]:
    """The axes that show data (a colorbar's axes is a key, not a panel)."""
    return [ax for ax in fig.axes if ax.get_visible() and ax.axison and not hasattr(ax, "_colorbar")]


def _has_data(artist: Any) -> bool:
    if isinstance(artist, Line2D):
        return len(artist.get_xdata()) > 0
    if isinstance(artist, Collection):
        return any(len(p.vertices) for p in artist.get_paths())
    return True


def series(ax: Axes) -> list[Any]:
    """The artists that draw data: lines, filled areas, line collections, bar containers."""
    return [a for a in (*ax.lines, *ax.collections) if _has_data(a)] + list(ax.containers)


def legend_texts(fig: Figure) -> set[str]:
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]
    return {t.get_text() for legend in legends for t in legend.get_texts()}


def _dashes(line: Line2D) -> tuple[Any, ...]:
    """The dash offset and pattern as drawn (read only: get_linestyle says "--" for every dashed style, so two lines
    whose dashes interleave would look alike to it)."""
    offset, pattern = line._unscaled_dash_pattern
    return (offset, tuple(pattern) if pattern is not None else None)


def problems(fig: Figure) -> list[str]:
    """Every way `fig` fails the rules above (empty: it passes)."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    out = []
    axes = panels(fig)
    if not axes:
        return ["no panel"]
    texts = legend_texts(fig)
    for i, ax in enumerate(axes):
        drawn = series(ax)
        if not drawn:
            out.append(f"panel {i} is empty")
        for a in drawn:
            if getattr(a, "colorbar", None) is not None:
                continue  # shaded by a colour map: its colorbar is its key
            label = a.get_label()
            if not label or label.startswith("_"):
                out.append(f"panel {i}: a {type(a).__name__} has no label")
            elif label not in texts:
                out.append(f"panel {i}: {label!r} is in no legend")
        if i and not ax.get_shared_x_axes().joined(axes[0], ax):
            out.append(f"panel {i} does not share the first panel's x axis")
        lines = [line for line in ax.lines if len(line.get_xdata())]
        for j, later in enumerate(lines):
            for earlier in lines[:j]:
                same = np.array_equal(np.asarray(later.get_xdata(), dtype=object),
                                      np.asarray(earlier.get_xdata(), dtype=object)) and \
                    np.array_equal(np.asarray(later.get_ydata(), dtype=float),
                                   np.asarray(earlier.get_ydata(), dtype=float))
                if not same:
                    continue
                if _dashes(later) == _dashes(earlier) and later.get_linewidth() == earlier.get_linewidth():
                    out.append(f"panel {i}: {later.get_label()!r} hides {earlier.get_label()!r} (same data, "
                               "same style)")
                if "same as" not in later.get_label():
                    out.append(f"panel {i}: {later.get_label()!r} coincides with {earlier.get_label()!r} and "
                               "does not say so")
    boxes = [ax.get_window_extent(renderer) for ax in axes]
    for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]:
        extent = legend.get_window_extent(renderer)
        if any(extent.overlaps(b) for b in boxes):
            out.append(f"the legend {[t.get_text() for t in legend.get_texts()][:3]}… covers a panel")
    return out
