"""Reading the simulator's small hand-written CSV files (teams, node events): fixed leading columns, one clear
InvalidInput naming `file:line` for an unreadable file, a wrong header or a short row."""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from pathlib import Path

from rebalancer.errors import InvalidInput


def csv_rows(path: str | Path, what: str, header: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
    """(`file:line`, the row's first len(header) cells, stripped) for each non-blank row after the header."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise InvalidInput(f"cannot read {what}: {e.strerror}", source=str(p)) from None
    reader = csv.reader(text.splitlines())
    got = [h.strip() for h in next(reader, [])]
    if got[:len(header)] != list(header):
        raise InvalidInput(f"expected the header {','.join(header)}, got {','.join(got)!r}", source=f"{p}:1",
                           field="header", value=got)
    for row in reader:
        where = f"{p}:{reader.line_num}"
        if not row or not "".join(row).strip():
            continue
        if len(row) < len(header):
            raise InvalidInput(f"expected {len(header)} columns, got {len(row)}", source=where, value=row)
        yield where, [c.strip() for c in row[:len(header)]]
