"""Where tables go: a terminal gets tables at its width (at least `minimum`); a pipe or a file gets rows that never
wrap, so `rebalancer history | grep` sees one line per record."""

from __future__ import annotations

import sys

from rich.console import Console

PIPED_WIDTH = 1000  # columns of a table written to a pipe: wide enough that no row folds


def console(minimum: int = 80) -> Console:
    if sys.stdout.isatty():
        return Console(width=max(Console().width, minimum))
    return Console(width=PIPED_WIDTH, soft_wrap=True)
