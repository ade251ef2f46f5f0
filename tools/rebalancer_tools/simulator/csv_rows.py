"""Reading the simulator's small hand-written CSV files (teams, node events): fixed leading columns, one clear
InvalidInput naming `file:line` for an unreadable file, a wrong header or a short row."""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rebalancer.errors import InvalidInput
from rebalancer.parsing.loading import read_text
from rebalancer.parsing.text import short

CSV_MAX_BYTES = 16 * 1024 * 1024  # teams and node events are hand-written; traces have their own limit
TRACE_MAX_BYTES = 512 * 1024 * 1024  # the whole Philly trace is ~10 MB


def csv_reader_rows(reader: Any, source: str) -> Iterator[list[str]]:
    """The rows of a csv.reader, its own errors (a NUL byte, a field above the csv module's limit) as InvalidInput
    naming `source:line`."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise InvalidInput(f"not valid CSV: {short(str(e), 120)}", source=f"{source}:{reader.line_num}") from None
        yield row


def csv_rows(path: str | Path, what: str, header: Sequence[str],
             optional: str | None = None) -> Iterator[tuple[str, list[str]]]:
    """(`file:line`, the row's first len(header) cells, stripped) for each non-blank row after the header. With
    `optional`, a column that may follow the header's: its cell is appended ('' when the file has no such column)."""
    p = Path(path)
    text = read_text(p, what=what, max_bytes=CSV_MAX_BYTES)
    reader = csv.reader(text.splitlines())
    got = [h.strip() for h in next(csv_reader_rows(reader, str(p)), [])]
    if got[:len(header)] != list(header):
        raise InvalidInput(f"expected the header {','.join(header)}, got {short(','.join(got))}", source=f"{p}:1",
                           field="header", value=got)
    has_optional = optional is not None and got[len(header):len(header) + 1] == [optional]
    width = len(header) + has_optional
    for row in csv_reader_rows(reader, str(p)):
        where = f"{p}:{reader.line_num}"
        if not row or not "".join(row).strip():
            continue
        if len(row) < width:
            raise InvalidInput(f"expected {width} columns, got {len(row)}", source=where, value=row)
        cells = [c.strip() for c in row[:width]]
        yield where, [*cells, ""] if optional is not None and not has_optional else cells
