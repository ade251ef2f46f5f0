"""What counts as capacity, per instance type, in one place. Pure.

Three amounts, in nodes, per instance type:
- **now**: nodes a quota may stand on in this run. Schedulable nodes (InstanceStatus Running and not labelled
  `sagemaker.amazonaws.com/node-health-status` = Unschedulable*), plus nodes HyperPod is working on and will give
  back ("unavailable for now": SystemUpdating, DeepHealthCheckInProgress, AttachInProgress, DetachInProgress, or
  Running but labelled Unschedulable, which HyperPod's resiliency labels define as "running deep health checks")
  for `capacity.unavailable_grace_minutes` from the start known of (the earliest of the operation's CreationTime
  and when a run first saw the node in that state, which the planning context carries across runs; a start not
  known is taken as recent: HyperPod ends these states itself, in Running or in a replacement).
  Nodes of a training plan that ends before the next run (`capacity.run_interval_minutes`) are taken away ahead.
  While a Scaling or DeepHealthCheck operation is in progress on a group, its type is not shrunk below what the
  quotas hold (up to the group's target): the operation, not a loss, explains the missing nodes.
- **lasting**: of now, what guarantees may stand on: not spot capacity (unless `capacity.guarantees_on_spot`).
- **reachable**: what quotas may sum to. On a cluster whose DescribeCluster says AutoScaling Mode Enable, up to
  the autoscaler's ceiling (Karpenter NodePool limits as collect read them, else the policy's
  `cluster.autoscaling.max_nodes`): Kueue admits nothing beyond nominal quota, so a quota held
  to today's nodes would never let the pods exist that make the autoscaler add nodes. Otherwise reachable = now.

Why the grace: one reading of a node in a deep health check must not shrink quotas and grow them back a run later
(two writes, and a reclaim of borrowed work in between); an hour is four runs at the stack's default rate (15 min),
long enough for a health check or an update, short enough that a node that does not come back is dealt with
within the hour.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from rebalancer.catalog import specs as catalog
from rebalancer.domain.healthy import SCHEDULABLE_STATUS, NodeState, counts, node_state
from rebalancer.domain.policy import CapacityPolicy, Policy
from rebalancer.domain.pools import PoolKey, holdings
from rebalancer.domain.snapshot import InstanceGroup, Snapshot
from rebalancer.engine.allocation import EPS, Claims

HOLDING_OPERATIONS = frozenset({"Scaling", "DeepHealthCheck"})


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@dataclass(frozen=True, slots=True)
class TypeCapacity:
    now: int = 0  # nodes counted in this run
    lasting: int = 0  # of those, what guarantees may stand on
    reachable: int = 0  # what quotas may sum to, in nodes (≥ now)
    unhealthy: int = 0  # nodes not counted
    held_amount: float = 0.0  # a floor on the type's amount while an operation is in progress (0: none)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Capacity:
    by_type: Mapping[str, TypeCapacity]

    def of(self, instance_type: str) -> TypeCapacity:
        return self.by_type.get(instance_type, _NONE)

    def amount_now(self, instance_type: str, carved: float) -> float:
        """The type's amount now, in its primary unit, less what MIG partitions occupy; at least what an operation
        in progress holds."""
        c = self.of(instance_type)
        amount = float(max(0, c.now * catalog.spec(instance_type).primary_per_instance - carved))
        return max(amount, c.held_amount)

    def pool(self, key: PoolKey, capacity: float, claims: Claims) -> tuple[float, Claims]:
        """A whole-unit pool's capacity (`capacity`: its amount now less what teams outside the policy hold) raised
        to what the autoscaler can reach, and its claims with guarantees scaled to fit what lasts."""
        if key.mig_profile:
            return capacity, claims
        c = self.of(key.instance_type)
        per = catalog.spec(key.instance_type).primary_per_instance
        lasting = max(0.0, capacity - (c.now - c.lasting) * per)
        reach = capacity + (c.reachable - c.now) * per
        if lasting >= reach:  # every unit lasts: the engine scales guarantees above it itself
            return reach, claims
        return reach, bound_guarantees(claims, lasting)


_NONE = TypeCapacity()


def bound_guarantees(claims: Claims, limit: float) -> Claims:
    """Guarantees scaled down proportionally to fit `limit` (the capacity that lasts), each team told why."""
    total = sum(claims.guarantee)
    if total <= max(limit, 0.0) + EPS:
        return claims
    factor = max(limit, 0.0) / total
    note = f"guarantees scaled to {factor:.0%}: only {max(limit, 0.0):g} of the capacity lasts (not spot)"
    return replace(claims, guarantee=tuple([g * factor for g in claims.guarantee]),
                   notes=tuple([(*n, note) if g else n for n, g in zip(claims.notes, claims.guarantee, strict=True)]))


_Kind = tuple[str, str, str, str | None]  # a node's (InstanceType, InstanceGroupName, status, health label)


def _kinds(snapshot: Snapshot) -> Counter[_Kind]:
    health = snapshot.node_health
    return Counter((n.InstanceType, n.InstanceGroupName, n.InstanceStatus.Status, health.get(n.InstanceId))
                   for n in snapshot.nodes)


def of_snapshot(snapshot: Snapshot, policy: Policy, seen_since: Mapping[str, datetime] | None = None) -> Capacity:
    """Every instance type's capacity in the snapshot, with the notes that explain it: the nodes counted, then per
    type what counts now, what lasts, what the autoscaler can reach and what an operation holds. `seen_since`: by
    InstanceId, since when runs have seen the node unavailable for now in its present state
    (PlanningContext.unavailable_since)."""
    kinds = _kinds(snapshot)
    tally = _count_nodes(snapshot, kinds, policy.capacity, seen_since or {})
    held = _held_by_operations(snapshot, _busy_groups(snapshot))
    ceilings, source = _ceilings(snapshot, policy)
    types = sorted({t for t, _, _, _ in kinds} | set(held) | set(ceilings))
    return Capacity({t: _of_type(t, tally, held.get(t), ceilings.get(t), source) for t in types})


@dataclass(slots=True)
class _Tally:
    """Per instance type: nodes counted now, of those on spot (when spot carries no guarantee), nodes lost, and
    why nodes were lost or counted for now."""

    counted: Counter[str] = field(default_factory=Counter)
    spot: Counter[str] = field(default_factory=Counter)
    lost: Counter[str] = field(default_factory=Counter)
    why: dict[str, Counter[str]] = field(default_factory=dict)
    expired: dict[str, list[str]] = field(default_factory=dict)  # per type, one line per node past the grace

    def note(self, instance_type: str, what: str, k: int = 1) -> None:
        self.why.setdefault(instance_type, Counter())[what] += k


def _count_nodes(snapshot: Snapshot, kinds: Counter[_Kind], rules: CapacityPolicy,
                 seen_since: Mapping[str, datetime]) -> _Tally:
    """Nodes alike (type, group, status, label) count alike, so they are counted once per kind: only a node
    unavailable for now or under repair is looked at on its own (its times). A plan step counts the 222,500 nodes of
    10,000 teams × 15 types eleven times (its plan and the forecast's re-plans)."""
    graces = timedelta(minutes=rules.unavailable_grace_minutes), timedelta(minutes=rules.repair_grace_minutes)
    horizon = snapshot.taken_at + timedelta(minutes=rules.run_interval_minutes)
    groups = {g.InstanceGroupName: g for g in snapshot.cluster.InstanceGroups}
    ends = {name: _plan_end(snapshot, g, horizon) for name, g in groups.items()}  # once per group, not per node
    tally = _Tally()
    timed: dict[_Kind, NodeState] = {}
    for kind, k in kinds.items():
        t, group, status, label = kind
        state = node_state(status, label)
        ending = ends.get(group)
        if ending is not None:
            tally.lost[t] += k
            tally.note(t, ending, k)
        elif state.kind in ("for now", "repair"):
            timed[kind] = state
        elif state.kind == "lost":
            tally.lost[t] += k
            if state.what != "unhealthy":
                tally.note(t, state.what, k)
        else:
            _add_counted(tally, t, k, rules.guarantees_on_spot or not _spot(groups.get(group)))
    if timed:
        _count_timed(snapshot, rules, seen_since, timed, graces, tally)
    return tally


def _add_counted(tally: _Tally, instance_type: str, k: int, lasting: bool) -> None:
    tally.counted[instance_type] += k
    if not lasting:
        tally.spot[instance_type] += k


def _count_timed(snapshot: Snapshot, rules: CapacityPolicy, seen_since: Mapping[str, datetime],
                 timed: Mapping[_Kind, NodeState], graces: tuple[timedelta, timedelta], tally: _Tally) -> None:
    """The nodes unavailable for now or under repair, in the snapshot's order: each counts while its grace lasts
    from the start known of (its operation's, or the first run that saw it)."""
    health = snapshot.node_health
    groups = {g.InstanceGroupName: g for g in snapshot.cluster.InstanceGroups}
    started = _operation_starts(snapshot)
    for n in snapshot.nodes:
        t = n.InstanceType
        state = timed.get((t, n.InstanceGroupName, n.InstanceStatus.Status, health.get(n.InstanceId)))
        if state is None:
            continue
        known = [started.get(n.InstanceId) or started.get(n.InstanceGroupName), seen_since.get(n.InstanceId)]
        since = min((s for s in known if s is not None), default=None)
        repair = state.kind == "repair"
        minutes = rules.repair_grace_minutes if repair else rules.unavailable_grace_minutes
        if not counts(state, None if since is None else snapshot.taken_at - since, *graces):
            tally.lost[t] += 1
            if since is None or not minutes:
                tally.note(t, state.what if repair else f"unavailable ({state.what}), no grace")
                continue
            tally.expired.setdefault(t, []).append(
                f"node {n.InstanceId} {'' if repair else 'in '}{state.what} since {since.strftime('%H:%M')}, "
                f"past the {minutes:g} min {'repair ' if repair else ''}grace")
            continue
        tally.note(t, f"under repair ({state.what}), counted for up to {minutes:g} min" if repair else
                   f"unavailable for now ({state.what}), counted for up to {minutes:g} min")
        _add_counted(tally, t, 1, rules.guarantees_on_spot or not _spot(groups.get(n.InstanceGroupName)))


def _of_type(t: str, tally: _Tally, held: tuple[float, str] | None, ceiling: int | None,
             source: str) -> TypeCapacity:
    counted, lost, spot = tally.counted[t], tally.lost[t], tally.spot[t]
    notes = [f"{_plural(lost, 'node')} of {t} unhealthy"] if lost else []
    notes += [f"{_plural(k, 'node')} of {t} {what}" for what, k in sorted(tally.why.get(t, Counter()).items())]
    notes += tally.expired.get(t, [])
    if spot:
        notes.append(f"{_plural(spot, 'node')} of {t} on spot: shared by weight, no guarantee stands on them")
    if held is not None:
        notes.append(f"{held[1]} in progress: quotas of {t} are not shrunk for it")
    reachable = counted
    if ceiling is not None and ceiling > counted:
        reachable = ceiling
        notes.append(f"autoscaler may add {_plural(ceiling - counted, 'node')} of {t} (up to {ceiling}, {source}): "
                     f"quotas may reach them, guarantees stay within the {counted} there now")
    return TypeCapacity(now=counted, lasting=counted - spot, reachable=reachable, unhealthy=lost,
                        held_amount=held[0] if held is not None else 0.0, notes=tuple(notes))


def unavailable_for_now(snapshot: Snapshot) -> dict[str, str]:
    """By InstanceId, the state of each node that is unavailable for now or under repair ("SystemUpdating",
    "labelled UnschedulablePendingReboot", ...): what the planning context remembers first-seen times of."""
    out = {}
    health = snapshot.node_health
    for n in snapshot.nodes:
        label = health.get(n.InstanceId)
        if label is None and n.InstanceStatus.Status == SCHEDULABLE_STATUS:
            continue  # most nodes: no state to remember (the plan of 1,000 teams walks ~22,000 nodes here)
        state = node_state(n.InstanceStatus.Status, label)
        if state.kind in ("for now", "repair"):
            out[n.InstanceId] = state.what
    return out


def _spot(group: InstanceGroup | None) -> bool:
    return group is not None and group.spot


def _plan_end(snapshot: Snapshot, group: InstanceGroup | None, horizon: datetime) -> str | None:
    """Why the node's capacity goes before the next run (its training plan ends), or None."""
    if group is None or not group.TrainingPlanArn:
        return None
    plan = snapshot.training_plans.get(group.TrainingPlanArn)
    if plan is None or plan.EndTime is None or plan.EndTime > horizon:
        return None
    name = plan.TrainingPlanName or group.TrainingPlanArn.rsplit("/", 1)[-1]
    return f"taken away ahead: training plan {name} ends {plan.EndTime.isoformat()}"


def _busy_groups(snapshot: Snapshot) -> dict[str, str]:
    """Group → the operation in progress on it (ActiveOperations, or an InProgress operation naming it)."""
    out: dict[str, str] = {}
    for g in snapshot.cluster.InstanceGroups:
        active = sorted(k for k, v in (g.ActiveOperations or {}).items() if v and k in HOLDING_OPERATIONS)
        if active and g.InstanceGroupName:
            out[g.InstanceGroupName] = active[0]
    for op in snapshot.operations:
        if op.Status == "InProgress" and op.Type in HOLDING_OPERATIONS:
            for name in op.InstanceGroupNames:
                out.setdefault(name, op.Type)
    return out


def _operation_starts(snapshot: Snapshot) -> dict[str, datetime]:
    """When the operation a node (by InstanceId) or a group (by name) is in started, where the snapshot says."""
    out: dict[str, datetime] = {}
    for op in snapshot.operations:
        if op.Status != "InProgress" or op.CreationTime is None:
            continue
        for key in (*op.InstanceIds, *op.InstanceGroupNames):
            out[key] = min(out.get(key, op.CreationTime), op.CreationTime)
    return out


def _held_by_operations(snapshot: Snapshot, busy: Mapping[str, str]) -> dict[str, tuple[float, str]]:
    """Per instance type with an operation in progress on one of its groups: the amount its quotas hold (enabled
    ones), at most the busy groups' target, and which operation."""
    targets: Counter[str] = Counter()
    what: dict[str, str] = {}
    desired = {name: n for op in snapshot.operations if op.Status == "InProgress"
               for name, n in op.TargetCounts.items()}
    for g in snapshot.cluster.InstanceGroups:
        operation = busy.get(g.InstanceGroupName or "")
        if operation and g.InstanceType:
            wanted = desired.get(g.InstanceGroupName or "", 0)
            targets[g.InstanceType] += max(g.TargetCount or 0, g.CurrentCount, wanted)
            what[g.InstanceType] = f"{operation} on group {g.InstanceGroupName}"
    if not targets:
        return {}
    quoted: dict[str, float] = {}
    for q in snapshot.quotas:
        if q.ActivationState != "Disabled":
            for pool, amount in holdings(q).items():
                if pool in targets:
                    quoted[pool] = quoted.get(pool, 0.0) + amount
    return {t: (min(quoted.get(t, 0.0), targets[t] * catalog.spec(t).primary_per_instance), what[t])
            for t in targets}


def _ceilings(snapshot: Snapshot, policy: Policy) -> tuple[dict[str, int], str]:
    """Nodes per type the autoscaler can reach, and where that came from; none on a cluster without autoscaling."""
    if not snapshot.cluster.autoscaled:
        return {}, ""
    if snapshot.autoscaling_max_nodes:
        return dict(snapshot.autoscaling_max_nodes), "Karpenter NodePool limits"
    wanted = policy.cluster.autoscaling if policy.cluster is not None else None
    if wanted is not None and wanted.max_nodes:
        return dict(wanted.max_nodes), "the policy's cluster.autoscaling.max_nodes"
    return {}, ""


def topology_warnings(snapshot: Snapshot, raised: set[str]) -> list[str]:
    """A line per team whose quota the plan raises while it has pending work asking for a topology level: Kueue's
    topology-aware scheduling admits such a gang only where one domain (block, rack) has room, which more quota
    alone does not give."""
    out = []
    for team in sorted(raised & set(snapshot.topology_pending)):
        asked = snapshot.topology_pending[team]
        count = len(asked) + snapshot.topology_unlisted.get(team, 0)
        shown = ", ".join(asked[:3]) + (f" and {count - 3} more" if count > 3 else "")
        out.append(f"{team}: the raise may not let {_plural(count, 'pending workload')} start: "
                   f"{shown}, asking for one topology domain, which more quota alone does not give")
    return out
