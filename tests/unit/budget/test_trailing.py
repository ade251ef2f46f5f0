"""The use over the fair-share window: summed from the same metering facts as the budgets, kept fact by fact as the
simulator and the backtest meter, and the same whether built at once from the store (the plan step) or so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from support.clusters import policy, snapshot
from support.props import properties

from rebalancer.app import budgets
from rebalancer.app.workflow.run_plan import make_run_plan
from rebalancer.budgets.metering import Fact, hours_in
from rebalancer.budgets.trailing import TrailingUsage
from rebalancer.domain.snapshot import Snapshot
from rebalancer.planning.context import planning_context
from rebalancer_tools.fakes.memory_store import MemoryStore
from rebalancer_tools.simulator.budget_meter import BudgetMeter

P5, G5 = "ml.p5.48xlarge", "ml.g5.12xlarge"
TEAMS = ("research", "ops")
START = datetime(2026, 11, 25, tzinfo=UTC)
rates = st.fixed_dictionaries({}, optional={t: st.fixed_dictionaries({}, optional={it: st.tuples(
    st.floats(0, 64, allow_nan=False), st.floats(0, 64, allow_nan=False)) for it in (P5, G5)}) for t in TEAMS})


@st.composite
def facts(draw: Any) -> list[Fact]:
    at = START + timedelta(minutes=draw(st.integers(0, 600)))
    out: list[Fact] = []
    for _ in range(draw(st.integers(0, 25))):
        end = at + timedelta(minutes=draw(st.integers(1, 60 * 30)))
        out.append(Fact(start=at, end=end, at_start=draw(rates), at_end=draw(rates)))
        at = end
    return out


def summed(metered: list[Fact], since: datetime, until: datetime) -> dict[str, dict[str, float]]:
    return {team: {t: u.own + u.borrowed for t, u in by_type.items()}
            for team, by_type in hours_in(metered, since, until).items()}


def close(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]]) -> bool:
    keys = {(t, i) for t, by in [*a.items(), *b.items()] for i in by}
    return all(abs(a.get(t, {}).get(i, 0.0) - b.get(t, {}).get(i, 0.0)) <= 1e-6 * max(1.0, b.get(t, {}).get(i, 0.0))
               for t, i in keys)


@properties(80)
@given(facts(), st.integers(1, 72), st.lists(st.integers(0, 60 * 24 * 4), min_size=1, max_size=6))
def test_the_window_holds_what_the_facts_say_whether_added_at_once_or_as_metered(
        metered: list[Fact], window_h: int, offsets: list[int]) -> None:
    window = timedelta(hours=window_h)
    kept = TrailingUsage(window)
    added = 0
    for at in sorted(START + timedelta(minutes=m) for m in offsets):  # asked at times that never go back
        while added < len(metered) and metered[added].start < at:
            kept.add(metered[added])
            added += 1
        assert close(kept.hours(at), summed(metered, at - window, at))
        assert close(TrailingUsage.of(metered, window).hours(at), summed(metered, at - window, at))


def test_use_older_than_the_window_is_forgotten() -> None:
    fact = Fact(start=START, end=START + timedelta(hours=2), at_start={"ops": {P5: (8.0, 0.0)}},
                at_end={"ops": {P5: (8.0, 8.0)}})
    kept = TrailingUsage.of([fact], timedelta(hours=24))
    assert kept.hours(START + timedelta(hours=2)) == {"ops": {P5: 24.0}}  # 16 own, 8 borrowed
    assert kept.hours(START + timedelta(hours=25)) == {"ops": {P5: 14.0}}  # the second hour: 8 own, 4 → 8 borrowed
    assert kept.hours(START + timedelta(hours=26)) == {}


def runs(hours: int) -> list[Snapshot]:
    return [snapshot({P5: 4}, quotas={"research": {P5: 16}, "ops": {P5: 8}},
                     in_use={"research": {P5: min(8 + h, 16)}, "ops": {P5: 12}},
                     taken_at=START + timedelta(hours=h)) for h in range(hours)]


def test_the_plan_step_and_the_in_memory_meter_give_the_same_window() -> None:
    windowed = policy({"research": {}, "ops": {}}, fairness={"window_hours": 24})
    table, meter = MemoryStore(), BudgetMeter(windowed)
    for snap in runs(40):
        budgets.meter(table.meter, snap)
        meter.meter(snap)
        in_memory = planning_context(snap, windowed, trailing=meter.trailing).trailing_usage
        plan_step = make_run_plan(snap, windowed, snap.taken_at, store=table).context.trailing_usage
        assert close(dict(in_memory), dict(plan_step))  # type: ignore[arg-type]
    assert plan_step["ops"][P5] == 24 * 12  # 12 GPUs all day, 8 of them own, 4 borrowed
    assert planning_context(snap, policy({"research": {}, "ops": {}}), trailing=meter.trailing).trailing_usage == {}
