"""The replay of a policy over a history: known answers on generated histories, determinism, gaps, and the shortcut
for repeated states changing nothing."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from rebalancer.policy import Policy
from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.backtest.replay import Replay, prepare, replay


def policy(**stability: Any) -> Policy:
    return Policy.model_validate({"stability": stability, "teams": {"a": {}, "b": {}}})


def morning_bursts(team: str, at: datetime) -> tuple[float, float]:
    """a runs 16 and wants 8 more all day; b wants 16 from 08:00 to 08:30 (UTC) and nothing otherwise."""
    if team == "a":
        return 16.0, 8.0
    burst = at.hour == 8 and at.minute < 30
    return (0.0, 16.0) if burst else (0.0, 0.0)


def run(h: syn.History, p: Policy, **kw: Any) -> Replay:
    states = h.states()
    return replay("p", prepare(states), p, states[0], **kw)


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


def test_the_quota_follows_the_burst_and_the_metrics_add_up() -> None:
    h = syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=1)
    r = run(h, policy(cooldown_minutes=0))
    at_burst = r.times.index(syn.START + timedelta(hours=8, minutes=5))
    assert r.quota["b"][at_burst] > 8
    assert r.quota["a"][at_burst] < 24
    assert r.quota["a"][-1] + r.quota["b"][-1] <= 32
    s = r.summary()
    assert s["hours"] == pytest.approx(24.0)
    assert 0 < s["demand_met_percent"] <= 100
    assert s["accelerators_moved"] > 0
    assert s["runs_changed"] > 0
    # What a team is entitled to but cannot run inside its quota is never negative.
    assert all(t.deficit_hours >= 0 and t.idle_guaranteed_hours >= 0 for t in r.teams.values())


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


def test_a_gap_counts_one_typical_interval_and_is_reported() -> None:
    def gap(at: datetime) -> bool:
        return 6 <= at.hour < 12

    h = syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=1, skip=gap)
    r = run(h, policy(cooldown_minutes=0))
    assert len(r.times) == 288 - 72
    assert r.gaps == 1
    assert r.summary()["hours"] == pytest.approx((288 - 72) * 5 / 60)


def test_a_dry_run_policy_is_replayed_as_auto() -> None:
    h = syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=1)
    dry = Policy.model_validate({"mode": "dry-run", "stability": {"cooldown_minutes": 0}, "teams": {"a": {}, "b": {}}})
    assert run(h, dry).summary()["runs_changed"] == run(h, policy(cooldown_minutes=0)).summary()["runs_changed"] > 0


def test_a_recorded_runs_quota_settings_are_kept_and_its_amounts_come_from_the_first_state() -> None:
    from rebalancer.models import ComputeQuota
    from rebalancer_tools.backtest.replay import initial_quotas

    h = syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=0.1)
    recorded = ComputeQuota.model_validate({
        "ComputeQuotaId": "cq-real-a", "Name": "a-quota", "ComputeQuotaVersion": 7, "Status": "Created",
        "ComputeQuotaTarget": {"TeamName": "a", "FairShareWeight": 30},
        "ComputeQuotaConfig": {"ComputeQuotaResources": [{"InstanceType": syn.P5, "Accelerators": 16}],
                               "ResourceSharingConfig": {"Strategy": "Lend"}, "PreemptTeamTasks": "Never"}})
    quotas = initial_quotas(h.samples[0], [recorded])
    a, b = quotas["a"], quotas["b"]
    assert a.ComputeQuotaId == "cq-real-a"
    assert a.ComputeQuotaConfig.ResourceSharingConfig is not None
    assert a.ComputeQuotaConfig.ResourceSharingConfig.Strategy == "Lend"
    assert a.ComputeQuotaTarget.FairShareWeight == 30
    entry = a.resource(syn.P5)
    assert entry is not None
    assert entry.Accelerators == 24
    assert b.ComputeQuotaConfig.ResourceSharingConfig is not None
    assert b.ComputeQuotaConfig.ResourceSharingConfig.Strategy == "LendAndBorrow"
