"""The table helper: whatever the columns, records and width, what it prints fits the width and breaks no word of a
cell up to MIN_WRAP long (wrapped in a table, or a list when too narrow), and its JSON and CSV carry the records
as given."""

from __future__ import annotations

import csv
import io
import json
import string

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from support.props import properties

from rebalancer_tools.reports.tables import MIN_WRAP, Column, Listing

WORD = st.text(alphabet=string.ascii_letters + string.digits + "→.:-_", min_size=1, max_size=3 * MIN_WRAP)
CELL = st.lists(WORD, min_size=1, max_size=8).map(" ".join)


@st.composite
def listings(draw: st.DrawFn) -> Listing:
    n = draw(st.integers(1, 7))
    headers = draw(st.lists(WORD.map(lambda w: w[:15]), min_size=n, max_size=n, unique=True))
    kinds = draw(st.lists(st.sampled_from(["wrap", "nowrap", "number"]), min_size=n, max_size=n))
    columns = tuple(Column(h, wrap=k == "wrap", numeric=k == "number") for h, k in zip(headers, kinds, strict=True))
    rows = draw(st.lists(st.tuples(*(st.integers(0, 10**6).map(str) if k == "number" else
                                     (CELL if k == "wrap" else WORD) for k in kinds)), min_size=1, max_size=5))
    return Listing(title=draw(CELL), columns=columns, records=tuple(dict(zip(headers, r, strict=True)) for r in rows))


def rendered(listing: Listing, width: int) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(listing)
    return console.export_text()


@properties(150)
@given(listings(), st.integers(20, 160))
def test_it_fits_the_width_and_every_word_of_every_cell_is_shown(listing: Listing, width: int) -> None:
    text = rendered(listing, width)
    assert max(len(line.rstrip()) for line in text.splitlines()) <= width
    flat = "".join(text.split())
    for record in listing.records:
        for value in record.values():
            for word in str(value).split():
                # A word up to MIN_WRAP long is never broken; a longer one (an ARN) may fold, after its start.
                assert (word if len(word) <= MIN_WRAP else word[:8]) in flat


@properties(60)
@given(listings())
def test_json_and_csv_hold_the_records(listing: Listing) -> None:
    assert json.loads(listing.json()) == [dict(r) for r in listing.records]
    rows = list(csv.DictReader(io.StringIO(listing.csv())))
    assert rows == [dict(r) for r in listing.records]


def test_a_table_when_it_fits_and_a_list_when_it_does_not() -> None:
    listing = Listing(title="t", columns=(Column("team", wrap=False), Column("pool", wrap=False),
                                          Column("why")),
                      records=({"team": "data-science", "pool": "ml.trn1.32xlarge", "why": "no demand " * 6},))
    wide = rendered(listing, 80)
    assert "┃ team" in wide
    assert "│ data-science │ ml.trn1.32xlarge │" in wide
    narrow = rendered(listing, 40)
    assert "• data-science" in narrow
    assert "pool: ml.trn1.32xlarge" in " ".join(narrow.split())
    assert "┃" not in narrow


def test_titles_headers_and_cells_are_shown_as_written_never_as_markup() -> None:
    listing = Listing(title="[bold]c1[/]", columns=(Column("[red]x[/]"),), records=({"[red]x[/]": "[blink]y"},))
    for width in (80, 20):
        text = rendered(listing, width)
        assert "[bold]c1[/]" in text
        assert "[blink]y" in text
