"""Fair share over a window in the backtest: every recorded state is metered as collect meters it and the plan
reads the use over the window through the same planning context as the plan step, so the replayed quotas are the
plan step's, state by state; and the team that ran less is given more than the instantaneous share."""

from __future__ import annotations

from datetime import datetime

from rebalancer.app import budgets
from rebalancer.app.workflow.run_plan import make_run_plan
from rebalancer.domain.policy import Policy
from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.backtest.replay import _snapshot, initial_quotas, prepare, replay
from rebalancer_tools.fakes.memory_store import MemoryStore

P5 = syn.P5


def windowed(window: float | None) -> Policy:
    return Policy.model_validate({"teams": {"heavy": {}, "light": {}}, "fairness": {"window_hours": window},
                                  "stability": {"cooldown_minutes": 0, "max_move": None}})


def busy(team: str, at: datetime) -> tuple[float, float]:
    """heavy runs 24 and wants 16 more, light runs 4 and wants 28 more: both want the whole cluster."""
    return (24.0, 16.0) if team == "heavy" else (4.0, 28.0)


def test_the_backtest_replays_the_plan_steps_windowed_weights_state_by_state() -> None:
    samples = syn.history(busy, {"heavy": 16, "light": 16}, nodes=4, days=0.25, step_minutes=15).states()
    states = prepare(samples)
    policy = windowed(24)
    replayed = replay("window", states, policy, samples[0])
    table, quotas, plan_step = MemoryStore(), initial_quotas(samples[0]), []
    for s in states:
        snap = _snapshot(s, quotas)
        budgets.meter(table.meter, snap)
        plan_step.append(make_run_plan(snap, policy, s.at, store=table).plan.allocations["light"][P5]["accelerators"])
    assert replayed.quota["light"] == plan_step
    plain = replay("plain", states, windowed(None), samples[0])
    assert set(plain.quota["light"]) == {16.0}
    assert plan_step[0] == 16.0  # nothing metered yet
    assert plan_step[-1] > 16.0  # heavy ran six times as much over the window: light's weight grew
