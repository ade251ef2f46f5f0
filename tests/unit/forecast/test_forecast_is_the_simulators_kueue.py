"""The forecast admits as the simulator does: from the cluster as the simulator's controller sees it once every job
has arrived, told each job's true duration, the forecast starts every waiting job when the simulation does (to the
second), or says it never starts when it never does, on random clusters (static, LendAndBorrow with and without
fair sharing, priorities with LowerPriority preemption, reclaim of lower priorities only, pooled)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from support.props import properties

from rebalancer.forecast.durations import History
from rebalancer.forecast.engine import forecast
from rebalancer.forecast.model import Cluster, Running, Waiting
from rebalancer_tools.simulator.engine import SimConfig, Simulation
from rebalancer_tools.simulator.kueue import QueueSpec
from rebalancer_tools.simulator.trace import TraceJob

ASKED_AT = 3600.0  # every job arrives before; the simulator's controller interval


class Told:
    """The true durations (a test's oracle: what no estimator may know)."""

    def __init__(self, durations: dict[str, float]) -> None:
        self.d = durations

    def remaining(self, job: Running, at: float) -> float:
        return self.d[job.job] - (at - job.started)

    def duration(self, job: Waiting) -> float:
        return self.d[job.job]


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[TraceJob], list[QueueSpec], int, SimConfig]:
    teams = [f"t{i}" for i in range(draw(st.integers(1, 4)))]
    kind = draw(st.sampled_from(["static", "shared", "shared-unfair", "priorities", "priorities", "pooled"]))
    capacity = draw(st.integers(4, 24))
    queues = []
    for t in teams:
        nominal = draw(st.integers(0, 16))
        if kind == "static":
            queues.append(QueueSpec(t, nominal, lend=False, borrow=False))
        elif kind == "pooled":
            continue
        else:
            queues.append(QueueSpec(t, nominal, draw(st.sampled_from([0.5, 1.0, 2.0])),
                                    borrow_limit_percent=draw(st.sampled_from([None, 50, 100])),
                                    borrow_limit=draw(st.sampled_from([None, 4, 8])),
                                    preempt_within=draw(st.booleans()),
                                    reclaim_lower_priority_only=kind == "priorities" and draw(st.booleans())))
    if kind == "pooled":
        queues = [QueueSpec("pool", capacity, borrow=False, lend=False)]
    jobs = [TraceJob(f"j{i}", draw(st.sampled_from(teams)), float(draw(st.integers(0, int(ASKED_AT) - 1))),
                     float(draw(st.integers(60, 30_000))), draw(st.sampled_from([1, 2, 4, 8, 16])),
                     draw(st.integers(-1, 1)) if kind == "priorities" else 0)
            for i in range(draw(st.integers(1, 30)))]
    jobs.sort(key=lambda j: j.submit_s)
    cfg = SimConfig(nodes=capacity, gpus_per_node=1, share_unallocated=kind != "static" and draw(st.booleans()),
                    fair_share=kind in ("shared", "priorities"), controller_interval_s=ASKED_AT)
    return jobs, queues, capacity, cfg


@properties(120)
@given(clusters())
def test_told_the_true_durations_the_forecast_starts_each_job_when_the_simulation_does(
        case: tuple[list[TraceJob], list[QueueSpec], int, SimConfig]) -> None:
    jobs, queues, _, cfg = case
    teams = sorted({j.team for j in jobs} | {q.name for q in queues if q.name != "pool"})
    queue_of = list(range(len(teams))) if queues[0].name != "pool" else [0] * len(teams)
    if queues[0].name != "pool":
        by_name = {q.name: q for q in queues}
        queues = [by_name.get(t) or QueueSpec(t, 0) for t in teams]
    seen: list[Cluster] = []

    def ask(cluster: Cluster, _h: History, _t: tuple[str, ...], _s: object) -> dict[str, float | None]:
        if cluster.at == ASKED_AT:
            seen.append(cluster)
        return {}

    sim = Simulation(jobs, teams, queues, queue_of, cfg, eta=ask)
    sim.run()
    if not seen:  # everything had started (and no job waits) by the time it was asked
        return
    [cluster] = seen
    told = Told({f"{i:08d}": j.duration_s for i, j in enumerate(jobs)})
    waiting = [w for p in cluster.pools for w in p.waiting]
    got = forecast(cluster, told).starts
    for w in waiting:
        j = int(w.job)
        actual = sim.first_start[j]
        if actual >= 0 and actual < ASKED_AT:  # a job preempted before: its first start is behind it
            continue
        assert got[w.job].at == (actual if actual >= 0 else None), (w, got[w.job])
