"""The output page (docs/cli/output.md) and the backtest page's "When a history proves too little"
(docs/cli/backtest.md) state the rules the code applies: their figures are the code's."""

from __future__ import annotations

from support import docs

from rebalancer_tools.backtest import evidence
from rebalancer_tools.backtest.search import TOP
from rebalancer_tools.reports.tables import MIN_WRAP

OUTPUT = docs.flat(docs.page("cli/output.md"))
BACKTEST = docs.flat(docs.page("cli/backtest.md"))


def test_the_margin_and_the_thin_history_are_the_codes() -> None:
    assert f"under **{evidence.MIN_HOURS:g} h** of samples" in BACKTEST
    assert evidence.STANDARD_ERRORS == 2
    assert "more than **two standard errors**" in BACKTEST
    assert evidence.MIN_GAIN == 1
    assert "at least **one accelerator-hour**" in BACKTEST
    assert TOP == 5
    assert "shows its best five trials" in BACKTEST


def test_the_narrowest_wrapping_column_is_the_codes() -> None:
    assert f"every other one at {MIN_WRAP} characters" in OUTPUT
