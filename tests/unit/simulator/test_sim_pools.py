"""Several capacity pools (instance types) in one run: each job runs on its own type, each pool has its own Kueue
cohort and its own failures, and a job's kind or model resolves to its pool. Whole simulations on a generated
two-pool trace (the controller plans every pool, the per-pool figures add up to the totals) are in
tests/integration/simulator/test_sim_pool_runs.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.mixed_pools import P5, TRN1, mixed

from rebalancer.errors import InvalidInput
from rebalancer_tools.simulator.engine import Failures, NodeEvent, PoolSpec, SimConfig, Simulation
from rebalancer_tools.simulator.kueue import QueueSpec
from rebalancer_tools.simulator.run import Scenario, run_strategy
from rebalancer_tools.simulator.synthetic import generate, pool_teams, write_csv
from rebalancer_tools.simulator.teams import TeamSpec, load_teams
from rebalancer_tools.simulator.trace import TraceJob, load_trace, parse_trace

HOUR = 3600.0


def two_pools(jobs: list[TraceJob], failures: Failures | None = None) -> Simulation:
    pools = (PoolSpec(P5, 2, 8), PoolSpec(TRN1, 1, 16))
    queues = [QueueSpec("a", 16, pool=0), QueueSpec("a", 16, pool=1)]
    cfg = SimConfig(pools=pools, failures=failures or Failures())
    return Simulation(jobs, ["a"], queues, [0], cfg)


def test_a_trainium_job_never_runs_on_gpu_capacity() -> None:
    # The trn1 node is full for an hour; the two p5 nodes are idle the whole time, yet the second trn1 job waits.
    jobs = [TraceJob("t1", "a", 0, HOUR, 16, instance_type=TRN1), TraceJob("t2", "a", 1, HOUR, 16,
                                                                          instance_type=TRN1)]
    raw = two_pools(jobs).run()
    assert raw.job_wait_s == [0.0, HOUR - 1]
    assert [p.busy_gpu_s_window for p in raw.pools] == [0.0, 16]  # p5 never busy within the 1 s window


def test_a_node_failure_in_one_pool_does_not_touch_the_other() -> None:
    jobs = [TraceJob("g1", "a", 0, 10 * HOUR, 8, instance_type=P5), TraceJob("g2", "a", 0, 10 * HOUR, 8),
            TraceJob("t1", "a", 0, 10 * HOUR, 16, instance_type=TRN1), TraceJob("late", "a", 5 * HOUR, 60, 1)]
    # node 2 is the trn1 node (pool 0's two nodes come first)
    raw = two_pools(jobs, Failures(explicit=(NodeEvent(HOUR, 2, "fail"), NodeEvent(2 * HOUR, 2, "repair")))).run()
    p5, trn1 = raw.pools
    assert p5.failure_kills == [0]
    assert trn1.failure_kills == [1]
    assert trn1.failure_lost_gpu_s == [16 * HOUR]
    assert raw.job_wait_s[:3] == [0.0, 0.0, HOUR]  # the p5 jobs ran through
    assert [p.capacity_gpu_s_window for p in raw.pools] == [16 * 5 * HOUR, 16 * 4 * HOUR]
    assert raw.timeline.pool_capacity[P5][:4] == [16, 16, 16, 16]
    assert raw.timeline.pool_capacity[TRN1][:4] == [16, 0, 16, 16]


def test_the_generator_puts_some_teams_on_trainium_with_whole_node_gangs() -> None:
    sc = mixed()
    by_type = {j.instance_type for j in sc.jobs}
    assert by_type == {P5, TRN1}
    assert all(j.gpus % 16 == 0 for j in sc.jobs if j.instance_type == TRN1 and j.gpus > 8)
    quotas = {t.name: dict(t.quotas) for t in sc.teams}
    assert sum(q[P5] for q in quotas.values()) == 64
    assert sum(q[TRN1] for q in quotas.values()) == 32


def test_a_kind_or_model_in_the_trace_resolves_to_the_one_pool_that_has_it() -> None:
    head = "job_id,team,submit_s,duration_s,gpus,instance_type\n"
    trace = parse_trace([head, "1,a,0,10,16,trainium\n", "2,a,0,10,8,H100\n", "3,a,0,10,8,\n"], "t.csv")
    sc = Scenario(jobs=trace.jobs, teams=[TeamSpec("a", 1, 0, ((P5, 8), (TRN1, 16)))], pools=((P5, 1), (TRN1, 1)))
    assert [j.instance_type for j in sc.resolved_jobs()] == [TRN1, P5, P5]  # blank: the first pool
    assert run_strategy(sc, "static").jobs_completed == 3
    with pytest.raises(InvalidInput, match="job '1' runs on 'trainium', which names no single pool"):
        Scenario(jobs=trace.jobs, teams=[TeamSpec("a", 1, 8)], pools=((P5, 1),)).check()
    with pytest.raises(InvalidInput, match=r"team 'a' has a quota of ml\.trn1\.32xlarge, not a pool of the cluster"):
        Scenario(jobs=trace.jobs, teams=sc.teams, pools=((P5, 1),)).check()
    with pytest.raises(InvalidInput) as e:
        parse_trace([head, "1,a,0,10,16,tpu\n"], "t.csv")
    assert str(e.value).startswith("t.csv:2: instance_type: 'tpu' is neither")


def test_a_teams_file_may_give_a_quota_per_instance_type(tmp_path: Path) -> None:
    p = tmp_path / "teams.csv"
    p.write_text(f"team,weight,guarantee,instance_type\nVision Team,2,16,{P5}\nVision Team,2,32,{TRN1}\n"
                 f"nlp,1,8,{P5}\n")
    teams = load_teams(p, {"Vision Team": "vision-team"})
    assert [(t.name, t.weight, t.quota, t.quotas) for t in teams] == [
        ("vision-team", 2.0, 48, ((P5, 16), (TRN1, 32))), ("nlp", 1.0, 8, ((P5, 8),))]
    p.write_text(f"team,weight,guarantee,instance_type\nnlp,1,8,{P5}\nnlp,2,8,{TRN1}\n")
    with pytest.raises(InvalidInput, match=":3: team: team 'nlp' given twice"):
        load_teams(p)


def test_a_generated_mixed_trace_round_trips_through_csv(tmp_path: Path) -> None:
    jobs = generate(pool_teams(3, [(P5, 64), (TRN1, 32)], 1.0), days=1, seed=2)
    write_csv(jobs, tmp_path / "t.csv")
    assert load_trace(tmp_path / "t.csv") == jobs
