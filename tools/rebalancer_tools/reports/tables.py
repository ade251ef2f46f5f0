"""Tables for people and for programs from one description: its columns and its records.

For people (`rich`) a `Listing` lays itself out at the width it is printed at: a table whose wrapping cells wrap,
or, when even wrapped cells would not fit (every column that must not break at its full width, every other one at
`MIN_WRAP` characters), one block per record with a `header: value` line per column (a list). For programs, the
same records as JSON (a list of objects) or CSV (a header and one line per record; a list value joined with "; ").
A command keeps its own JSON where it had one (a richer record than the table shows); CSV is always the records.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

MIN_WRAP = 12  # the narrowest a wrapping column gets in a table; narrower than that, the rows become a list
Record = Mapping[str, Any]
Format = Literal["table", "json", "csv"]
FORMATS: tuple[Format, ...] = ("table", "json", "csv")


def shown(value: Any) -> str:
    """A value as a cell shows it: numbers without trailing zeros, nothing as "-", a list one item a line."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.1f}" if math.isfinite(value) and not value.is_integer() else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, list | tuple):
        return "\n".join(shown(v) for v in value)
    return str(value)


@dataclass(frozen=True, slots=True)
class Column:
    """One column for people. `key`: the record's field it shows (default: the header); `cell`: how, when it is more
    than that field (several fields, colour). `wrap=False`: never broken (names, times, amounts)."""

    header: str
    key: str = ""
    cell: Callable[[Record], str | Text] | None = None
    wrap: bool = True
    numeric: bool = False  # right-aligned and never broken

    def text(self, record: Record) -> Text:
        if self.cell is not None:
            value = self.cell(record)
            return value if isinstance(value, Text) else Text(value)
        return Text(shown(record.get(self.key or self.header)))

    @property
    def breaks(self) -> bool:
        return self.wrap and not self.numeric


@dataclass(frozen=True, slots=True)
class Listing:
    """A table: printed with rich it fits the width it is printed at (see the module's docstring)."""

    title: str
    columns: tuple[Column, ...]
    records: tuple[Record, ...]
    fields: tuple[str, ...] = ()  # JSON and CSV: these fields of each record (default: every one, first seen first)
    footer: tuple[str | Text, ...] = ()  # lines under the table (notes), in both layouts
    lines: bool = False  # a rule between rows (rows of several lines)

    # --- for people -------------------------------------------------------------------------------------------
    def cells(self) -> list[list[Text]]:
        return [[c.text(r) for c in self.columns] for r in self.records]

    def widths(self, cells: Sequence[Sequence[Text]]) -> tuple[list[int], list[int]]:
        """Per column, the narrowest it may be (an unbreakable column its widest cell, another MIN_WRAP or its
        longest word if shorter; a header wraps at spaces) and its natural width (no line wrapped)."""
        least, natural = [], []
        for i, c in enumerate(self.columns):
            header = max((cell_len(word) for word in c.header.split()), default=1)
            lines = [cell_len(line) for row in cells for line in row[i].plain.splitlines() or [""]]
            if c.breaks:
                longest = max((cell_len(word) for row in cells for word in row[i].plain.split()), default=1)
                least.append(min(max(longest, header), MIN_WRAP))
            else:
                least.append(max(max(lines, default=1), header))
            natural.append(max(max(lines, default=1), cell_len(c.header), least[-1]))
        return least, natural

    def frame(self) -> int:
        """Columns taken by the box: a line either side and between cells, a space either side of each cell."""
        return 3 * len(self.columns) + 1

    def needed_width(self, cells: Sequence[Sequence[Text]]) -> int:
        """The narrowest table that breaks no unbreakable cell and gives every other column MIN_WRAP (or its
        longest word, if shorter)."""
        return sum(self.widths(cells)[0]) + self.frame()

    def table(self, cells: Sequence[Sequence[Text]], width: int | None = None) -> Table:
        """The table at its natural width, or, when that exceeds `width`, with the room above every column's least
        width shared in proportion to what each would use beyond it (rich's own collapsing can leave a table wider
        than the width when columns must not break)."""
        least, natural = self.widths(cells)
        sizes: list[int | None] = [None] * len(self.columns)
        if width is not None and sum(natural) + self.frame() > width:
            room = max(0, width - self.frame() - sum(least))
            extra = [n - m for m, n in zip(least, natural, strict=True)]
            wanted = sum(extra) or 1
            sizes = [m + room * e // wanted for m, e in zip(least, extra, strict=True)]
        # Titles and headers are Text, never markup: a cluster or team name is shown as written.
        out = Table(title=Text(self.title) if self.title else None, title_justify="left", show_lines=self.lines,
                    box=box.HEAVY_HEAD)
        for c, size in zip(self.columns, sizes, strict=True):
            out.add_column(Text(c.header), justify="right" if c.numeric else "left", overflow="fold", width=size,
                           no_wrap=False)
        for row in cells:
            out.add_row(*row)
        return out

    def listed(self, cells: Sequence[Sequence[Text]], width: int) -> Group:
        """One block per record: its first column as a heading (a blank one continues the record above, as a run's
        later steps do), then `header: value` for the others, the values aligned when the width leaves them room
        (else each value follows its header and wraps under it)."""
        parts: list[RenderableType] = [Text(self.title, style="italic")] if self.title else []
        label = max(cell_len(c.header) for c in self.columns[1:]) + 1 if len(self.columns) > 1 else 0
        aligned = label + 3 + MIN_WRAP <= width
        for row in cells:
            heading = row[0].copy()
            heading.stylize("bold")
            parts.append(Text.assemble("• ", heading) if heading.plain.strip() else Text("  ·"))
            if aligned:
                grid = Table.grid(padding=(0, 1), pad_edge=True)
                grid.add_column(width=1)
                grid.add_column(no_wrap=True, style="dim")
                grid.add_column(overflow="fold")
                for c, value in zip(self.columns[1:], row[1:], strict=True):
                    grid.add_row("", Text(f"{c.header}:"), value)
                parts.append(grid)
            else:
                parts += [Text.assemble("  ", (f"{c.header}: ", "dim"), value, overflow="fold")
                          for c, value in zip(self.columns[1:], row[1:], strict=True)]
        return Group(*parts)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        cells = self.cells()
        if not self.records:
            yield Text(f"{self.title}: none") if self.title else Text("none")
        elif self.needed_width(cells) <= options.max_width:
            yield self.table(cells, options.max_width)
        else:
            yield self.listed(cells, options.max_width)
        yield from (Text(line) if isinstance(line, str) else line for line in self.footer)

    # --- for programs -----------------------------------------------------------------------------------------
    def keys(self) -> list[str]:
        if self.fields:
            return list(self.fields)
        seen: dict[str, None] = {}
        for r in self.records:
            seen.update(dict.fromkeys(r))
        return list(seen)

    def json(self) -> str:
        keys = self.keys()
        return json.dumps([{k: r.get(k) for k in keys} for r in self.records], indent=2, default=str,
                          allow_nan=False)

    def csv(self) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        keys = self.keys()
        writer.writerow(keys)
        for r in self.records:
            writer.writerow([_csv_value(r.get(k)) for k in keys])
        return buf.getvalue()

    def text_for(self, fmt: str) -> str:
        """JSON or CSV text (the table itself is printed through a console)."""
        if fmt == "json":
            return self.json()
        if fmt == "csv":
            return self.csv()
        raise ValueError(fmt)


def _csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return "; ".join(_csv_value(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)
