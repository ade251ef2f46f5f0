"""The replay of a policy over a history: a known answer on a day of morning bursts, gaps, dry-run policies, a
recorded run's settings. Replays of several days or planned at every state (cooldown against churn, determinism,
the shortcut for repeated states) are in tests/integration/backtest/test_backtest_replays.py."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from support.replays import morning_bursts, policy, run

from rebalancer.domain.policy import Policy
from rebalancer_tools.backtest import synthetic as syn
from rebalancer_tools.backtest.replay import Replay, prepare, replay


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
    from rebalancer.domain.quotas import ComputeQuota
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


def test_weeks_split_the_run_and_add_up_to_its_totals() -> None:
    h = syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=9)
    r = run(h, policy(cooldown_minutes=0))
    assert {t: sorted(w) for t, w in r.weeks.items()} == {"a": [0, 1], "b": [0, 1]}
    for t, weeks in r.weeks.items():
        assert sum(m for m, _ in weeks.values()) == pytest.approx(r.teams[t].met_hours)
        assert sum(e for _, e in weeks.values()) == pytest.approx(r.teams[t].entitled_hours)
    fw = r.summary()["fairness_windows"]
    assert fw["windows"] == 4
    assert 0 <= fw["worst_ratio"] <= fw["p10_ratio"] <= 1


def test_a_team_met_less_than_under_the_first_policy_is_named_worse_off() -> None:
    from rebalancer_tools.backtest.report import markdown, worse_off

    h = syn.history(morning_bursts, {"a": 24, "b": 8}, nodes=4, days=1)
    first = run(h, policy(cooldown_minutes=0))
    # b guaranteed nothing and weighted 0: it keeps only what its weight-0 floor gives, a keeps the rest
    starved = Policy.model_validate({"stability": {"cooldown_minutes": 0},
                                     "teams": {"a": {"weight": 1}, "b": {"weight": 0}}})
    second = replay_named("starved", h, starved)
    found = worse_off([first, second])
    assert [t for t, *_ in found["starved"]] == ["b"]
    assert found["starved"][0][1] < 0.9 * found["starved"][0][2]
    assert "## Teams worse off than under p" in markdown([first, second], "t")


def replay_named(name: str, h: syn.History, p: Policy) -> Replay:
    states = h.states()
    return replay(name, prepare(states), p, states[0])
