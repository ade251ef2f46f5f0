"""Where tables go. A terminal gets them at its width; so does any output when COLUMNS says how wide to be
(`COLUMNS=60 rebalancer history | less`); a pipe or a file otherwise gets rows that never wrap, so
`rebalancer history | grep` sees one line per record. Every table can also be printed as JSON or CSV
(`--format json|csv`, tables.Listing), for programs."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.console import Console, RenderableType

from rebalancer_tools.reports.tables import FORMATS, Format, Listing

PIPED_WIDTH = 1000  # columns of a table written to a pipe: wide enough that no row folds
PROSE_WIDTH = 100  # columns of messages written to a pipe or a file (a URL is still printed whole)
MIN_WIDTH = 20  # a COLUMNS below this is taken as this (a list still reads at 20)
F = TypeVar("F", bound=Callable[..., Any])


def width() -> int | None:
    """The columns to lay out in: $COLUMNS when set to a number, else the terminal's; None for a pipe or a file."""
    given = os.environ.get("COLUMNS", "").strip()
    if given.isdigit() and int(given) > 0:
        return max(int(given), MIN_WIDTH)
    if sys.stdout.isatty():
        return Console().width
    return None


def console(*, stderr: bool = False) -> Console:
    columns = width()
    if columns is None:
        return Console(width=PIPED_WIDTH, soft_wrap=True, stderr=stderr)
    return Console(width=columns, stderr=stderr)


def prose_console() -> Console:
    """For messages (emails, Slack posts, their rules and boxes): the terminal's width, else PROSE_WIDTH. Unlike a
    table's rows, prose folds well, and a rule or a box as wide as PIPED_WIDTH fills a file with lines of 1,000
    box characters."""
    return Console(width=width() or PROSE_WIDTH)


def format_option(*, default: Format = "table", extra: tuple[str, ...] = ()) -> Callable[[F], F]:
    """`--format table|json|csv` (and a command's own, e.g. `text`)."""
    choices = [*extra, *FORMATS] if extra else list(FORMATS)
    return click.option("--format", "fmt", type=click.Choice(choices), default=default, show_default=True,
                        help="table for people (fits the terminal); json or csv for programs.")


def emit(listing: Listing, fmt: str, *extra: RenderableType) -> None:
    """The listing in `fmt`: a table (then `extra`, e.g. notes) on the console, else its JSON or CSV alone."""
    if fmt in ("json", "csv"):
        click.echo(listing.text_for(fmt), nl=fmt == "json")
        return
    out = console()
    out.print(listing)
    for part in extra:
        out.print(part)


def print_url(label: str, url: str, out: Console | None = None) -> None:
    """A URL on a line of its own, never broken by the console: a terminal wraps it, a copy of it is whole."""
    target = out or console()
    if label:
        target.print(label, highlight=False, markup=False)
    target.print(url, soft_wrap=True, highlight=False, markup=False)
