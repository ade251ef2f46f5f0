"""Go's duration strings as Kubernetes objects carry them (time.ParseDuration's grammar), read as seconds; what Go
refuses, and what is not a positive duration, refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.props import properties

from rebalancer.parsing.go_duration import go_duration


@pytest.mark.parametrize(("text", "seconds"), [
    ("4h", 4 * 3600), ("1h30m", 5400), ("90m", 5400), ("1.5h", 5400), ("300s", 300), ("2h45m30s", 9930),
    ("500ms", 0.5), (".5h", 1800), ("+1h", 3600), ("1h0m0s", 3600), ("10us", 1e-5), ("10µs", 1e-5),
])
def test_a_go_duration_is_read_as_go_reads_it(text: str, seconds: float) -> None:
    assert go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "4", "0s", "0", "-1h", "+", "+-1h", "4 h", "4hours", "1d", "h", "1h ", "1e3s",
                                  "4H", "1." * 40 + "h"])
def test_what_go_would_refuse_or_is_not_a_positive_duration_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        go_duration(text)


@properties(80)
@given(st.integers(0, 10**6), st.integers(0, 59), st.integers(0, 59))
def test_hours_minutes_and_seconds_add_up(h: int, m: int, s: int) -> None:
    text = f"{h}h{m}m{s}s"
    if h == m == s == 0:
        with pytest.raises(ValueError, match="positive"):
            go_duration(text)
    else:
        assert go_duration(text) == h * 3600 + m * 60 + s
