"""The simulator's controller passes each pending job to the planner as collect passes a pending Kueue Workload,
for `fairness.gang_steps` only."""

from __future__ import annotations

from rebalancer.domain.policy import Policy
from rebalancer_tools.simulator.controller import EPOCH, PlannerController
from rebalancer_tools.simulator.engine import ControllerView, Decision, SimConfig, Simulation
from rebalancer_tools.simulator.kueue import QueueSpec
from rebalancer_tools.simulator.teams import TeamSpec
from rebalancer_tools.simulator.trace import TraceJob

P5 = "ml.p5.48xlarge"


def test_the_view_lists_every_pending_job_in_admission_order() -> None:
    seen: list[dict[str, dict[str, tuple[tuple[int, int, float], ...]]]] = []

    def controller(view: ControllerView) -> Decision | None:
        assert view.pending_jobs is not None
        seen.append(view.pending_jobs())  # during the tick: it reads the simulation's state at that moment
        return None

    queues = [QueueSpec("a", 8, borrow=False), QueueSpec("b", 0, borrow=False)]
    jobs = [TraceJob("run", "a", 0, 5000, 8), TraceJob("a1", "a", 200, 60, 8), TraceJob("a2", "a", 100, 60, 4),
            TraceJob("b1", "b", 300, 60, 1)]
    Simulation(jobs, ["a", "b"], queues, [0, 1], SimConfig(nodes=1, gpus_per_node=8, controller_interval_s=900),
               controller).run()
    listed = seen[1]
    assert {t: [(g, enq) for _, g, enq in jobs] for t, pools in listed.items() for jobs in pools.values()} == \
        {"a": [(4, 100), (8, 200)], "b": [(1, 300)]}  # the running job is not pending


def gang_view() -> ControllerView:
    """a waits for one 64-GPU gang, b and c for 64 GPUs of 8-GPU jobs, on 12 nodes (96 GPUs)."""
    jobs = {"a": ((1, 64, 0.0),), "b": tuple((10 + k, 8, 0.0) for k in range(8)),
            "c": tuple((20 + k, 8, 0.0) for k in range(8))}
    return ControllerView(now_s=7200, healthy_nodes={P5: 12}, failed_nodes={P5: 0},
                          quotas={t: {P5: 32} for t in "abc"}, quota_versions=dict.fromkeys("abc", 1),
                          quota_modified_s=dict.fromkeys("abc", 0.0), in_use={t: {P5: 0} for t in "abc"},
                          pending={t: {P5: 64} for t in "abc"},
                          pending_jobs=lambda: {t: {P5: js} for t, js in jobs.items()})


def controller(fairness: dict[str, bool], reclaim: float = 0) -> PlannerController:
    policy = Policy.model_validate({"teams": {t: {} for t in "abc"}, "fairness": fairness,
                                    "stability": {"cooldown_minutes": 0}, "reclaim": {"max_gpu_hours": reclaim}})
    return PlannerController(policy, [TeamSpec(t, 1, 32) for t in "abc"], P5, 12)


def test_the_snapshot_lists_pending_workloads_only_for_a_policy_that_reads_them() -> None:
    listed = controller({"gang_steps": True}).snapshot(gang_view()).pending_workloads
    assert len(listed) == 17
    gang = next(w for w in listed if w.team == "a")
    assert (gang.pool, gang.accelerators, gang.pods, gang.created) == (P5, 64, 8, EPOCH)
    assert controller({}).snapshot(gang_view()).pending_workloads == ()
    assert len(controller({}, reclaim=16).snapshot(gang_view()).pending_workloads) == 17  # the reclaim reads them


def test_a_share_short_of_a_gang_goes_to_the_others() -> None:
    # 32 each is 32 short of a's gang and 32 above nothing: the tie goes to the gang, which then starts
    decision = controller({"gang_steps": True})(gang_view())
    assert decision is not None
    assert decision.quotas == {"a": {P5: 64}, "b": {P5: 16}, "c": {P5: 16}}
    assert controller({})(gang_view()) is None  # plain: 32 each, as they are
