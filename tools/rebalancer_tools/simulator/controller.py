"""The `rebalancer` strategy's controller: what production's collect step would read, then the production planner.

The snapshot is built in AWS shapes exactly as collect builds it (DescribeCluster, ListClusterNodes,
DescribeComputeQuota, Kueue demand = in use + pending accelerators); the plan's UpdateComputeQuota and
CreateComputeQuota requests are applied to the quotas read, as the service applies them, and the simulated Kueue takes
each team's ClusterQueue from the quota written (rebalancer.planning.forecast_cluster.queue_of, as the forecast reads
one): nominal quotas, FairShareWeight, lending strategy, BorrowLimit and AbsoluteBorrowLimits, PreemptTeamTasks. No
allocation logic lives here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from rebalancer.catalog import specs as catalog
from rebalancer.domain.context import PlanningContext
from rebalancer.domain.plan import Plan
from rebalancer.domain.policy import Amount, Policy, TeamPolicy
from rebalancer.domain.quotas import ComputeQuota, ComputeQuotaResource, QuotaConfig, QuotaTarget, SharingConfig
from rebalancer.domain.snapshot import (
    Cluster,
    ClusterAutoScaling,
    ClusterNode,
    Demand,
    InstanceGroup,
    NodeStatus,
    PendingWorkload,
    Resources,
    RunningWorkload,
    Snapshot,
)
from rebalancer.forecast import model as forecast
from rebalancer.planning.context import planning_context
from rebalancer.planning.forecast_cluster import queue_of
from rebalancer_tools.simulator.budget_meter import BudgetMeter
from rebalancer_tools.simulator.engine import ControllerView, Decision, settings
from rebalancer_tools.simulator.teams import TeamSpec

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
CLUSTER_NAME = "simulated"
CLUSTER_ARN = f"arn:aws:sagemaker:us-east-1:111122223333:cluster/{CLUSTER_NAME}"
GROUP = "gpu-workers"
FAILED_NODE_STATUS = "Failure"
REPAIR_LABEL = "UnschedulablePendingReplacement"  # a failed node HyperPod replaces: its instance still runs


def _node_id(n: int) -> str:
    return f"i-{n:017x}"


def _group(index: int, instance_type: str) -> str:
    """The first pool's instance group is `gpu-workers`; the others are named after their type."""
    return GROUP if index == 0 else f"{instance_type.removeprefix('ml.').replace('.', '-')}-workers"


def default_policy(teams: list[TeamSpec], instance_type: str | Sequence[str], guarantee_fraction: float) -> Policy:
    """Weights from the teams; each team guaranteed `guarantee_fraction` of its hand-set quota (of each instance
    type) and never planned below what it runs (so that a quota cut does not turn running work into reclaimable
    borrowing)."""
    types = _types(instance_type)
    return Policy(teams={t.name: TeamPolicy(weight=t.weight, protected_in_use=True, guarantee={
        it: Amount(value=float(int(t.quota_in(it, types[0]) * guarantee_fraction))) for it in types})
        for t in teams})


def _types(instance_type: str | Sequence[str]) -> tuple[str, ...]:
    return (instance_type,) if isinstance(instance_type, str) else tuple(instance_type)


def make_plan(snapshot: Snapshot, policy: Policy, now: datetime, context: PlanningContext | None = None) -> Plan:
    """The one call into production planning (`context`: `planning_context`'s, None for the snapshot's alone)."""
    from rebalancer.planning.planner import make_plan as production_make_plan

    return production_make_plan(snapshot, policy, now, context=context)


def written(plan: Plan, read: Mapping[str, ComputeQuota]) -> dict[str, ComputeQuota]:
    """The compute quota of each team the plan writes, once its requests are applied in order to the quotas `read`,
    as the service applies them."""
    out: dict[str, ComputeQuota] = {}
    for req in plan.requests:
        params = req.parameters
        if req.operation == "UpdateComputeQuota" and (before := out.get(req.team, read.get(req.team))) is not None:
            out[req.team] = before.updated(params, ComputeQuotaVersion=before.ComputeQuotaVersion + 1)
        elif req.operation == "CreateComputeQuota":
            out[req.team] = ComputeQuota.model_validate({
                "ComputeQuotaId": f"cq-{req.team}", "Name": params["Name"], "ComputeQuotaVersion": 1,
                "Status": "Created", "ClusterArn": CLUSTER_ARN, "ActivationState": params.get("ActivationState"),
                "ComputeQuotaTarget": params["ComputeQuotaTarget"], "ComputeQuotaConfig": params["ComputeQuotaConfig"]})
    return out


def rewritten_queues(before: Mapping[str, ComputeQuota], after: Mapping[str, ComputeQuota],
                     instance_types: Sequence[str]) -> dict[str, dict[str, forecast.Queue]]:
    """For each team whose quota's settings the writes change (anything but its amounts), its ClusterQueue in each
    pool as the written quota configures it."""
    out: dict[str, dict[str, forecast.Queue]] = {}
    for team, quota in after.items():
        now = {it: queue_of(quota, team, it) for it in instance_types}
        old = before.get(team)
        if old is None or any(settings(q) != settings(queue_of(old, team, it)) for it, q in now.items()):
            out[team] = now
    return out


def quotas_from_plan(plan: Plan, instance_type: str | Sequence[str]) -> dict[str, dict[str, int]]:
    """Accelerators of each instance type that each UpdateComputeQuota/CreateComputeQuota request sets (the plan's
    allocation for a type a request does not spell out): team → type → accelerators."""
    types = _types(instance_type)
    out: dict[str, dict[str, int]] = {}
    for req in plan.requests:
        resources = req.parameters.get("ComputeQuotaConfig", {}).get("ComputeQuotaResources", [])
        team = out.setdefault(req.team, {})
        for r in resources:
            if r.get("InstanceType") in types and r.get("Accelerators") is not None:
                team[r["InstanceType"]] = int(r["Accelerators"])
        for it in types:
            if it not in team:
                amount = plan.allocations.get(req.team, {}).get(it, {}).get("accelerators")
                if amount is not None:
                    team[it] = round(amount)
    return {t: q for t, q in out.items() if q}


@dataclass(frozen=True, slots=True)
class _Flat:
    healthy: tuple[int, ...]
    quotas: dict[str, tuple[int, ...]]
    in_use: dict[str, tuple[int, ...]]
    pending: dict[str, tuple[int, ...]]


def _cut(jobs: tuple[tuple[int, int, float], ...], in_use: int, capacity: int) -> tuple[tuple[int, int, float], ...]:
    total = in_use
    for k, (_, gpus, _) in enumerate(jobs):
        total += gpus
        if total > capacity:
            return jobs[:k + 1]
    return jobs


class PlannerController:
    """Called by the engine every controller interval; returns new quotas or None."""

    def __init__(self, policy: Policy, teams: list[TeamSpec], instance_type: str | Mapping[str, int],
                 nodes: int = 0, borrow_limit_percent: int = 50, autoscaled: bool = False,
                 max_nodes: Mapping[str, int] | None = None):
        """`instance_type` and `nodes`: the cluster's one pool; or a mapping instance type → nodes, one instance
        group (and one pool) per type. `autoscaled`: DescribeCluster says AutoScaling Mode Enable (Karpenter), the
        nodes listed are those present; `max_nodes`: the ceiling per type as collect reads it from Karpenter's
        NodePool limits (None: not readable, so the planner plans to the nodes present)."""
        self.policy = policy
        self.weights = {t.name: t.weight for t in teams}
        pools = {instance_type: nodes} if isinstance(instance_type, str) else dict(instance_type)
        self.instance_types = tuple(pools)
        self.instance_type = self.instance_types[0]
        self.pools = pools
        self.per_node = {it: max(1, catalog.spec(it).accelerators) for it in pools}
        self.borrow_limit_percent = borrow_limit_percent
        self.autoscaled = autoscaled
        self.max_nodes = dict(max_nodes or {})
        self.cluster = Cluster(
            ClusterName=CLUSTER_NAME, ClusterArn=CLUSTER_ARN, ClusterStatus="InService",
            AutoScaling=ClusterAutoScaling(Mode="Enable", AutoScalerType="Karpenter", Status="InService")
            if autoscaled else None,
            InstanceGroups=tuple(InstanceGroup(InstanceGroupName=_group(i, it), InstanceType=it, CurrentCount=n,
                                               TargetCount=n, Status="InService")
                                 for i, (it, n) in enumerate(pools.items())))
        self._nodes: dict[tuple[int, ...], tuple[ClusterNode, ...]] = {}
        # (team, accelerators, version) → the queues the quota was made from, and the quota
        self._quotas: dict[tuple[str, tuple[int, ...], int],
                           tuple[Mapping[str, forecast.Queue] | None, ComputeQuota]] = {}
        self._demands: dict[tuple[tuple[int, ...], tuple[int, ...], tuple[float | None, ...]],
                           dict[str, Demand]] = {}
        self._flat_of: ControllerView | None = None
        self._flat_view = _Flat((), {}, {}, {})
        self.plans = 0
        self.skipped = 0
        self._last_unchanged: tuple[object, ...] | None = None
        self.meter = BudgetMeter(policy)  # budgets, metered as production meters them
        self._workloads: dict[tuple[int, float], PendingWorkload] = {}
        self._running: dict[tuple[int, float], RunningWorkload] = {}
        self._admitted_of: ControllerView | None = None
        self._admitted_seen: dict[str, dict[str, tuple[tuple[int, int, float, int], ...]]] = {}
        self._jobs_of: ControllerView | None = None
        self._jobs_seen: dict[str, dict[str, tuple[tuple[int, int, float], ...]]] = {}
        self._seen: tuple[ControllerView, PlanningContext | None] | None = None  # the last run's view and context
        self._unavailable: dict[str, tuple[str, datetime]] = {}  # the last run's first sightings of nodes down
        self._down_nodes: dict[object, tuple[tuple[ClusterNode, ...], dict[str, str]]] = {}

    def node_list(self, healthy: tuple[int, ...]) -> tuple[ClusterNode, ...]:
        """The nodes of every pool, the first `healthy[i]` of pool i running. Instance ids are numbered across
        the pools."""
        if healthy not in self._nodes:
            nodes: list[ClusterNode] = []
            for i, (it, count) in enumerate(self.pools.items()):
                if self.autoscaled:  # the autoscaler adds and removes nodes: those listed are those present
                    count = healthy[i]
                nodes += [ClusterNode(InstanceGroupName=_group(i, it), InstanceId=_node_id(len(nodes) + n),
                                      InstanceType=it,
                                      InstanceStatus=NodeStatus(Status="Running" if n < healthy[i]
                                                                else FAILED_NODE_STATUS))
                          for n in range(count)]
            self._nodes[healthy] = tuple(nodes)
        return self._nodes[healthy]

    def nodes_of(self, view: ControllerView) -> tuple[tuple[ClusterNode, ...], dict[str, str]]:
        """The nodes as collect lists them, and their health labels: with nodes down, each down node by its own
        number (so that a run's first sighting of it follows that node), a node HyperPod repairs still running
        and labelled UnschedulablePendingReplacement, one failed for good in Failure."""
        if not view.down:
            return self.node_list(self._flat(view).healthy), {}
        key = tuple(sorted(view.down.items()))
        if key not in self._down_nodes:
            self._down_nodes[key] = self._listed(view.down)
        return self._down_nodes[key]

    def _listed(self, down_by_pool: Mapping[str, tuple[tuple[int, bool], ...]]
                ) -> tuple[tuple[ClusterNode, ...], dict[str, str]]:
        nodes: list[ClusterNode] = []
        labels: dict[str, str] = {}
        for i, (it, count) in enumerate(self.pools.items()):
            down = dict(down_by_pool.get(it, ()))
            first = len(nodes)
            for n in range(count):
                node_id = _node_id(first + n)
                failed = n in down and not down[n]
                nodes.append(ClusterNode(InstanceGroupName=_group(i, it), InstanceId=node_id, InstanceType=it,
                                         InstanceStatus=NodeStatus(Status=FAILED_NODE_STATUS if failed
                                                                   else "Running")))
                if down.get(n):
                    labels[node_id] = REPAIR_LABEL
        return tuple(nodes), labels

    def quota(self, team: str, accelerators: tuple[int, ...], version: int, modified_s: float,
              queues: Mapping[str, forecast.Queue] | None = None) -> ComputeQuota:
        """The team's one compute quota: an entry per instance type, in the pools' order; its other settings as its
        ClusterQueues (`queues`, pool → queue) have them, or, not given, as the hand-set quotas set them
        (FairShareWeight the team's weight, LendAndBorrow at the scenario's BorrowLimit, PreemptTeamTasks
        LowerPriority)."""
        key = (team, accelerators, version)
        known = self._quotas.get(key)
        # the engine hands the same mapping over until a write changes it: the identity check is the common hit
        if known is not None and (known[0] is queues or known[0] == queues):
            self._quotas[key] = (queues, known[1])
            return known[1]
        configured = tuple(queues[it] for it in self.instance_types) if queues else None
        quota = ComputeQuota(
            ComputeQuotaId=f"cq-{team}", Name=f"{team}-quota", ComputeQuotaVersion=version,
            Status="Created" if version == 1 else "Updated", ClusterArn=CLUSTER_ARN, ActivationState="Enabled",
            ComputeQuotaTarget=QuotaTarget(TeamName=team, FairShareWeight=round(
                configured[0].weight if configured else self.weights.get(team, 1))),
            ComputeQuotaConfig=QuotaConfig(
                ComputeQuotaResources=tuple(ComputeQuotaResource(InstanceType=it, Accelerators=n)
                                            for it, n in zip(self.instance_types, accelerators, strict=True)),
                ResourceSharingConfig=self._sharing(configured),
                PreemptTeamTasks="LowerPriority" if not configured or configured[0].preempt_within else "Never"),
            CreationTime=EPOCH, LastModifiedTime=EPOCH + timedelta(seconds=modified_s))
        self._quotas[key] = (queues, quota)
        return quota

    def _sharing(self, queues: tuple[forecast.Queue, ...] | None) -> SharingConfig:
        """ResourceSharingConfig as queue_of reads it back: the strategy from lending and borrowing, BorrowLimit
        from a queue limited in percent, AbsoluteBorrowLimits from those limited in accelerators."""
        if not queues:
            return SharingConfig(Strategy="LendAndBorrow", BorrowLimit=self.borrow_limit_percent)
        first = queues[0]
        if not first.borrow:
            return SharingConfig(Strategy="Lend" if first.lend else "DontLend")
        percent = next((round(q.borrow_limit_percent) for q in queues if q.borrow_limit_percent is not None), None)
        absolute = tuple(ComputeQuotaResource(InstanceType=it, Accelerators=round(q.borrow_limit))
                         for it, q in zip(self.instance_types, queues, strict=True) if q.borrow_limit is not None)
        return SharingConfig(Strategy="LendAndBorrow", BorrowLimit=percent, AbsoluteBorrowLimits=absolute or None)

    def demand(self, in_use: tuple[int, ...], pending: tuple[int, ...],
               oldest_s: tuple[float | None, ...] | None = None) -> dict[str, Demand]:
        oldest = oldest_s or (None,) * len(self.instance_types)
        key = (in_use, pending, oldest)
        if key not in self._demands:
            self._demands[key] = {
                it: Demand(in_use=Resources(accelerators=u), pending=Resources(accelerators=p),
                           oldest_pending=None if o is None else EPOCH + timedelta(seconds=o))
                for it, u, p, o in zip(self.instance_types, in_use, pending, oldest, strict=True)}
        return self._demands[key]

    def pending_workloads(self, view: ControllerView) -> tuple[PendingWorkload, ...]:
        """Each pending job as collect lists a Kueue Workload: its GPUs on its pool, its pods (whole nodes), its
        (re)queue time as the creation time. Read only for a policy with `fairness.gang_steps`, `reclaim` on or a
        notice to give, as collect would."""
        if not (self.policy.fairness.gang_steps or self._by_workload()) or view.pending_jobs is None:
            return ()
        out: list[PendingWorkload] = []
        for team, pools in sorted(self._jobs(view).items()):
            for pool, jobs in pools.items():
                per_node = self.per_node[pool]
                for j, gpus, enq in jobs:
                    w = self._workloads.get((j, enq))
                    if w is None:
                        w = self._workloads[j, enq] = PendingWorkload.model_construct(
                            name=f"job-{j:08d}", team=team, pool=pool, accelerators=float(gpus),
                            pods=max(1, -(-gpus // per_node)), created=EPOCH + timedelta(seconds=enq), topology=None)
                    out.append(w)
        return tuple(out)

    def _by_workload(self) -> bool:
        """Whether the plan reads the workloads one by one to take from or name what runs: the reclaim on
        (`reclaim.max_gpu_hours`), or a notice to give before a plan that preempts (`reclaim.notice_minutes`)."""
        return self.policy.reclaim.max_gpu_hours > 0 or self.policy.reclaim.notice_minutes > 0

    def running_workloads(self, view: ControllerView) -> tuple[RunningWorkload, ...]:
        """Each running job as collect lists an admitted Kueue Workload: its GPUs on its pool, its pods (whole
        nodes), when it was admitted (its Admitted condition). Read only for a policy with `reclaim` on or a notice
        to give (the plan names what it would preempt from them)."""
        if not self._by_workload() or view.running_jobs is None:
            return ()
        out: list[RunningWorkload] = []
        for team, pools in sorted(self._admitted(view).items()):
            for pool, jobs in pools.items():
                per_node = self.per_node[pool]
                for j, gpus, started, priority in jobs:
                    w = self._running.get((j, started))
                    if w is None:
                        w = self._running[j, started] = RunningWorkload.model_construct(
                            name=f"job-{j:08d}", team=team, pool=pool, accelerators=float(gpus),
                            pods=max(1, -(-gpus // per_node)), started=EPOCH + timedelta(seconds=started),
                            declared_s=None, limit_s=None, priority=priority)
                    out.append(w)
        return tuple(out)

    def _young(self, view: ControllerView) -> frozenset[tuple[int, float]]:
        """The running jobs the reclaim rule may take (admitted less than max_age_minutes ago). With the same ones,
        a later plan can take no more (each costs more as it runs on), so a plan that changed nothing changes
        nothing again: they are all of the time the skip check needs."""
        if self.policy.reclaim.max_gpu_hours <= 0:
            return frozenset()
        since = view.now_s - self.policy.reclaim.max_age_minutes * 60
        young: set[tuple[int, float]] = set()
        for pools in self._admitted(view).values():
            for jobs in pools.values():
                for j, _, started, _ in jobs:  # newest first
                    if started <= since:
                        break
                    young.add((j, started))
        return frozenset(young)

    def _admitted(self, view: ControllerView) -> dict[str, dict[str, tuple[tuple[int, int, float, int], ...]]]:
        """The view's running jobs, listed once per view (the snapshot and the skip check both read them)."""
        if self._admitted_of is not view:
            self._admitted_of = view
            self._admitted_seen = view.running_jobs() if view.running_jobs is not None else {}
        return self._admitted_seen

    def _jobs(self, view: ControllerView) -> dict[str, dict[str, tuple[tuple[int, int, float], ...]]]:
        """The view's pending jobs, listed once per view (the snapshot and the skip check both read them), each
        team's list cut after the job that takes what it runs plus the jobs before it past the pool's capacity: the
        planner's levels above the first one past capacity never matter, so the plan is the same."""
        if self._jobs_of is not view:
            self._jobs_of = view
            listed = view.pending_jobs() if view.pending_jobs is not None else {}
            capacity = {it: view.healthy_nodes.get(it, 0) * self.per_node[it] for it in self.instance_types}
            self._jobs_seen = {t: {p: _cut(jobs, view.in_use.get(t, {}).get(p, 0), capacity.get(p, 0))
                                   for p, jobs in pools.items()} for t, pools in listed.items()}
        return self._jobs_seen

    def _per_type(self, by_type: Mapping[str, int] | None) -> tuple[int, ...]:
        if not by_type:
            return (0,) * len(self.instance_types)
        return tuple(by_type.get(it, 0) for it in self.instance_types)

    def _flat(self, view: ControllerView) -> _Flat:
        """The view's per-type amounts as tuples in the pools' order (computed once per view: both the snapshot
        and the skip check read them)."""
        if self._flat_of is not view:
            self._flat_of = view
            if len(self.instance_types) == 1:  # the common case, inlined: it runs on every tick for every team
                it = self.instance_type
                self._flat_view = _Flat((view.healthy_nodes.get(it, 0),),
                                        {t: (q.get(it, 0),) for t, q in view.quotas.items()},
                                        {t: (u.get(it, 0),) for t, u in view.in_use.items()},
                                        {t: (p.get(it, 0),) for t, p in view.pending.items()})
            else:
                per = self._per_type
                self._flat_view = _Flat(per(view.healthy_nodes), {t: per(q) for t, q in view.quotas.items()},
                                        {t: per(u) for t, u in view.in_use.items()},
                                        {t: per(p) for t, p in view.pending.items()})
        return self._flat_view

    def snapshot(self, view: ControllerView) -> Snapshot:
        f = self._flat(view)
        zero = (0,) * len(self.instance_types)
        # Workload creation times are collected only for a policy that reads them (as collect would).
        aged = self.policy.fairness.age_doubling_hours is not None
        demand: Mapping[str, dict[str, Demand]] = {
            t: self.demand(f.in_use.get(t, zero), f.pending.get(t, zero),
                           tuple(view.oldest_pending_s.get(t, {}).get(it) for it in self.instance_types)
                           if aged else None)
            for t in view.quotas}
        nodes, labels = self.nodes_of(view)
        return Snapshot(
            taken_at=EPOCH + timedelta(seconds=view.now_s), cluster=self.cluster,
            nodes=nodes, node_health=labels,
            quotas=tuple(self.quota(t, n, view.quota_versions[t], view.quota_modified_s[t], view.queues.get(t))
                         for t, n in f.quotas.items()),
            demand=dict(demand), autoscaling_max_nodes=self.max_nodes,
            pending_workloads=self.pending_workloads(view), running_workloads=self.running_workloads(view))

    def _inputs(self, view: ControllerView) -> tuple[object, ...]:
        """Everything the plan depends on. `now` only matters through which quotas are in their cooldown and which
        running jobs are young enough for the reclaim."""
        cooldown_s = self.policy.stability.cooldown_minutes * 60
        if self.policy.fairness.age_doubling_hours is not None or self.policy.fairness.window_hours is not None:
            return (view.now_s,)  # weights move with waiting time or with use over the window: every tick plans
        f = self._flat(view)
        gangs = (tuple((t, p, tuple(j for j, _, _ in jobs)) for t, pools in sorted(self._jobs(view).items())
                       for p, jobs in pools.items())
                 if (self.policy.fairness.gang_steps or self._by_workload()) and view.pending_jobs is not None
                 else ())
        return (gangs, self._young(view), f.healthy, tuple(f.quotas.items()),
                tuple(sorted(view.quota_versions.items())), tuple(sorted(f.in_use.items())),
                tuple(sorted(f.pending.items())),
                frozenset(t for t, m in view.quota_modified_s.items() if view.now_s - m < cooldown_s))

    def budget_report(self) -> dict[str, dict[str, dict[str, float]]]:
        """team → period → accelerator-hours used and % of the budget."""
        return self.meter.report()

    def __call__(self, view: ControllerView) -> Decision | None:
        snap = self.snapshot(view)
        # Without budgets or a fair-share window the context is the snapshot's alone: make_plan builds it only for
        # the ticks it plans.
        context = None
        if self.meter.active or snap.node_health:
            # Nodes under repair count from the first run that saw them (as the plan step keeps their sightings).
            metered = self.meter.meter(snap) if self.meter.active else None
            context = planning_context(snap, self.policy, metered=metered if self.meter.budgets else None,
                                       trailing=self.meter.trailing, unavailable_seen=self._unavailable)
        self._unavailable = dict(context.unavailable_since) if context is not None else {}
        self._seen = (view, context)
        # The planner is deterministic: the same inputs that gave no change last time give none again. Budget use
        # changes a plan only by which teams have used theirs up, nodes under repair by which are within the grace.
        grace = timedelta(minutes=self.policy.capacity.repair_grace_minutes)
        inputs = (*self._inputs(view), self.meter.exhausted(context.budget_usage if context is not None else {}),
                  frozenset(n for n, (_, since) in self._unavailable.items() if snap.taken_at - since <= grace))
        if inputs == self._last_unchanged:
            self.skipped += 1
            return None
        plan = make_plan(snap, self.policy, snap.taken_at, context)
        self.plans += 1
        decision = self._decision(plan, snap, view)
        self._last_unchanged = None if decision else inputs
        return decision

    def _decision(self, plan: Plan, snap: Snapshot, view: ControllerView) -> Decision | None:
        """What the plan writes, if it applies by itself and changes anything: the accelerators it sets, the
        ClusterQueues of the teams whose other settings it rewrites, and the notice it gives first when it would
        preempt running work (`reclaim.notice_minutes`, after its approval: the run tells the teams, waits, then
        writes; the check after the wait, which may plan again, is not modelled)."""
        if not plan.applies:
            return None
        quotas = quotas_from_plan(plan, self.instance_types)
        changed = {t: q for t, q in quotas.items()
                   if any(view.quotas.get(t, {}).get(it) != n for it, n in q.items())}
        read = {q.team: q for q in snap.quotas}
        queues = rewritten_queues(read, written(plan, read), self.instance_types)
        if not (changed or queues):
            return None
        preempts = bool(plan.preemptions or plan.preemptions_unlisted)
        return Decision(changed, plan.requires_approval, queues,
                        notice_s=self.policy.reclaim.notice_minutes * 60 if preempts else 0.0)

    def replan(self, cluster: forecast.Cluster) -> dict[str, dict[str, int]] | None:
        """The controller inside a forecast (rebalancer.forecast.engine): the quotas it would set for the cluster
        as the forecast has it, planned with the last run's versions, modification times and planning context
        (budget use and use over the window stay as they were then); None for no change. Changes nothing of this
        controller's own runs."""
        if self._seen is None:
            return None
        last, context = self._seen
        pools = {p.name: p for p in cluster.pools}
        teams = {q.team for p in cluster.pools for q in p.queues}
        view = ControllerView(
            now_s=cluster.at,
            healthy_nodes={it: int(pools[it].capacity) // self.per_node[it] for it in self.instance_types},
            failed_nodes=last.failed_nodes, down=last.down,
            quotas={t: {p.name: int(q.nominal) for p in cluster.pools for q in p.queues if q.team == t}
                    for t in teams},
            quota_versions=last.quota_versions, quota_modified_s=last.quota_modified_s,
            in_use={t: {p.name: int(sum(r.accelerators for r in p.running if r.team == t)) for p in cluster.pools}
                    for t in teams},
            pending={t: {p.name: int(sum(w.accelerators for w in p.waiting if w.team == t)) for p in cluster.pools}
                     for t in teams},
            oldest_pending_s={t: {p.name: min(w.queued for w in p.waiting if w.team == t)
                                  for p in cluster.pools if any(w.team == t for w in p.waiting)} for t in teams},
            pending_jobs=lambda: {t: {p.name: tuple((int(w.job), int(w.accelerators), w.queued)
                                                    for w in sorted(p.waiting, key=lambda w: (-w.priority, w.queued,
                                                                                               w.job))
                                                    if w.team == t)
                                      for p in cluster.pools if any(w.team == t for w in p.waiting)}
                                  for t in teams},
            running_jobs=lambda: {t: {p.name: tuple(sorted(((int(r.job), int(r.accelerators), r.started, r.priority)
                                                            for r in p.running if r.team == t),
                                                           key=lambda r: (-r[2], r[0])))
                                      for p in cluster.pools if any(r.team == t for r in p.running)}
                                  for t in teams},
            queues={t: {p.name: q for p in cluster.pools for q in p.queues if q.team == t} for t in teams})
        snap = self.snapshot(view)
        decision = self._decision(make_plan(snap, self.policy, snap.taken_at, context), snap, view)
        return (decision.quotas or None) if decision else None
