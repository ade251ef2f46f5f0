"""A team's standing over the fair-share window: per instance type the accelerator-hours it received against its
weighted share of what the teams that count received there (the same teams and shares the window's weights use),
and its budget."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.clusters import policy, snapshot
from support.props import properties

from rebalancer.domain.budget import BudgetUsage
from rebalancer.domain.outlook import PoolStanding, Standing
from rebalancer.planning.standing import WEEK_HOURS, standings, window_hours
from rebalancer.planning.why import standing_lines

P5, TRN1 = "ml.p5.48xlarge", "ml.trn1.32xlarge"


def test_received_against_the_weighted_share_of_what_the_teams_that_count_received() -> None:
    pol = policy({"a": {"weight": 3}, "b": {}, "c": {}, "d": {"weight": 0}})
    snap = snapshot({P5: 8}, quotas={"a": {P5: 32}, "b": {P5: 16}, "c": {P5: 16}, "d": {P5: 8}},
                    pending={"a": {P5: 8}, "b": {P5: 8}, "d": {P5: 8}})
    got = standings(snap, pol, {"a": {P5: 300.0}, "b": {P5: 500.0}, "d": {P5: 200.0}}, {})
    # a and b count (weight, and demand or use): 800 h between them, a's share 3/4, b's 1/4; c (no demand, no
    # use) and d (weight 0) are entitled to nothing counted
    assert got["a"].pools == (PoolStanding(pool=P5, received_hours=300.0, entitled_hours=600.0),)
    assert got["b"].pools == (PoolStanding(pool=P5, received_hours=500.0, entitled_hours=200.0),)
    assert got["c"].pools == (PoolStanding(pool=P5, received_hours=0.0, entitled_hours=None, uncounted="idle"),)
    assert got["d"].pools == (PoolStanding(pool=P5, received_hours=200.0, entitled_hours=None, uncounted="weight"),)
    assert {s.window_hours for s in got.values()} == {WEEK_HOURS}


def test_the_policys_window_and_each_type_apart_with_the_budget() -> None:
    pol = policy({"a": {"budget": {"accelerator_hours": 1000}}, "b": {}}, fairness={"window_hours": 24})
    assert window_hours(pol) == 24
    snap = snapshot({P5: 8, TRN1: 2}, quotas={"a": {P5: 8, TRN1: 16}, "b": {P5: 8}}, pending={"b": {P5: 8}})
    got = standings(snap, pol, {"a": {P5: 100.0, TRN1: 40.0}}, {"a": BudgetUsage(period="2026-11",
                                                                               accelerator_hours=500)})
    assert got["a"].pools == (PoolStanding(pool=P5, received_hours=100.0, entitled_hours=50.0),
                              PoolStanding(pool=TRN1, received_hours=40.0, entitled_hours=40.0))
    assert got["a"].budget == "budget 50 % used (500 of 1,000 accelerator-hours, 2026-11)"
    assert got["b"].budget is None


def test_nothing_used_over_the_window_counts_no_share_yet_and_says_so() -> None:
    # right after the first run: a team with a weight and work running is not told it has neither
    got = standings(snapshot({P5: 8}, quotas={"a": {P5: 8}}, pending={"a": {P5: 8}}), policy({"a": {"weight": 3}}),
                    {}, {})
    assert got["a"].pools == (PoolStanding(pool=P5, received_hours=0.0, entitled_hours=None, uncounted="unused"),)
    [line] = standing_lines(got["a"])[1:]
    assert line == f"  {P5}: received 0.0 accelerator-hours (no share yet: no use of this pool recorded over the " \
                   "window, each run records it)"


@properties(200)
@given(st.floats(0, 5e4, allow_nan=False), st.floats(0, 5e4, allow_nan=False))
def test_the_percentage_said_is_the_quotient_of_the_figures_said(received: float, entitled: float) -> None:
    pool = PoolStanding(pool=P5, received_hours=round(received, 1), entitled_hours=round(entitled, 1))
    [line] = standing_lines(Standing(window_hours=WEEK_HOURS, pools=(pool,)))[1:]
    said = re.fullmatch(rf"  {P5}: received ([\d,.]+) of the ([\d,.]+) accelerator-hours it was entitled to"
                        r"(?: \((\d+)%\))?", line)
    assert said, line
    got, due = (float(said[i].replace(",", "")) for i in (1, 2))
    if due == 0:
        assert said[3] is None  # no percentage of nothing
    else:
        assert int(said[3]) == round(100 * got / due)
        assert abs(got - received) <= 0.55  # the figures are the hours, rounded
        assert abs(due - entitled) <= 0.55


@properties(60)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 16), st.floats(0, 1e4, allow_nan=False)), min_size=1,
                max_size=6))
def test_the_entitlements_share_out_exactly_what_the_teams_that_count_received(
        rows: list[tuple[int, int, float]]) -> None:
    teams = {f"t{i}": {"weight": w} for i, (w, _, _) in enumerate(rows)}
    snap = snapshot({P5: 8}, quotas={t: {P5: 8} for t in teams},
                    pending={t: {P5: d} for t, (_, d, _) in zip(teams, rows, strict=True) if d})
    received = {t: {P5: r} for t, (_, _, r) in zip(teams, rows, strict=True)}
    got = standings(snap, policy(teams), received, {})
    counted = [got[t].pools[0] for t in teams if got[t].pools[0].entitled_hours is not None]
    total_entitled = sum(p.entitled_hours or 0.0 for p in counted)
    assert total_entitled == pytest.approx(sum(p.received_hours for p in counted), abs=0.1 * len(rows))
