"""The `rebalancer` strategy's controller: what production's collect step would read, then the production planner.

The snapshot is built in AWS shapes exactly as collect builds it (DescribeCluster, ListClusterNodes,
DescribeComputeQuota, Kueue demand = in use + pending accelerators); the plan's UpdateComputeQuota requests become
the new nominal quotas. No allocation logic lives here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from rebalancer.metering import Reading, Used, budget_usage, fact_between, reading_of
from rebalancer.models import (
    Cluster,
    ClusterNode,
    ComputeQuota,
    ComputeQuotaResource,
    Demand,
    InstanceGroup,
    NodeStatus,
    QuotaConfig,
    QuotaTarget,
    Resources,
    SharingConfig,
    Snapshot,
)
from rebalancer.plan import Plan
from rebalancer.policy import Amount, Policy, TeamPolicy
from rebalancer_tools.simulator.engine import ControllerView, Decision
from rebalancer_tools.simulator.teams import TeamSpec

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
CLUSTER_NAME = "simulated"
CLUSTER_ARN = f"arn:aws:sagemaker:us-east-1:111122223333:cluster/{CLUSTER_NAME}"
GROUP = "gpu-workers"
FAILED_NODE_STATUS = "Failure"


def default_policy(teams: list[TeamSpec], instance_type: str, guarantee_fraction: float) -> Policy:
    """Weights from the teams; each team guaranteed `guarantee_fraction` of its hand-set quota and never planned
    below what it runs (so that a quota cut does not turn running work into reclaimable borrowing)."""
    return Policy(teams={t.name: TeamPolicy(weight=t.weight, protected_in_use=True, guarantee={
        instance_type: Amount(value=float(int(t.quota * guarantee_fraction)))}) for t in teams})


def make_plan(snapshot: Snapshot, policy: Policy, now: datetime) -> Plan:
    """The one call into production planning."""
    from rebalancer.planning import make_plan as production_make_plan

    return production_make_plan(snapshot, policy, now)


def quotas_from_plan(plan: Plan, instance_type: str) -> dict[str, int]:
    """Accelerators each UpdateComputeQuota/CreateComputeQuota request sets (the plan's allocation for a request that
    does not spell them out)."""
    out: dict[str, int] = {}
    for req in plan.requests:
        resources = req.parameters.get("ComputeQuotaConfig", {}).get("ComputeQuotaResources", [])
        for r in resources:
            if r.get("InstanceType") == instance_type and r.get("Accelerators") is not None:
                out[req.team] = int(r["Accelerators"])
        if req.team not in out:
            amount = plan.allocations.get(req.team, {}).get(instance_type, {}).get("accelerators")
            if amount is not None:
                out[req.team] = round(amount)
    return out


class PlannerController:
    """Called by the engine every controller interval; returns new quotas or None."""

    def __init__(self, policy: Policy, teams: list[TeamSpec], instance_type: str, nodes: int,
                 borrow_limit_percent: int = 50):
        self.policy = policy
        self.weights = {t.name: t.weight for t in teams}
        self.instance_type = instance_type
        self.nodes = nodes
        self.borrow_limit_percent = borrow_limit_percent
        self.cluster = Cluster(
            ClusterName=CLUSTER_NAME, ClusterArn=CLUSTER_ARN, ClusterStatus="InService",
            InstanceGroups=(InstanceGroup(InstanceGroupName=GROUP, InstanceType=instance_type, CurrentCount=nodes,
                                          TargetCount=nodes, Status="InService"),))
        self._nodes: dict[int, tuple[ClusterNode, ...]] = {}
        self._quotas: dict[tuple[str, int, int], ComputeQuota] = {}
        self._demands: dict[tuple[int, int, float | None], dict[str, Demand]] = {}
        self.plans = 0
        self.skipped = 0
        self._last_unchanged: tuple[object, ...] | None = None
        # Budgets, metered as production meters them: readings → facts → hours per team, instance type and period.
        self.budgets = {name: tp.budget for name, tp in policy.teams.items() if tp.budget is not None}
        self._last_reading: Reading | None = None
        self.used: dict[tuple[str, str], dict[str, Used]] = defaultdict(lambda: defaultdict(Used))

    def node_list(self, healthy: int) -> tuple[ClusterNode, ...]:
        if healthy not in self._nodes:
            self._nodes[healthy] = tuple(
                ClusterNode(InstanceGroupName=GROUP, InstanceId=f"i-{n:017x}", InstanceType=self.instance_type,
                            InstanceStatus=NodeStatus(Status="Running" if n < healthy else FAILED_NODE_STATUS))
                for n in range(self.nodes))
        return self._nodes[healthy]

    def quota(self, team: str, accelerators: int, version: int, modified_s: float) -> ComputeQuota:
        key = (team, accelerators, version)
        if key not in self._quotas:
            self._quotas[key] = ComputeQuota(
                ComputeQuotaId=f"cq-{team}", Name=f"{team}-quota", ComputeQuotaVersion=version,
                Status="Created" if version == 1 else "Updated", ClusterArn=CLUSTER_ARN, ActivationState="Enabled",
                ComputeQuotaTarget=QuotaTarget(TeamName=team, FairShareWeight=round(self.weights.get(team, 1))),
                ComputeQuotaConfig=QuotaConfig(
                    ComputeQuotaResources=(ComputeQuotaResource(InstanceType=self.instance_type,
                                                                Accelerators=accelerators),),
                    ResourceSharingConfig=SharingConfig(Strategy="LendAndBorrow",
                                                        BorrowLimit=self.borrow_limit_percent),
                    PreemptTeamTasks="LowerPriority"),
                CreationTime=EPOCH, LastModifiedTime=EPOCH + timedelta(seconds=modified_s))
        return self._quotas[key]

    def demand(self, in_use: int, pending: int, oldest_s: float | None = None) -> dict[str, Demand]:
        key = (in_use, pending, oldest_s)
        if key not in self._demands:
            oldest = None if oldest_s is None else EPOCH + timedelta(seconds=oldest_s)
            self._demands[key] = {self.instance_type: Demand(in_use=Resources(accelerators=in_use),
                                                             pending=Resources(accelerators=pending),
                                                             oldest_pending=oldest)}
        return self._demands[key]

    def snapshot(self, view: ControllerView) -> Snapshot:
        # Workload creation times are collected only for a policy that reads them (as collect would).
        ages = view.oldest_pending_s if self.policy.fairness.age_doubling_hours is not None else {}
        demand: Mapping[str, dict[str, Demand]] = {
            t: self.demand(view.in_use.get(t, 0), view.pending.get(t, 0), ages.get(t)) for t in view.quotas}
        return Snapshot(
            taken_at=EPOCH + timedelta(seconds=view.now_s), cluster=self.cluster,
            nodes=self.node_list(view.healthy_nodes),
            quotas=tuple(self.quota(t, n, view.quota_versions[t], view.quota_modified_s[t])
                         for t, n in view.quotas.items()),
            demand=dict(demand))

    def _inputs(self, view: ControllerView) -> tuple[object, ...]:
        """Everything the plan depends on. `now` only matters through which quotas are in their cooldown."""
        cooldown_s = self.policy.stability.cooldown_minutes * 60
        if self.policy.fairness.age_doubling_hours is not None:
            return (view.now_s,)  # weights grow with waiting time: every tick plans
        return (view.healthy_nodes, tuple(view.quotas.items()), tuple(sorted(view.in_use.items())),
                tuple(sorted(view.pending.items())),
                frozenset(t for t, m in view.quota_modified_s.items() if view.now_s - m < cooldown_s))

    def _meter(self, snap: Snapshot) -> Snapshot:
        """Adds the interval since the last call to each budgeted team's periods; the snapshot with its
        period-to-date use, as the plan step gives it to the planner."""
        if not self.budgets:
            return snap
        reading = reading_of(snap)
        fact = fact_between(self._last_reading, reading) if self._last_reading else None
        self._last_reading = reading
        usage = {}
        for team, budget in self.budgets.items():
            if fact is not None:
                for w in {budget.window(fact.start), budget.window(fact.end - timedelta(microseconds=1))}:
                    for itype, (own, lent) in fact.hours(w.start, w.end).get(team, {}).items():
                        used = self.used[(team, w.label)][itype]
                        used.own += own
                        used.borrowed += lent
            label = budget.window(snap.taken_at).label
            usage[team] = budget_usage(self.used[(team, label)], budget, label, self.policy.prices)
        return snap.model_copy(update={"budget_usage": usage})

    def budget_report(self) -> dict[str, dict[str, dict[str, float]]]:
        """team → period → accelerator-hours used and % of the budget."""
        out: dict[str, dict[str, dict[str, float]]] = {}
        for (team, label), by_type in sorted(self.used.items()):
            u = budget_usage(by_type, self.budgets[team], label, self.policy.prices)
            out.setdefault(team, {})[label] = {"hours": round(u.accelerator_hours, 1),
                                               "percent": round(u.fraction(self.budgets[team]) * 100, 1)}
        return out

    def __call__(self, view: ControllerView) -> Decision | None:
        snap = self._meter(self.snapshot(view))
        # The planner is deterministic: the same inputs that gave no change last time give none again. Budget use
        # changes a plan only by which teams have used theirs up.
        inputs = (*self._inputs(view), frozenset(t for t, u in snap.budget_usage.items()
                                                 if u.fraction(self.budgets[t]) >= 1))
        if inputs == self._last_unchanged:
            self.skipped += 1
            return None
        plan = make_plan(snap, self.policy, snap.taken_at)
        self.plans += 1
        quotas = quotas_from_plan(plan, self.instance_type) if plan.applies else {}
        changed = {t: n for t, n in quotas.items() if view.quotas.get(t) != n}
        self._last_unchanged = None if changed else inputs
        return Decision(changed, plan.requires_approval) if changed else None
