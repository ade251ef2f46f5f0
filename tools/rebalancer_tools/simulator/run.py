"""One scenario (trace, teams, cluster), several strategies: builds each strategy's queues and runs it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rebalancer import catalog
from rebalancer.errors import InvalidInput
from rebalancer.policy import Policy
from rebalancer_tools.simulator.engine import Controller, Failures, SimConfig, Simulation
from rebalancer_tools.simulator.kueue import QueueSpec
from rebalancer_tools.simulator.metrics import StrategyResult, summarize
from rebalancer_tools.simulator.teams import TeamSpec
from rebalancer_tools.simulator.trace import TraceJob

STRATEGIES = ("static", "builtin", "rebalancer", "pooled")
INSTANCE_TYPES = {8: "ml.p5.48xlarge", 4: "ml.g5.12xlarge", 16: "ml.trn1.32xlarge", 1: "ml.g5.xlarge"}


def instance_type_for(gpus_per_node: int) -> str:
    it = INSTANCE_TYPES.get(gpus_per_node)
    if it is None:
        raise InvalidInput(f"no HyperPod instance type modelled with {gpus_per_node} accelerators per node "
                           f"(choose one of {sorted(INSTANCE_TYPES)})", field="--gpus-per-node", value=gpus_per_node)
    assert catalog.spec(it).accelerators == gpus_per_node
    return it


@dataclass(frozen=True)
class Scenario:
    jobs: Sequence[TraceJob]
    teams: Sequence[TeamSpec]
    nodes: int
    gpus_per_node: int = 8
    controller_interval_s: float = 900.0
    apply_delay_s: float = 120.0
    approval_delay_s: float = 0.0
    checkpoint_s: float = 0.0
    borrow_limit_percent: int = 50
    failures: Failures = field(default_factory=Failures)
    seed: int = 0
    policy: Policy | None = None
    guarantee_fraction: float = 0.5

    @property
    def capacity(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def instance_type(self) -> str:
        return instance_type_for(self.gpus_per_node)

    def check(self) -> None:
        names = {t.name for t in self.teams}
        unknown = sorted({j.team for j in self.jobs} - names)
        if unknown:
            raise InvalidInput(f"trace has jobs of team(s) not in the teams file: {', '.join(unknown[:5])}",
                               field="team", value=unknown[0])


def _queues(sc: Scenario, strategy: str) -> tuple[list[QueueSpec], list[int]]:
    teams = list(sc.teams)
    if strategy == "pooled":
        return [QueueSpec("pool", sc.capacity, borrow=False, lend=False)], [0] * len(teams)
    if strategy == "static":
        queues = [QueueSpec(t.name, t.quota, t.weight, lend=False, borrow=False) for t in teams]
    elif strategy in ("builtin", "rebalancer"):
        queues = [QueueSpec(t.name, t.quota, t.weight, borrow_limit_percent=sc.borrow_limit_percent) for t in teams]
    else:
        raise InvalidInput(f"unknown strategy {strategy!r} (choose from {', '.join(STRATEGIES)})",
                           field="--strategies", value=strategy)
    return queues, list(range(len(teams)))


def controller_for(sc: Scenario) -> Controller:
    from rebalancer_tools.simulator.controller import PlannerController, default_policy

    policy = sc.policy or default_policy(list(sc.teams), sc.instance_type, sc.guarantee_fraction)
    return PlannerController(policy, list(sc.teams), sc.instance_type, sc.nodes, sc.borrow_limit_percent)


def run_strategy(sc: Scenario, strategy: str, progress: Callable[[float], None] | None = None,
                 controller: Controller | None = None) -> StrategyResult:
    sc.check()
    queues, queue_of_team = _queues(sc, strategy)
    sharing = strategy in ("builtin", "rebalancer")
    config = SimConfig(
        nodes=sc.nodes, gpus_per_node=sc.gpus_per_node, share_unallocated=sharing, fair_share=sharing,
        checkpoint_s=sc.checkpoint_s, controller_interval_s=sc.controller_interval_s, apply_delay_s=sc.apply_delay_s,
        approval_delay_s=sc.approval_delay_s,
        failures=sc.failures, seed=sc.seed, label=strategy)
    if strategy == "rebalancer" and controller is None:
        controller = controller_for(sc)
    elif strategy != "rebalancer":
        controller = None
    sim = Simulation(sc.jobs, [t.name for t in sc.teams], queues, queue_of_team, config, controller,
                     weights=[t.weight for t in sc.teams])
    result = summarize(strategy, sim.run(progress))
    report = getattr(controller, "budget_report", None)
    return dataclasses.replace(result, budgets=report()) if report else result
