"""An autoscaled pool: Kueue admits by quota up to the autoscaler's ceiling, admitted work that does not fit the
nodes present waits for nodes requested for it (there after the scale-up delay), idle nodes go after the idle
period down to min_nodes, and node-hours count what was there. The controller sees the ceiling as collect reads
Karpenter's NodePool limits and plans quotas up to it; without it, it plans to the nodes present and the pool
never grows (the issue's point). Fixed pools are unchanged (the bench's byte-identity check)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalancer_tools.simulator.autoscaling import Autoscaling, node_seconds
from rebalancer_tools.simulator.engine import Failures, PoolSpec, SimConfig, Simulation
from rebalancer_tools.simulator.kueue import QueueSpec
from rebalancer_tools.simulator.run import Scenario, simulate
from rebalancer_tools.simulator.teams import TeamSpec
from rebalancer_tools.simulator.trace import TraceJob

HOUR = 3600.0
P5 = "ml.p5.48xlarge"


def one_pool(jobs: list[TraceJob], nominal: int, nodes: int, scaling: Autoscaling,
             failures: Failures | None = None) -> Simulation:
    cfg = SimConfig(pools=(PoolSpec(P5, nodes, 8, scaling),), failures=failures or Failures())
    return Simulation(jobs, ["a"], [QueueSpec("a", nominal)], [0], cfg)


def test_admitted_work_that_does_not_fit_waits_for_the_nodes_requested_for_it() -> None:
    sim = one_pool([TraceJob("big", "a", 0, HOUR, 32)], nominal=32, nodes=2, scaling=Autoscaling(2, 4))
    raw = sim.run()
    assert raw.job_wait_s == [600.0]  # the scale-up delay
    assert raw.job_done == [True]
    assert (sim.peak_nodes, sim.scale_ups) == ([4], [1])
    assert sim.node_steps[0][:2] == [(0.0, 2), (600.0, 4)]
    assert sim.node_hours()[P5] == pytest.approx((2 * 600 + 4 * HOUR) / HOUR)


def test_quota_not_nodes_bounds_what_is_admitted_so_a_pool_held_to_its_quota_never_grows() -> None:
    jobs = [TraceJob("a1", "a", 0, HOUR, 16), TraceJob("a2", "a", 0, HOUR, 16)]
    sim = one_pool(jobs, nominal=16, nodes=2, scaling=Autoscaling(2, 4))
    raw = sim.run()
    assert raw.job_wait_s == [0.0, HOUR]  # the second waits for the first, not for nodes
    assert (sim.peak_nodes, sim.scale_ups) == ([2], [0])


def test_the_ceiling_bounds_the_scale_up() -> None:
    jobs = [TraceJob(f"j{i}", "a", 0, HOUR, 16) for i in range(4)]
    sim = one_pool(jobs, nominal=64, nodes=2, scaling=Autoscaling(2, 4))
    raw = sim.run()
    assert sim.peak_nodes == [4]
    assert sorted(raw.job_wait_s) == [0.0, 600.0, HOUR, HOUR + 600]  # two nodes came; the rest queue behind


def test_nodes_idle_for_the_idle_period_go_down_to_min_nodes() -> None:
    jobs = [TraceJob("a1", "a", 0, HOUR, 16), TraceJob("late", "a", 10 * HOUR, 60, 8)]
    sim = one_pool(jobs, nominal=32, nodes=4, scaling=Autoscaling(2, 4, idle_scale_down_s=1800, check_s=300))
    raw = sim.run()
    assert raw.job_wait_s == [0.0, 0.0]
    assert sim.node_steps[0] == [(0.0, 4), (1800.0, 2)]  # two idle from the start; min 2 holds after a1 ends
    assert sim.node_hours()[P5] == pytest.approx((4 * 1800 + 2 * (10 * HOUR + 60 - 1800)) / HOUR)


def test_bad_autoscaling_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="min_nodes <= max_nodes"):
        Autoscaling(4, 2)
    with pytest.raises(ValueError, match=r"outside its autoscaling range 2\.\.4"):
        one_pool([], 8, nodes=5, scaling=Autoscaling(2, 4))
    with pytest.raises(ValueError, match="not modelled in an autoscaled pool"):
        one_pool([], 8, nodes=2, scaling=Autoscaling(2, 4), failures=Failures(mtbf_hours=100))


def test_node_seconds_integrates_the_steps_to_the_end() -> None:
    assert node_seconds([(0.0, 2), (10.0, 4), (20.0, 1)], 25.0) == 2 * 10 + 4 * 10 + 1 * 5
    assert node_seconds([(0.0, 2), (10.0, 4)], 5.0) == 10


def _scenario(to_ceiling: bool) -> Scenario:
    # two teams, hand-set quotas for the 2 nodes there at the start; team a has more work than they hold
    jobs = [TraceJob(f"a{i}", "a", i * 60.0, 4 * HOUR, 8) for i in range(4)]
    jobs += [TraceJob("b0", "b", 0, 4 * HOUR, 8)]
    teams = [TeamSpec("a", 1.0, 8), TeamSpec("b", 1.0, 8)]
    return Scenario(jobs=jobs, teams=teams, pools=((P5, 2),), autoscaling=((P5, Autoscaling(2, 6)),),
                    plan_to_ceiling=to_ceiling)


def test_planning_to_the_ceiling_lets_the_pool_grow_and_shortens_the_wait() -> None:
    to_ceiling, ceiling_sim = simulate(_scenario(True), "rebalancer")
    present, present_sim = simulate(_scenario(False), "rebalancer")
    assert present_sim.peak_nodes == [2]  # quotas held to the nodes present: Kueue admits nothing to scale for
    assert ceiling_sim.peak_nodes[0] > 2
    assert ceiling_sim.peak_nodes[0] <= 6
    assert to_ceiling.wait_mean_s < present.wait_mean_s
    assert to_ceiling.jobs_completed == present.jobs_completed == 5


def test_the_makefile_and_the_doc_describe_the_autoscale_bench_the_code_runs() -> None:
    from pathlib import Path

    from rebalancer_tools.simulator import autoscale_bench

    root = Path(__file__).resolve().parents[3]
    line = next(x for x in (root / "Makefile").read_text().splitlines() if x.startswith("bench-autoscale:"))
    doc = (root / "docs/simulation.md").read_text()
    block = doc[doc.index(autoscale_bench.BEGIN):doc.index(autoscale_bench.END)]
    for t in autoscale_bench.TRACES:
        assert f"{t.min_nodes}->{t.max_nodes}" in line
        assert f"### {t.title}: {t.min_nodes} → {t.max_nodes} × {autoscale_bench.P5}" in block
    assert all(block.count(f"| {label} |") == len(autoscale_bench.TRACES) for label, *_ in autoscale_bench.ARMS)


@settings(max_examples=40, deadline=None)
@given(jobs=st.lists(st.tuples(st.integers(0, 20), st.integers(1, 8), st.sampled_from([1, 2, 4, 8, 16, 24])),
                     min_size=1, max_size=12),
       lo=st.integers(0, 2), extra=st.integers(0, 3), nominal=st.integers(8, 48))
def test_an_autoscaled_pool_stays_in_its_range_and_runs_all_it_admits(
        jobs: list[tuple[int, int, int]], lo: int, extra: int, nominal: int) -> None:
    scaling = Autoscaling(lo, lo + extra + 1, check_s=300)
    trace = [TraceJob(f"j{i}", "a", s * 600.0, h * 600.0, g) for i, (s, h, g) in enumerate(jobs)]
    sim = one_pool(trace, nominal=nominal, nodes=lo, scaling=scaling)
    raw = sim.run()
    counts = [n for _, n in sim.node_steps[0]]
    assert all(scaling.min_nodes <= n <= scaling.max_nodes for n in counts)
    assert (sim.incoming, sim.unplaced_gpus) == ([0], [0])  # every node requested came, every admitted job ran
    reach = min(nominal, scaling.max_nodes * 8)
    for job, done in zip(trace, raw.job_done, strict=True):
        assert done == (job.gpus <= reach)  # what quota and the ceiling allow runs; a bigger gang never does
    assert sim.node_hours()[P5] >= scaling.min_nodes * raw.end_s / HOUR - 1e-9
