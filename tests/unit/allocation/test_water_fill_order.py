"""water_fill sorts its events as three columns (no tuple per event): the same order, hence the same floats to
the last bit, as sorting (level, Δslope, Δconstant) tuples, which is what it did before."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from support.props import properties

from rebalancer.engine.allocation import EPS, INF, water_fill


def tuple_water_fill(capacity: float, weights: list[float], floors: list[float],
                     ceilings: list[float]) -> list[float]:
    events: list[tuple[float, float, float]] = []
    const = 0.0
    for w, f, u in zip(weights, floors, ceilings, strict=True):
        const += f
        if w > 0:
            events.append((f / w, w, -f))
            if u < INF:
                events.append((u / w, -w, u))
    events.sort()
    slope, level = 0.0, INF
    for at, d_slope, d_const in events:
        if const + slope * at >= capacity - EPS and slope > 0:
            level = (capacity - const) / slope
            break
        slope += d_slope
        const += d_const
    else:
        if slope > EPS:
            level = (capacity - const) / slope
    finite = level < INF
    return [min(max((level * w if finite else INF) if w > 0 else 0.0, f), u)
            for w, f, u in zip(weights, floors, ceilings, strict=True)]


# Few distinct values, so that levels, slopes and constants tie often; fractional weights, so that the order of
# the additions shows in the last bits.
WEIGHTS = st.sampled_from([0.0, 0.1, 0.3, 1.0, 1.7, 2.0, 3.0])
AMOUNTS = st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.3, 7.0, INF])


@st.composite
def fills(draw: st.DrawFn) -> tuple[float, list[float], list[float], list[float]]:
    n = draw(st.integers(0, 12))
    weights = [draw(WEIGHTS) for _ in range(n)]
    floors = [draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])) for _ in range(n)]
    ceilings = [max(f, draw(AMOUNTS)) for f in floors]
    capacity = draw(st.floats(sum(floors), sum(floors) + 40, allow_nan=False)) if n else 0.0
    return capacity, weights, floors, ceilings


@properties(300)
@given(fills())
def test_water_fill_is_bit_for_bit_the_tuple_sort(fill: tuple[float, list[float], list[float], list[float]]) -> None:
    got, want = water_fill(*fill), tuple_water_fill(*fill)
    assert [math.copysign(1, x) for x in got] == [math.copysign(1, x) for x in want]  # even the sign of a zero
    assert got == want
