"""One planning context: the plan step's sources (the audit log's versions, the metering table's facts) and the
simulator's and backtest's (snapshots metered in memory) give the same context through the one builder, the ledger
sums use the way the plan step always has, and the planner reads recent changes and pending ages from it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from support.clock import T0
from support.clusters import policy, snapshot

from rebalancer.app import budgets
from rebalancer.app.workflow.run_plan import known_versions_for, make_run_plan
from rebalancer.budgets.metering import Fact, Ledger, budget_usage, budgets_of, hours_in
from rebalancer.domain.context import RecentChange
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan
from rebalancer_tools.fakes.memory_store import MemoryStore
from rebalancer_tools.simulator.budget_meter import BudgetMeter

P5 = "ml.p5.48xlarge"
BUDGETS = policy({"research": {"budget": {"accelerator_hours": 100}},
                  "ops": {"budget": {"money": 500, "period": "week", "timezone": "America/New_York"}},
                  "free": {}}, prices={P5: 98.32})


def runs(start: datetime, hours: int) -> list[Snapshot]:
    """A collect every hour: research's use grows, ops borrows above its quota."""
    return [snapshot({P5: 4}, quotas={"research": {P5: 16}, "ops": {P5: 8}, "free": {P5: 8}},
                     in_use={"research": {P5: min(8 + h, 16)}, "ops": {P5: 12}, "free": {P5: h % 3}},
                     taken_at=start + timedelta(hours=h)) for h in range(hours)]


def test_the_plan_step_and_the_in_memory_meter_give_the_same_context() -> None:
    # Across the end of a month and of a New York week, so that the periods roll over on the way.
    snaps = runs(datetime(2026, 11, 29, 20, tzinfo=UTC), 40)
    table = MemoryStore()  # the plan step's sources: the versions our writes left, the metered facts
    table.versions.record(snaps[0].cluster.ClusterName, {"research": 1}, "run-0")
    meter = BudgetMeter(BUDGETS)
    for snap in snaps:
        budgets.meter(table.meter, snap)
        in_memory = planning_context(snap, BUDGETS, metered=meter.meter(snap),
                                     known_versions=known_versions_for({"research": 1}, snap, BUDGETS))
        plan_step = make_run_plan(snap, BUDGETS, snap.taken_at, store=table).context
        assert plan_step == in_memory
    assert plan_step.budget_usage["research"].accelerator_hours > 0  # December's, and the week's in New York
    assert plan_step.budget_usage["ops"].cost > 0
    assert plan_step.budget_usage.keys() == {"research", "ops"}


def test_plan_builds_the_snapshots_own_context_when_given_none() -> None:
    snap = snapshot({P5: 2}, quotas={"a": {P5: 8}}, pending={"a": {P5: 8}, "b": {P5: 8}},
                    modified={"a": T0 - timedelta(minutes=5)})
    pol = Policy.model_validate({"teams": {"a": {}, "b": {}}, "stability": {"cooldown_minutes": 30}})
    context = planning_context(snap, pol)
    assert context.known_versions is None
    assert not context.budget_usage
    assert context.last_changed == {"a": T0 - timedelta(minutes=5)}
    assert make_plan(snap, pol, T0) == make_plan(snap, pol, T0, context=context)


def test_a_recorded_change_later_than_the_quota_says_holds_the_team_in_its_cooldown() -> None:
    snap = snapshot({P5: 2}, quotas={"a": {P5: 8}, "b": {P5: 8}}, pending={"a": {P5: 16}},
                    modified={"a": T0 - timedelta(hours=5), "b": T0 - timedelta(hours=5)})
    pol = Policy.model_validate({"teams": {"a": {}, "b": {}}, "stability": {"cooldown_minutes": 30}})
    assert [c.team for c in make_plan(snap, pol, T0).changes] == ["b", "a"]
    moved = RecentChange("b", T0 - timedelta(minutes=10), pool=P5, before=16, after=8)
    context = planning_context(snap, pol, changes=[moved])
    assert context.last_changed["b"] == moved.at
    assert moved in context.recent_changes
    plan = make_plan(snap, pol, T0, context=context)
    assert not plan.changes  # b is held: a cannot grow into what b would give up


def test_pending_ages_are_read_for_a_policy_that_ages_weights_only() -> None:
    snap = snapshot({P5: 2}, pending={"a": {P5: 8}, "b": {P5: 8}})
    waited = {"a": {P5: snap.demand["a"][P5].model_copy(update={"oldest_pending": T0 - timedelta(hours=3)})}}
    snap = snap.model_copy(update={"demand": {**snap.demand, **waited}})
    aged = policy({"a": {}, "b": {}}, fairness={"age_doubling_hours": 24})
    assert planning_context(snap, aged).pending_since == {"a": {P5: T0 - timedelta(hours=3)}}
    assert planning_context(snap, policy({"a": {}, "b": {}})).pending_since == {}


# --- the ledger sums as the plan step summed before it (hours_in over the period's facts), one fact at a time ---
TEAMS = ("research", "ops")
rates = st.fixed_dictionaries({}, optional={t: st.fixed_dictionaries({P5: st.tuples(
    st.floats(0, 64, allow_nan=False), st.floats(0, 64, allow_nan=False))}) for t in TEAMS})


@st.composite
def facts(draw: Any) -> list[Fact]:
    at = datetime(2026, 11, 25, tzinfo=UTC) + timedelta(minutes=draw(st.integers(0, 600)))
    out: list[Fact] = []
    for _ in range(draw(st.integers(0, 25))):
        end = at + timedelta(minutes=draw(st.integers(1, 60 * 30)))  # up to a missed day and more
        out.append(Fact(start=at, end=end, at_start=draw(rates), at_end=draw(rates),
                        estimated=end - at > timedelta(minutes=35)))
        at = end
    return out


@given(facts(), st.integers(0, 60 * 24 * 12))
def test_the_ledger_sums_what_the_plan_step_summed_and_the_same_fact_by_fact(metered: list[Fact],
                                                                            minutes: int) -> None:
    at = datetime(2026, 11, 25, tzinfo=UTC) + timedelta(minutes=minutes)
    budgets = budgets_of(BUDGETS)
    windows = {t: b.window(at) for t, b in budgets.items()}
    before = {t: budget_usage(hours_in(metered, w.start, min(at, w.end)).get(t, {}), budgets[t], w.label,
                              BUDGETS.prices) for t, w in windows.items()}
    assert Ledger.of(metered, budgets, at).usage(at, BUDGETS.prices) == before
    if all(f.end <= at for f in metered):  # the simulator's ledger: facts added as they come, none past `at`
        one_by_one = Ledger(budgets)
        for f in metered:
            one_by_one.add(f)
        assert one_by_one.usage(at, BUDGETS.prices) == before


def test_a_snapshot_stored_with_the_old_empty_budget_usage_still_loads_and_one_with_figures_is_refused() -> None:
    stored = snapshot({P5: 1}).model_dump(mode="json")
    assert Snapshot.model_validate({**stored, "budget_usage": {}}) == Snapshot.model_validate(stored)
    with pytest.raises(ValidationError, match="budget_usage"):
        Snapshot.model_validate({**stored, "budget_usage": {"a": {"period": "2026-11", "accelerator_hours": 5}}})
