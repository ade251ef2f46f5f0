"""One scenario (trace, teams, cluster), several strategies: builds each strategy's queues and runs it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rebalancer.catalog import specs as catalog
from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput
from rebalancer.forecast.durations import Drawn
from rebalancer.forecast.estimate import DrawFrom
from rebalancer.parsing.text import short
from rebalancer_tools.simulator.autoscaling import Autoscaling
from rebalancer_tools.simulator.engine import Controller, Failures, PoolSpec, SimConfig, Simulation
from rebalancer_tools.simulator.eta import Estimator
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


def pool_of(value: str, types: Sequence[str]) -> str | None:
    """The cluster's pool a trace's `instance_type` value names: '' the first pool, an instance type itself, an
    accelerator kind or model the one pool whose type has it. None when no pool (or more than one) matches."""
    if not value:
        return types[0]
    if value in types:
        return value
    v = value.lower()
    matches = [t for t in types if v in {(catalog.spec(t).accelerator_kind or "").lower(),
                                         (catalog.spec(t).accelerator_model or "").lower()}]
    return matches[0] if len(matches) == 1 else None


@dataclass(frozen=True, slots=True)
class Scenario:
    jobs: Sequence[TraceJob]
    teams: Sequence[TeamSpec]
    nodes: int = 0  # with gpus_per_node: the one pool when `pools` is empty
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
    pools: tuple[tuple[str, int], ...] = ()  # (instance type, nodes) per pool; the first is the default pool
    # instance type → its pool's autoscaling (`nodes` above is then the size at the start); none: fixed pools
    autoscaling: tuple[tuple[str, Autoscaling], ...] = ()
    # On an autoscaled cluster: the controller reads the autoscaler's ceiling (Karpenter NodePool limits) and
    # plans quotas up to it; False: it cannot read one and plans to the nodes present.
    plan_to_ceiling: bool = True
    # Ask, at each controller run, when the jobs that arrived since will start, and measure those estimates against
    # the starts (StrategyResult.eta); not on autoscaled pools.
    eta: bool = False

    @property
    def pool_specs(self) -> tuple[PoolSpec, ...]:
        if not self.pools:
            return (PoolSpec(instance_type_for(self.gpus_per_node), self.nodes, self.gpus_per_node),)
        scaling = dict(self.autoscaling)
        return tuple(PoolSpec(t, n, catalog.spec(t).accelerators, scaling.get(t)) for t, n in self.pools)

    @property
    def instance_types(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.pool_specs)

    @property
    def capacity(self) -> int:
        return sum(p.nodes * p.per_node for p in self.pool_specs)

    @property
    def instance_type(self) -> str:
        return self.pool_specs[0].name

    def describe_pools(self) -> str:
        return " + ".join(f"{p.nodes} × {p.name}" for p in self.pool_specs)

    def check(self) -> None:
        names = {t.name for t in self.teams}
        unknown = sorted({j.team for j in self.jobs} - names)
        if unknown:
            raise InvalidInput(f"trace has jobs of team(s) not in the teams file: {', '.join(unknown[:5])}",
                               field="team", value=unknown[0])
        types = set(self.instance_types)
        for t in self.teams:
            stray = sorted({it for it, _ in t.quotas} - types)
            if stray:
                raise InvalidInput(f"team {short(t.name)} has a quota of {stray[0]}, not a pool of the cluster "
                                   f"({', '.join(self.instance_types)})", field="instance_type", value=stray[0])
        self.resolved_jobs()

    def resolved_jobs(self) -> Sequence[TraceJob]:
        """The jobs with each one's instance type resolved to the cluster's pool it runs in. InvalidInput naming
        the first job whose type or accelerator kind matches no pool."""
        types = self.instance_types
        if all(not j.instance_type or j.instance_type in types for j in self.jobs):
            return self.jobs
        resolved: dict[str, str] = {}
        for j in self.jobs:
            if j.instance_type not in resolved:
                pool = pool_of(j.instance_type, types)
                if pool is None:
                    raise InvalidInput(f"job {short(j.job_id)} runs on {short(j.instance_type)}, which names no "
                                       f"single pool of the cluster ({', '.join(types)})", field="instance_type",
                                       value=j.instance_type)
                resolved[j.instance_type] = pool
        return [dataclasses.replace(j, instance_type=resolved[j.instance_type]) for j in self.jobs]

    def jobs_by_pool(self) -> list[tuple[str, list[TraceJob], int, int]]:
        """(instance type, its jobs, capacity, accelerators per node) per pool."""
        jobs = self.resolved_jobs()
        first = self.instance_type
        return [(p.name, [j for j in jobs if (j.instance_type or first) == p.name], p.nodes * p.per_node, p.per_node)
                for p in self.pool_specs]


def _queues(sc: Scenario, strategy: str) -> tuple[list[QueueSpec], list[int]]:
    teams = list(sc.teams)
    first = sc.instance_type
    queues: list[QueueSpec] = []
    for pool, spec in enumerate(sc.pool_specs):
        if strategy == "pooled":
            queues.append(QueueSpec("pool", spec.nodes * spec.per_node, borrow=False, lend=False, pool=pool))
        elif strategy == "static":
            queues += [QueueSpec(t.name, t.quota_in(spec.name, first), t.weight, lend=False, borrow=False, pool=pool)
                       for t in teams]
        elif strategy in ("builtin", "rebalancer"):
            queues += [QueueSpec(t.name, t.quota_in(spec.name, first), t.weight,
                                 borrow_limit_percent=sc.borrow_limit_percent, pool=pool) for t in teams]
        else:
            raise InvalidInput(f"unknown strategy {strategy!r} (choose from {', '.join(STRATEGIES)})",
                               field="--strategies", value=strategy)
    return queues, [0] * len(teams) if strategy == "pooled" else list(range(len(teams)))


def effective_policy(sc: Scenario) -> Policy:
    """The rebalancer's policy: the scenario's, or the teams' weights with part of their hand-set quota guaranteed."""
    from rebalancer_tools.simulator.controller import default_policy

    types = sc.instance_types
    return sc.policy or default_policy(list(sc.teams), types[0] if len(types) == 1 else types, sc.guarantee_fraction)


def controller_for(sc: Scenario) -> Controller:
    from rebalancer_tools.simulator.controller import PlannerController

    pools = {p.name: p.nodes for p in sc.pool_specs}
    ceilings = {t: a.max_nodes for t, a in sc.autoscaling} if sc.plan_to_ceiling else None
    return PlannerController(effective_policy(sc), list(sc.teams), pools,
                             borrow_limit_percent=sc.borrow_limit_percent, autoscaled=bool(sc.autoscaling),
                             max_nodes=ceilings)


def run_strategy(sc: Scenario, strategy: str, progress: Callable[[float], None] | None = None,
                 controller: Controller | None = None) -> StrategyResult:
    return simulate(sc, strategy, progress, controller)[0]


def simulate(sc: Scenario, strategy: str, progress: Callable[[float], None] | None = None,
             controller: Controller | None = None, draw: DrawFrom = Drawn) -> tuple[StrategyResult, Simulation]:
    """One strategy's run: its result, and the simulation it ran (node-hours and scaling of autoscaled pools).
    `draw`: how the estimates' forecasts draw durations (the controller's way but in a measurement of it)."""
    sc.check()
    queues, queue_of_team = _queues(sc, strategy)
    sharing = strategy in ("builtin", "rebalancer")
    config = SimConfig(
        pools=sc.pool_specs, share_unallocated=sharing, fair_share=sharing,
        checkpoint_s=sc.checkpoint_s, controller_interval_s=sc.controller_interval_s, apply_delay_s=sc.apply_delay_s,
        approval_delay_s=sc.approval_delay_s,
        failures=sc.failures, seed=sc.seed, label=strategy)
    if strategy == "rebalancer" and controller is None:
        controller = controller_for(sc)
    elif strategy != "rebalancer":
        controller = None
    estimator = None
    if sc.eta:
        replan = getattr(controller, "replan", None)
        estimator = Estimator(replan, sc.controller_interval_s, sc.apply_delay_s, draw=draw)
    sim = Simulation(sc.resolved_jobs(), [t.name for t in sc.teams], queues, queue_of_team, config, controller,
                     weights=[t.weight for t in sc.teams], eta=estimator)
    result = summarize(strategy, sim.run(progress))
    report = getattr(controller, "budget_report", None)
    return (dataclasses.replace(result, budgets=report()) if report else result), sim
