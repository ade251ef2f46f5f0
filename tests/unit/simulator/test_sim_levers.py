"""What the simulator's controller feeds the planner for the levers of docs/simulation.md "Levers": the age of
pending work (as collect reads it from Kueue Workloads' creation times) and capacity that shrinks."""

from __future__ import annotations

from rebalancer.domain.policy import Policy
from rebalancer_tools.simulator.controller import EPOCH, PlannerController
from rebalancer_tools.simulator.engine import ControllerView, Decision, SimConfig, Simulation
from rebalancer_tools.simulator.kueue import QueueSpec
from rebalancer_tools.simulator.teams import TeamSpec
from rebalancer_tools.simulator.trace import TraceJob

P5 = "ml.p5.48xlarge"


def test_the_view_carries_each_teams_oldest_pending_job() -> None:
    seen: list[ControllerView] = []

    def controller(view: ControllerView) -> Decision | None:
        seen.append(view)
        return None

    queues = [QueueSpec("a", 8, borrow=False), QueueSpec("b", 0, borrow=False)]
    jobs = [TraceJob("run", "a", 0, 5000, 8), TraceJob("a1", "a", 100, 60, 8), TraceJob("a2", "a", 200, 60, 8),
            TraceJob("b1", "b", 300, 60, 1)]
    cfg = SimConfig(nodes=1, gpus_per_node=8, controller_interval_s=900)
    Simulation(jobs, ["a", "b"], queues, [0, 1], cfg, controller).run()
    assert seen[1].now_s == 900
    assert seen[1].oldest_pending_s == {"a": {"gpu": 100}, "b": {"gpu": 300}}  # the running job is not pending


def view(oldest: dict[str, float]) -> ControllerView:
    return ControllerView(now_s=7200, healthy_nodes={P5: 1}, failed_nodes={P5: 0}, quotas={"a": {P5: 4}, "b": {P5: 4}},
                          quota_versions={"a": 1, "b": 1}, quota_modified_s={"a": 0, "b": 0},
                          in_use={"a": {P5: 0}, "b": {P5: 0}}, pending={"a": {P5: 8}, "b": {P5: 8}},
                          oldest_pending_s={t: {P5: s} for t, s in oldest.items()})


def controller(fairness: dict[str, float]) -> PlannerController:
    teams = [TeamSpec("a", 1, 4), TeamSpec("b", 1, 4)]
    policy = Policy.model_validate({"teams": {"a": {}, "b": {}}, "fairness": fairness,
                                    "stability": {"cooldown_minutes": 0}})
    return PlannerController(policy, teams, P5, 1)


def test_the_snapshot_carries_creation_times_only_for_a_policy_that_reads_them() -> None:
    aged = controller({"age_doubling_hours": 1}).snapshot(view({"a": 0.0}))
    assert aged.demand["a"][P5].oldest_pending == EPOCH
    assert aged.demand["b"][P5].oldest_pending is None
    plain = controller({}).snapshot(view({"a": 0.0}))
    assert plain.demand["a"][P5].oldest_pending is None


def test_the_team_that_waited_longest_gets_the_quota() -> None:
    # a's work has waited 2 h (weight × 3 with a 1 h doubling), b's just arrived: 8 GPUs split 3 : 1 → 6 and 2
    decision = controller({"age_doubling_hours": 1})(view({"a": 0.0, "b": 7200.0}))
    assert decision is not None
    assert decision.quotas == {"a": {P5: 6}, "b": {P5: 2}}
