"""Budgets in the backtest: every recorded state is metered as collect meters it, and the plan reads the use so far
through the same planning context as the plan step, so a team is held at its guarantee at the state the plan step
would hold it."""

from __future__ import annotations

from datetime import datetime, timedelta

from rebalancer.app import budgets
from rebalancer.app.workflow.run_plan import make_run_plan
from rebalancer.domain.policy import Policy
from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.backtest.replay import _snapshot, initial_quotas, prepare, replay
from rebalancer_tools.backtest.report import markdown
from rebalancer_tools.fakes.memory_store import MemoryStore

P5 = syn.P5
GUARANTEE = 8
POLICY = Policy.model_validate({
    "teams": {"heavy": {"guarantee": {P5: GUARANTEE},
                        "budget": {"accelerator_hours": 100, "on_exhausted": "guarantee_only"}},
              "light": {"guarantee": {P5: GUARANTEE}}},
    "stability": {"cooldown_minutes": 0, "max_move": None}})


def steady(team: str, at: datetime) -> tuple[float, float]:
    """heavy runs 24 and wants 8 more all day, light runs 4: 100 accelerator-hours last heavy 4 h 10 min."""
    return (24.0, 8.0) if team == "heavy" else (4.0, 0.0)


def test_a_budget_replayed_by_the_backtest_caps_the_team_when_the_plan_step_would() -> None:
    h = syn.history(steady, {"heavy": 16, "light": 16}, nodes=4, days=0.5, step_minutes=15)
    samples = h.states()
    states = prepare(samples)
    replayed = replay("budget", states, POLICY, samples[0], reuse=False)

    # The plan step at every state: collect meters the snapshot, plan reads the table. The quotas are the recorded
    # ones (heavy's use does not depend on them: it counts own and borrowed hours alike).
    table, quotas, plan_step = MemoryStore(), initial_quotas(samples[0]), []
    for s in states:
        snap = _snapshot(s, quotas)
        budgets.meter(table.meter, snap)
        plan = make_run_plan(snap, POLICY, s.at, store=table).plan
        plan_step.append(plan.allocations["heavy"][P5]["accelerators"])

    assert replayed.quota["heavy"] == plan_step
    held = plan_step.index(GUARANTEE)
    assert states[held].at - states[0].at == timedelta(hours=4, minutes=15)  # the first state past 100 h
    assert set(plan_step[:held]) == {24.0}
    assert set(plan_step[held:]) == {GUARANTEE}
    [(period, used)] = replayed.budgets["heavy"].items()
    assert period == "2026-11"
    assert used["hours"] == 24 * 11.75
    assert replayed.summary()["budgets_not_replayed"]
    text = markdown([replayed], "t")
    assert "- heavy 2026-11: 282.0 h, 282 %" in text
    assert "Not replayed: use before the first recorded state" in text


def test_without_budgets_nothing_is_metered_or_reported() -> None:
    h = syn.history(steady, {"heavy": 16, "light": 16}, nodes=4, days=0.25, step_minutes=15)
    samples = h.states()
    unbudgeted = POLICY.model_copy(update={"teams": {t: tp.model_copy(update={"budget": None})
                                                     for t, tp in POLICY.teams.items()}})
    r = replay("free", prepare(samples), unbudgeted, samples[0])
    assert r.budgets == {}
    assert "budgets" not in r.summary()
    assert "Not replayed" not in markdown([r], "t")
    assert set(r.quota["heavy"]) == {24.0}
