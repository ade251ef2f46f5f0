"""Node repair in the simulator: the controller's view says which nodes are down and whether HyperPod repairs them
(a repair is due), the production planner sees such a node running and labelled UnschedulablePendingReplacement,
and `capacity.repair_grace_minutes` keeps a failure followed by its repair from cutting quotas and growing them
back."""

from __future__ import annotations

from rebalancer.domain.policy import CapacityPolicy
from rebalancer_tools.simulator.controller import default_policy
from rebalancer_tools.simulator.engine import ControllerView, Decision, Failures, NodeEvent, SimConfig, Simulation
from rebalancer_tools.simulator.kueue import QueueSpec
from rebalancer_tools.simulator.run import Scenario, run_strategy
from rebalancer_tools.simulator.teams import TeamSpec
from rebalancer_tools.simulator.trace import TraceJob

P5 = "ml.p5.48xlarge"


def test_the_view_says_which_nodes_are_down_and_which_are_being_repaired() -> None:
    seen: dict[float, dict[str, tuple[tuple[int, bool], ...]]] = {}

    def controller(view: ControllerView) -> Decision | None:
        seen[view.now_s] = view.down
        return None

    failures = Failures(explicit=(NodeEvent(100, 0, "fail"), NodeEvent(2000, 0, "repair"), NodeEvent(100, 2, "fail")))
    cfg = SimConfig(nodes=3, gpus_per_node=8, controller_interval_s=900, failures=failures)
    Simulation([TraceJob("j", "a", 0, 4000, 8)], ["a"], [QueueSpec("a", 24)], [0], cfg, controller).run()
    assert seen[0.0] == {}
    assert seen[900.0] == {"gpu": ((0, True), (2, False))}  # node 2 has no repair due: failed for good
    assert seen[2700.0] == {"gpu": ((2, False),)}


def _run(grace_minutes: float, fails: bool = True) -> dict[str, object]:
    """Two teams each running 16 of 32 GPUs for 10 h; one node fails at 1 h and is repaired 40 min later."""
    teams = [TeamSpec("a", 1, 16), TeamSpec("b", 1, 16)]
    jobs = [TraceJob(f"{t}{i}", t, 0.0, 36_000.0, 8) for t in "ab" for i in range(2)]
    policy = default_policy(teams, P5, 0.5)
    policy = policy.model_copy(update={"capacity": CapacityPolicy(repair_grace_minutes=grace_minutes)})
    failures = Failures(explicit=(NodeEvent(3600, 0, "fail"), NodeEvent(3600 + 2400, 0, "repair")) if fails else ())
    sc = Scenario(jobs=jobs, teams=teams, nodes=4, failures=failures, policy=policy)
    return run_strategy(sc, "rebalancer").output()


def test_a_failure_repaired_within_the_grace_cuts_no_quota_and_without_a_grace_it_does() -> None:
    calm = _run(0, fails=False)["quota_changes"]  # what the plans change with no failure at all
    without, within, short = _run(0), _run(60), _run(20)
    assert without["quota_changes"] > calm  # cut when the node went, grown back when it came
    assert within["quota_changes"] == calm
    assert short["quota_changes"] > calm  # a 20 min grace ends before the 40 min repair
    assert within["failure_kills"] == without["failure_kills"] == 1  # the node's own job dies either way
