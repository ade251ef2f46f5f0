"""Metering arithmetic: readings split into own and borrowed use, and facts integrated exactly over any window."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.clock import T0
from support.clusters import snapshot
from support.props import properties

from rebalancer.budgets.metering import Fact, Reading, budget_usage, fact_between, hours_in, reading_of
from rebalancer.domain.budget import Budget

P5, TRN = "ml.p5.48xlarge", "ml.trn1.32xlarge"


def test_use_above_the_quota_is_borrowed() -> None:
    snap = snapshot({P5: 4, TRN: 2}, quotas={"research": {P5: 8}, "training": {P5: 24, TRN: 32}},
                    in_use={"research": {P5: 16}, "training": {P5: 8, TRN: 4}})
    assert reading_of(snap).rates == {"research": {P5: (8, 8)}, "training": {P5: (8, 0), TRN: (4, 0)}}


def test_a_team_without_a_quota_borrows_everything_it_runs() -> None:
    snap = snapshot({P5: 4}, in_use={"newcomer": {P5: 8}})
    assert reading_of(snap).rates == {"newcomer": {P5: (0, 8)}}


def _reading(at: datetime, own: float, borrowed: float = 0.0) -> Reading:
    return Reading(at=at, rates={"research": {P5: (own, borrowed)}})


def test_a_steady_quarter_hour_of_eight_gpus_is_two_accelerator_hours() -> None:
    fact = fact_between(_reading(T0, 8), _reading(T0 + timedelta(minutes=15), 8))
    assert fact is not None
    assert not fact.estimated
    assert fact.hours(T0, T0 + timedelta(hours=1)) == {"research": {P5: (2.0, 0.0)}}


def test_a_gap_longer_than_two_runs_is_filled_in_and_marked_estimated() -> None:
    fact = fact_between(_reading(T0, 0), _reading(T0 + timedelta(hours=4), 8))
    assert fact is not None
    assert fact.estimated
    assert fact.hours(T0, T0 + timedelta(hours=4))["research"][P5] == (pytest.approx(16.0), 0.0)


@pytest.mark.parametrize("delta", [timedelta(0), timedelta(minutes=-5)])
def test_a_reading_that_is_not_later_counts_nothing(delta: timedelta) -> None:
    assert fact_between(_reading(T0, 8), _reading(T0 + delta, 8)) is None


rates = st.floats(min_value=0, max_value=512, allow_nan=False)


@properties(200)
@given(o0=rates, o1=rates, b0=rates, b1=rates, minutes=st.integers(1, 60 * 24 * 40),
       cut=st.floats(min_value=0, max_value=1))
def test_the_parts_of_an_interval_add_up_to_the_whole(o0: float, o1: float, b0: float, b1: float, minutes: int,
                                                      cut: float) -> None:
    end = T0 + timedelta(minutes=minutes)
    fact = Fact(start=T0, end=end, at_start={"t": {P5: (o0, b0)}}, at_end={"t": {P5: (o1, b1)}})
    middle = T0 + (end - T0) * cut
    whole = fact.hours(T0, end).get("t", {}).get(P5, (0.0, 0.0))
    parts = [fact.hours(T0, middle).get("t", {}).get(P5, (0.0, 0.0)),
             fact.hours(middle, end).get("t", {}).get(P5, (0.0, 0.0))]
    for k in (0, 1):
        assert parts[0][k] + parts[1][k] == pytest.approx(whole[k], rel=1e-9, abs=1e-6)
    assert whole[0] == pytest.approx((o0 + o1) / 2 * minutes / 60, rel=1e-9, abs=1e-6)


def test_usage_counts_only_the_budget_scope_and_costs_by_accelerator() -> None:
    fact = Fact(start=T0, end=T0 + timedelta(hours=2), at_start={"r": {P5: (8, 0), TRN: (16, 0)}},
                at_end={"r": {P5: (8, 8), TRN: (16, 0)}})
    used = hours_in([fact], T0, T0 + timedelta(hours=2))["r"]
    p5_only = budget_usage(used, Budget(money=1000, scope="ml.p5"), "2026-11", {P5: 80.0})
    assert p5_only.accelerator_hours == pytest.approx(24)  # 16 own + 8 borrowed
    assert p5_only.borrowed_hours == pytest.approx(8)
    assert p5_only.cost == pytest.approx(24 * 80.0 / 8)
    everything = budget_usage(used, Budget(money=1000), "2026-11", {P5: 80.0})
    assert everything.accelerator_hours == pytest.approx(24 + 32)
    assert everything.unpriced == (TRN,)
