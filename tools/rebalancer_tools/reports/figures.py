"""What every figure the tools draw has in common, so that each reads at a glance:

- one legend, outside the panels (right of them), naming every series once, so it never covers data;
- panels that share one axis share it for real (`sharex`): a time axis is the same in every panel;
- series that coincide (two policies giving a team the same quota) are all drawn, the later ones dashed over a
  wider faint first one, and the legend says "same as …", so "the same" is not mistaken for "missing";
- no empty panel: a figure draws the panels it has data for (the callers decide which);
- matplotlib with the Agg backend (no display), closed after saving.

Each figure is built by a function returning the Figure, saved by `save`: the tests check these properties on the
figure's own objects (tests/support/figures.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn, not when a command that may draw one loads
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend


def new_figure(rows: int = 1, *, width: float = 10, row_height: float = 3, sharex: bool = True,
               height_ratios: Sequence[float] | None = None) -> tuple[Figure, list[Axes]]:
    """A figure of `rows` panels stacked over one shared x axis, laid out so that a legend outside fits."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, row_height * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, 1, sharex=sharex, squeeze=False,
                        gridspec_kw={"height_ratios": list(height_ratios)} if height_ratios else None)
    return fig, [row[0] for row in axes]


def legend_outside(fig: Figure, axes: Sequence[Axes], *, title: str | None = None,
                   last: Sequence[str] = ()) -> Legend | None:
    """One legend for the figure, right of every panel, with each label once (the first series drawn with it);
    the labels in `last` (a reference line, not a series of the data) after the others."""
    seen: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    if not seen:
        return None
    seen = {**{k: v for k, v in seen.items() if k not in last}, **{k: seen[k] for k in last if k in seen}}
    return fig.legend(list(seen.values()), list(seen), loc="outside right upper", fontsize="small", frameon=False,
                      title=title, title_fontsize="small", alignment="left")


Series = tuple[str, Sequence[Any], Sequence[float]]  # name, x values, y values


def coinciding(series: Sequence[Series]) -> dict[str, str | None]:
    """For each named series, the name of the first earlier one with exactly the same points, or None."""
    out: dict[str, str | None] = {}
    for i, (name, xs, ys) in enumerate(series):
        out[name] = next((n for n, x, y in series[:i] if list(x) == list(xs) and list(y) == list(ys)), None)
    return out


def draw_distinct(ax: Axes, series: Sequence[Series], draw: Callable[..., Any], label: Callable[[str], str]) -> None:
    """Each series drawn with `draw(ax, name, xs, ys, label=…, **style)`: one that repeats an earlier series exactly is
    dashed over it (the earlier one wide and faint underneath), and its label says which it equals."""
    same = coinciding(series)
    repeats = {n: [m for m, t in same.items() if t == n] for n in set(same.values()) if n is not None}
    for name, xs, ys in series:
        twin = same[name]
        if twin is not None:  # dashes of equal series interleave: each one's dashes fill the others' gaps
            k, n = repeats[twin].index(name), len(repeats[twin])
            draw(ax, name, xs, ys, label=f"{label(name)} (same as {twin})", linestyle=(3 * k, (3, 3 * n)),
                 linewidth=1.6)
        elif name in repeats:
            draw(ax, name, xs, ys, label=label(name), linewidth=4.0, alpha=0.45)
        else:
            draw(ax, name, xs, ys, label=label(name), linewidth=1.4)


def time_axis(ax: Axes) -> None:
    """Dates on the x axis, labelled concisely (the day once, then the hours), so that no two labels overlap."""
    from matplotlib import dates

    locator = dates.AutoDateLocator(maxticks=10)  # type: ignore[no-untyped-call]  # matplotlib's stubs lack it
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]


def save(fig: Figure, path: Path | IO[bytes], *, dpi: int = 100) -> None:
    fig.savefig(path, dpi=dpi, format="png")
