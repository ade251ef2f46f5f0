"""Replays of several days, or planned at every state: without a cooldown a morning burst churns the quotas and an
hour of cooldown stops it, a replay is deterministic, and reusing the plan of a repeated state changes nothing."""

from __future__ import annotations

import pytest
from support.replays import morning_bursts, policy, run

from rebalancer.domain.policy import Policy
from rebalancer_tools.backtest import synthetic as syn


def test_bursts_every_morning_churn_without_a_cooldown_and_not_with_an_hour_of_it() -> None:
    h = syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=3)
    churning = run(h, policy(cooldown_minutes=0))
    # Every morning b's quota goes up at 08:00 and comes back down at 08:30, and a's the other way round.
    assert churning.summary()["reversals_within_hour"] >= 3 * 2
    assert {r.at.hour for r in churning.reversals} == {8}
    assert {r.team for r in churning.reversals} == {"a", "b"}
    calm = run(h, policy(cooldown_minutes=60))
    assert calm.summary()["reversals_within_hour"] == 0
    # The burst still gets its accelerators; they go back an hour after they came, not half an hour.
    lowered = [m for m in calm.moves if m.team == "b" and m.after < m.before and m.at > syn.START]
    assert len(lowered) == 3
    assert {(m.at.hour, m.at.minute) for m in lowered} == {(9, 0)}


def test_a_replay_is_deterministic() -> None:
    h = syn.history(syn.random_walk(6, seed=3, peak=8), dict.fromkeys(syn.team_names(6), 8), nodes=6, days=1)
    p = Policy.model_validate({"teams": {n: {"weight": 1 + i % 3} for i, n in enumerate(syn.team_names(6))}})
    first, second = run(h, p), run(h, p)
    assert first.summary() == second.summary()
    assert first.quota == second.quota
    assert first.moves == second.moves


@pytest.mark.parametrize("cooldown", [0, 30])
def test_reusing_the_plan_of_a_repeated_state_gives_the_same_replay_as_planning_every_state(cooldown: int) -> None:
    names = syn.team_names(5)
    h = syn.history(syn.random_walk(5, seed=11, change=0.05, peak=8), dict.fromkeys(names, 8), nodes=5, days=1)
    p = Policy.model_validate({"stability": {"cooldown_minutes": cooldown}, "teams": {n: {} for n in names}})
    fast, slow = run(h, p), run(h, p, reuse=False)
    assert fast.planned < slow.planned == len(slow.times)
    assert {**fast.summary(), "planner_calls": 0} == {**slow.summary(), "planner_calls": 0}
    assert fast.quota == slow.quota
