"""Free text made safe where it enters (`clean_text`) and where it is shown (`printable`), issue 25 item 5."""

from __future__ import annotations

import io
import unicodedata
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from support.props import properties

from rebalancer.parsing.text import UNSAFE_CATEGORIES, bounded_lines, clean_text, cut_utf8, printable
from rebalancer_tools.cli.history_cmd import history_table


@pytest.mark.parametrize(("raw", "clean"), [
    ("alice@example.com", "alice@example.com"),
    ("  eve\n\rforged line\t ", "eve forged line"),
    ("\x1b[31mred\x1b[0m", "[31mred[0m"),
    ("abc\u202edcba\u2066x\u2069", "abcdcbax"),
    ("zero\u200bwidth\ufeff", "zerowidth"),
    ("line\u2028sep\u2029para", "line sep para"),
    ("e\u0301", "\u00e9"),
    ("\ud800lone surrogate", "lone surrogate"),
])
def test_clean_text_drops_what_can_forge_lines_or_reorder_text(raw: str, clean: str) -> None:
    assert clean_text(raw, 80) == clean


@pytest.mark.parametrize("value", [None, 7, 1.5, ["a"], {"a": "b"}, b"bytes", True])
def test_clean_text_of_a_value_that_is_not_a_string_is_empty(value: Any) -> None:
    assert clean_text(value, 80) == ""


@properties(200)
@given(st.text(), st.integers(1, 100))
def test_clean_text_is_one_safe_line_within_its_limit(raw: str, limit: int) -> None:
    out = clean_text(raw, limit)
    assert len(out) <= limit
    assert not any(unicodedata.category(ch) in UNSAFE_CATEGORIES for ch in out)
    assert out == out.strip()
    assert "\n" not in out
    assert "  " not in out


def test_printable_shows_escapes_instead_of_acting_on_them() -> None:
    assert printable("a\x1b[2Jb\u202ec\nd") == "a\\x1b[2Jb\\u202ec\\nd"
    assert printable(12) == "12"


def test_history_prints_recorded_text_without_forged_lines_escapes_or_markup() -> None:
    records = [{"execution": "c1-20261130T120000", "at": "2026-11-30T12:00:05+00:00", "kind": "approval",
                "outcome": "approved", "who": "eve\n12:00:06 apply applied [bold red]admin[/]\x1b[2J\u202e",
                "before": {"a\x1b[5m": {"ml.p5.48xlarge": 8}}, "after": {"a\x1b[5m": {"ml.p5.48xlarge": 2}}}]
    out = io.StringIO()
    Console(file=out, width=200, force_terminal=True, color_system=None).print(history_table(records, "c1\x1b"))
    text = out.getvalue()
    assert "\x1b[2J" not in text
    assert "\u202e" not in text
    assert "\\x1b[2J" in text
    assert "[bold red]admin[/]" in text  # shown as typed, not as markup
    rows = [line for line in text.splitlines() if "12:00:06" in line]
    assert len(rows) == 1
    assert "eve\\n12:00:06" in rows[0]


@properties(200)
@given(st.text(), st.integers(4, 300))
def test_cut_utf8_is_the_text_or_its_longest_prefix_that_fits_with_an_ellipsis(text: str, max_bytes: int) -> None:
    out = cut_utf8(text, max_bytes)
    assert len(out.encode("utf-8", "replace")) <= max_bytes
    if len(text.encode("utf-8", "replace")) <= max_bytes:
        assert out == text
    else:
        assert out.endswith("…")
        assert text.startswith(out[:-1])
        assert len((text[:len(out)]).encode("utf-8", "replace")) > max_bytes - len("…".encode())


@properties(200)
@given(st.lists(st.sampled_from(["a", "b", "é" * 40, "line\n" * 30, ""]) | st.text(max_size=80), max_size=60),
       st.integers(1, 10), st.integers(8, 64))
def test_bounded_lines_are_distinct_cut_and_counted(lines: list[str], limit: int, line_bytes: int) -> None:
    out = bounded_lines(lines, limit=limit, line_bytes=line_bytes, rest="… and {n} more")
    distinct = list(dict.fromkeys(cut_utf8(line, line_bytes) for line in lines))
    assert len(out) == min(len(distinct), limit)
    if len(distinct) <= limit:
        assert out == distinct
    else:
        assert out[:-1] == distinct[:limit - 1]
        dropped = len(lines) - sum(1 for line in lines if cut_utf8(line, line_bytes) in distinct[:limit])
        assert out[-1] == f"… and {dropped + 1} more"
    assert all(len(line.encode()) <= line_bytes for line in out[:limit - 1])
