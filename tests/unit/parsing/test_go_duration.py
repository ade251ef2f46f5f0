"""Go's duration strings as Kubernetes objects carry them, read exactly as Go's time.ParseDuration reads them (its
grammar, its ASCII digits, its int64 nanoseconds): the cases of Go's own tests (src/time/time_test.go), what Go
refuses, and properties over the grammar. Only positive durations are run times."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.props import properties

from rebalancer.parsing.go_duration import go_duration, go_nanoseconds

NS, US, MS, S, M, H = 1, 1_000, 1_000_000, 1_000_000_000, 60_000_000_000, 3_600_000_000_000
MAX = (1 << 63) - 1
UNITS = {"ns": NS, "us": US, "µs": US, "μs": US, "ms": MS, "s": S, "m": M, "h": H}


@pytest.mark.parametrize(("text", "ns"), [  # Go's parseDurationTests
    ("0", 0), ("5s", 5 * S), ("30s", 30 * S), ("1478s", 1478 * S), ("-5s", -5 * S), ("+5s", 5 * S), ("-0", 0),
    ("+0", 0), ("5.0s", 5 * S), ("5.6s", 5 * S + 600 * MS), ("5.s", 5 * S), (".5s", 500 * MS), ("1.0s", S),
    ("1.00s", S), ("1.004s", S + 4 * MS), ("1.0040s", S + 4 * MS), ("100.00100s", 100 * S + MS), ("10ns", 10),
    ("11us", 11 * US), ("12\u00b5s", 12 * US), ("12\u03bcs", 12 * US), ("13ms", 13 * MS), ("14s", 14 * S),
    ("15m", 15 * M), ("16h", 16 * H), ("3h30m", 3 * H + 30 * M), ("10.5s4m", 4 * M + 10 * S + 500 * MS),
    ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)), ("1h2m3s4ms5us6ns", H + 2 * M + 3 * S + 4 * MS + 5 * US + 6),
    ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS), ("52763797000ns", 52763797000),
    ("0.3333333333333333333h", 20 * M), ("9007199254740993ns", (1 << 53) + 1), ("9223372036854775807ns", MAX),
    ("9223372036854775.807us", MAX), ("9223372036s854ms775us807ns", MAX), ("-9223372036854775808ns", -(1 << 63)),
    ("-9223372036854775.808us", -(1 << 63)), ("-9223372036s854ms775us808ns", -(1 << 63)),
    ("-2562047h47m16.854775808s", -(1 << 63)), ("0.100000000000000000000h", 6 * M),
    ("0.830103483285477580700h", 49 * M + 48 * S + 372539827),
])
def test_gos_own_cases_give_gos_nanoseconds(text: str, ns: int) -> None:
    assert go_nanoseconds(text) == ns


@pytest.mark.parametrize("text", [  # Go's parseDurationErrorTests, and what this project met
    "", "3", "-", "s", ".", "-.", ".s", "+.s", "1d", "\x85\x85", "\xffff", "hello \xffff world",
    "9223372036854775808ns", "9223372036854775.808us", "9223372036854ms775us808ns", "-9223372036854775809ns",
    "2562047h47m16.854775808s", "2562048h", "3000000h",
    "\u0664h", "\uff14h", "1\u0663m", "\u00b2s", "4h\u0665m",  # digits of other scripts, which int() reads
    "4 h", "4hours", "4H", "1h ", "1e3s", "+-1h", "1." * 40 + "h",
])
def test_what_go_refuses_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        go_nanoseconds(text)


@pytest.mark.parametrize(("text", "seconds"), [
    ("4h", 4 * 3600), ("1h30m", 5400), ("90m", 5400), ("1.5h", 5400), ("300s", 300), ("2h45m30s", 9930),
    ("500ms", 0.5), (".5h", 1800), ("+1h", 3600), ("1h0m0s", 3600), ("10us", 1e-5), ("10µs", 1e-5),
    ("2562047h", 2562047 * 3600), ("9223372036854775807ns", MAX / 1e9),
])
def test_a_run_time_is_read_in_seconds(text: str, seconds: float) -> None:
    assert go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["0", "0s", "-1h", "-0", "+0"])
def test_a_run_time_is_positive(text: str) -> None:
    with pytest.raises(ValueError, match="positive"):
        go_duration(text)


# The grammar Go's comment gives, `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, with its units and a part of at least one digit.
GRAMMAR = re.compile(r"[-+]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+", re.ASCII)
ALPHABET = st.sampled_from([*"0123456789", ".", "+", "-", "h", "m", "s", "n", "u", "µ", "μ", "d", " ",
                            "\u0664", "\uff15", "\u00b2", "\u0e51"])


@properties(300)
@given(st.lists(ALPHABET, max_size=12).map("".join))
def test_exactly_the_strings_of_gos_grammar_are_durations(text: str) -> None:
    refused = ""
    try:
        go_nanoseconds(text)
    except ValueError as e:
        refused = str(e)
    if refused:  # outside the grammar, or a value past Go's range
        assert GRAMMAR.fullmatch(text) is None or "Go's range" in refused
    else:  # Go's one special case: "0" (signed or not) needs no unit
        assert GRAMMAR.fullmatch(text) is not None or text.lstrip("+-") == "0"


@properties(200)
@given(st.lists(st.tuples(st.integers(0, 10**20), st.sampled_from(sorted(UNITS))), min_size=1, max_size=4))
def test_whole_parts_add_up_in_nanoseconds_and_past_int64_are_refused(parts: list[tuple[int, str]]) -> None:
    text = "".join(f"{n}{unit}" for n, unit in parts)
    total = sum(n * UNITS[unit] for n, unit in parts)
    if total <= MAX:
        assert go_nanoseconds(text) == total
    else:
        with pytest.raises(ValueError, match="Go's range"):
            go_nanoseconds(text)


@properties(80)
@given(st.integers(0, 10**6), st.integers(0, 59), st.integers(0, 59))
def test_hours_minutes_and_seconds_add_up(h: int, m: int, s: int) -> None:
    text = f"{h}h{m}m{s}s"
    if h == m == s == 0:
        with pytest.raises(ValueError, match="positive"):
            go_duration(text)
    else:
        assert go_duration(text) == h * 3600 + m * 60 + s
