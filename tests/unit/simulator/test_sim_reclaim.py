"""The simulator's controller passes each running job to the planner as collect passes an admitted Kueue Workload
(with its Admitted time), for `reclaim` only; so a new team in a full simulated cluster gets quota in one plan."""

from __future__ import annotations

from datetime import timedelta

from rebalancer.domain.policy import Policy
from rebalancer_tools.simulator.controller import EPOCH, PlannerController
from rebalancer_tools.simulator.engine import ControllerView, Decision, SimConfig, Simulation
from rebalancer_tools.simulator.kueue import QueueSpec
from rebalancer_tools.simulator.teams import TeamSpec
from rebalancer_tools.simulator.trace import TraceJob

P5 = "ml.p5.48xlarge"


def test_the_view_lists_every_running_job_with_when_it_was_admitted_newest_first() -> None:
    seen: list[dict[str, dict[str, tuple[tuple[int, int, float, int], ...]]]] = []

    def controller(view: ControllerView) -> Decision | None:
        assert view.running_jobs is not None
        seen.append(view.running_jobs())
        return None

    queues = [QueueSpec("a", 16, borrow=False), QueueSpec("b", 0, borrow=False)]
    jobs = [TraceJob("early", "a", 0, 5000, 8), TraceJob("late", "a", 300, 5000, 8), TraceJob("b1", "b", 0, 60, 1)]
    Simulation(jobs, ["a", "b"], queues, [0, 1], SimConfig(nodes=2, gpus_per_node=8, controller_interval_s=900),
               controller).run()
    assert seen[1] == {"a": {"gpu": ((1, 8, 300.0, 0), (0, 8, 0.0, 0))}}  # at 900 s; b, with no quota, runs nothing


def full_view(now_s: float) -> ControllerView:
    """a holds and runs all 64 GPUs in 8 jobs admitted at 0, 600, …, 4200 s; b waits for 32."""
    return ControllerView(now_s=now_s, healthy_nodes={P5: 8}, failed_nodes={P5: 0},
                          quotas={"a": {P5: 64}, "b": {P5: 0}}, quota_versions={"a": 1, "b": 1},
                          quota_modified_s={"a": 0.0, "b": 0.0}, in_use={"a": {P5: 64}, "b": {P5: 0}},
                          pending={"a": {P5: 16}, "b": {P5: 32}},
                          pending_jobs=lambda: {"a": {P5: ((20, 16, 0.0),)},
                                                "b": {P5: tuple((30 + k, 8, now_s) for k in range(4))}},
                          running_jobs=lambda: {"a": {P5: tuple((k, 8, 600.0 * k, 0) for k in reversed(range(8)))}})


def controller(max_gpu_hours: float = 16) -> PlannerController:
    policy = Policy.model_validate({"teams": {t: {"protected_in_use": True} for t in "ab"},
                                    "stability": {"cooldown_minutes": 0},
                                    "reclaim": {"max_age_minutes": 30, "max_gpu_hours": max_gpu_hours}})
    return PlannerController(policy, [TeamSpec(t, 1, 32) for t in "ab"], P5, 8)


def test_the_snapshot_carries_the_running_jobs_as_collect_reads_them() -> None:
    listed = controller().snapshot(full_view(4500)).running_workloads
    assert [(w.name, w.team, w.pool, w.accelerators, w.pods, w.started) for w in listed[:2]] == [
        ("job-00000007", "a", P5, 8, 1, EPOCH + timedelta(seconds=4200)),
        ("job-00000006", "a", P5, 8, 1, EPOCH + timedelta(seconds=3600))]
    assert controller(0).snapshot(full_view(4500)).running_workloads == ()


def test_a_new_team_in_a_full_simulated_cluster_gets_quota_in_one_plan() -> None:
    # at 4,500 s the jobs admitted 5, 15 and 25 min ago are young: 24 of the 32 b waits for, in whole jobs of 8
    decision = controller()(full_view(4500))
    assert decision is not None
    assert decision.quotas == {"a": {P5: 40}, "b": {P5: 24}}
    assert controller(0)(full_view(4500)) is None  # without the reclaim, protection keeps b at nothing
