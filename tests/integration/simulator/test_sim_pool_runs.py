"""Whole simulations (four days, the controller every hour) on the two-pool cluster of support.mixed_pools: the
per-pool figures add up to the totals under every strategy, the controller plans both pools, and one pool given as
a pool is the single-pool run. The engine's pool rules on hand-made traces are in tests/unit/simulator."""

from __future__ import annotations

import pytest
from support.mixed_pools import P5, TRN1, mixed

from rebalancer_tools.simulator.run import STRATEGIES, Scenario, run_strategy
from rebalancer_tools.simulator.teams import TeamSpec
from rebalancer_tools.simulator.trace import TraceJob


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_per_pool_figures_add_up_to_the_totals(strategy: str) -> None:
    r = run_strategy(mixed(mtbf=48), strategy)
    p5, trn1 = r.pools[P5], r.pools[TRN1]
    for f in ("preemptions", "jobs_completed", "jobs_unfinished", "failure_kills", "quota_changes"):
        assert getattr(p5, f) + getattr(trn1, f) == getattr(r, f), f
    for f in ("lost_gpu_hours", "entitlement_deficit_gpu_hours", "failure_lost_gpu_hours"):
        assert getattr(p5, f) + getattr(trn1, f) == pytest.approx(getattr(r, f)), f
    assert min(p5.utilization, trn1.utilization) <= r.utilization <= max(p5.utilization, trn1.utilization)
    for team, t in r.teams.items():
        assert t.jobs == p5.teams[team].jobs + trn1.teams[team].jobs
    assert r.failure_kills > 0


def test_the_controller_plans_both_pools() -> None:
    r = run_strategy(mixed(), "rebalancer")
    assert r.pools[P5].quota_changes > 0
    assert r.pools[TRN1].quota_changes > 0
    builtin = run_strategy(mixed(), "builtin")
    assert r.entitlement_deficit_gpu_hours < builtin.entitlement_deficit_gpu_hours


def test_one_pool_given_as_a_pool_is_the_single_pool_run() -> None:
    sc = mixed()
    jobs = [TraceJob(j.job_id, j.team, j.submit_s, j.duration_s, j.gpus) for j in sc.jobs if j.instance_type == P5]
    teams = [TeamSpec(t.name, 1, dict(t.quotas)[P5]) for t in sc.teams if dict(t.quotas)[P5]]
    single = Scenario(jobs=jobs, teams=teams, nodes=8, controller_interval_s=3600)
    pooled = Scenario(jobs=jobs, teams=teams, pools=((P5, 8),), controller_interval_s=3600)
    for strategy in ("builtin", "rebalancer"):
        assert run_strategy(single, strategy).output() == run_strategy(pooled, strategy).output()
