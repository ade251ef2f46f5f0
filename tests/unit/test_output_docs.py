"""docs/output.md states the rules the code applies: its figures are the code's."""

from __future__ import annotations

from pathlib import Path

from rebalancer_tools.backtest import evidence
from rebalancer_tools.backtest.search import TOP
from rebalancer_tools.tables import MIN_WRAP

DOC = " ".join((Path(__file__).resolve().parents[2] / "docs" / "output.md").read_text().split())


def test_the_margin_and_the_thin_history_are_the_codes() -> None:
    assert f"under **{evidence.MIN_HOURS:g} h** of samples" in DOC
    assert evidence.STANDARD_ERRORS == 2
    assert "more than **two standard errors**" in DOC
    assert evidence.MIN_GAIN == 1
    assert "at least **one accelerator-hour**" in DOC
    assert TOP == 5
    assert "shows its best five trials" in DOC


def test_the_narrowest_wrapping_column_is_the_codes() -> None:
    assert f"every other one at {MIN_WRAP} characters" in DOC
