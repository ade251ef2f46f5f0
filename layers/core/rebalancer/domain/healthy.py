"""Healthy capacity at the write, and the rule every quota write obeys: no write raises the enabled quotas of an
instance type above the healthy capacity read just before it, unless they held as much already (a pool a node left
may stay where it was, never grow).

Counted per instance type in its primary unit (accelerators, or vCPUs of a CPU-only type), as the quotas hold it:
`Count` as that many instances' worth, a MIG partition as its share of one GPU (a GPU carved into partitions is
a GPU of the same nodes).

What a node is, from its status and its `sagemaker.amazonaws.com/node-health-status` label, is decided in one place
(`node_state`), for the planner (rebalancer.planning.capacity, which reads both and times the graces) and for the
guard at the write (which reads ListClusterNodes only, so it sees no label): schedulable; unavailable for now (a
state HyperPod ends by itself and gives the node back, counted for `capacity.unavailable_grace_minutes`); under
repair (labelled UnschedulablePendingReplacement / UnschedulablePendingReboot while its instance still runs: HyperPod
replaces or reboots it; counted for `capacity.repair_grace_minutes`); or lost. The guard counts every node the
planner may count (it has no first-sighting times, and a start not known is recent for the planner too), so a plan
that stands on a node within its grace is not refused here; a node whose status says it failed counts nowhere.
The guard is never stricter than the plan, and a plan made before a node failed is.

On a cluster whose autoscaler may add nodes, what the quotas may reach is the autoscaler's ceiling, which the plan
read (`ceilings`, from the run's basis); a node failing there does not lower it."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from rebalancer.catalog import mig
from rebalancer.catalog import specs as catalog
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.errors import InvalidInput

SCHEDULABLE_STATUS = "Running"
# Nodes HyperPod is working on and gives back (rebalancer.planning.capacity counts them for a grace period).
FOR_NOW_STATUSES = frozenset({"SystemUpdating", "DeepHealthCheckInProgress", "AttachInProgress", "DetachInProgress"})
FOR_NOW_LABELS = frozenset({"Unschedulable"})  # "The node is running deep health checks"
# HyperPod's health monitoring found a fault and replaces or reboots the node (its resiliency labels).
REPAIR_LABELS = frozenset({"UnschedulablePendingReplacement", "UnschedulablePendingReboot"})
COUNTED_STATUSES = frozenset({SCHEDULABLE_STATUS, *FOR_NOW_STATUSES})
EPS = 1e-6

_ANY_GRACE = timedelta(days=1)  # the guard's: it counts every node the planner may count under some grace

NodeKind = Literal["schedulable", "for now", "repair", "lost"]


@dataclass(frozen=True, slots=True)
class NodeState:
    """What a node is for capacity, and in words ("SystemUpdating", "labelled UnschedulablePendingReboot")."""

    kind: NodeKind
    what: str = ""


SCHEDULABLE = NodeState("schedulable")


def node_state(status: str | None, label: str | None) -> NodeState:
    """The one definition of a healthy node. `status`: InstanceStatus.Status; `label`: its node-health-status label
    (None: not read, or none). Under repair only while the instance still runs (a counted status): a status that
    says the instance failed is lost whatever the label says, so the guard, which reads no label, never counts
    less than the planner."""
    if status not in COUNTED_STATUSES:
        return NodeState("lost", "unhealthy")
    if label in REPAIR_LABELS:
        return NodeState("repair", f"labelled {label}")
    if label is not None and label.startswith("Unschedulable") and label not in FOR_NOW_LABELS:
        return NodeState("lost", f"labelled {label}")
    if status in FOR_NOW_STATUSES:
        return NodeState("for now", status)
    if label in FOR_NOW_LABELS:
        return NodeState("for now", f"labelled {label}")
    return SCHEDULABLE


def counts(state: NodeState, elapsed: timedelta | None, unavailable_grace: timedelta,
           repair_grace: timedelta) -> bool:
    """Whether a node in `state` counts: schedulable always; unavailable for now or under repair while `elapsed`
    (how long it has been in that state; None: a start not known, taken as recent, since HyperPod ends these states
    itself) is within its grace (just at the grace still counts; a grace of 0 counts nothing); lost never."""
    if state.kind in ("schedulable", "lost"):
        return state.kind == "schedulable"
    grace = repair_grace if state.kind == "repair" else unavailable_grace
    return grace > timedelta(0) and (elapsed is None or elapsed <= grace)


def healthy_capacity(nodes: Iterable[tuple[str, str]]) -> dict[str, float]:
    """Per instance type, what its counted nodes carry, as the guard reads them (status only, no first sighting:
    `node_state` with no label, `counts` with no start). `nodes`: (instance type, status) pairs; a type the
    catalog does not know is left out (no quota of it is counted either)."""
    out: dict[str, float] = {}
    for instance_type, status in nodes:
        if not counts(node_state(status, None), None, _ANY_GRACE, _ANY_GRACE):
            continue
        try:
            per = catalog.spec(instance_type).primary_per_instance
        except InvalidInput:
            continue
        out[instance_type] = out.get(instance_type, 0.0) + float(per)
    return out


def load(quota: ComputeQuota | None) -> dict[str, float]:
    """What a quota holds per instance type, in the type's primary unit; nothing when it is disabled or absent."""
    if quota is None or quota.ActivationState == "Disabled":
        return {}
    out: dict[str, float] = {}
    for r in quota.ComputeQuotaConfig.ComputeQuotaResources:
        t = r.InstanceType
        try:
            spec = catalog.spec(t)
            if r.AcceleratorPartition is not None:
                amount = r.AcceleratorPartition.Count / mig.partitions_per_gpu_on(t, r.AcceleratorPartition.Type)
            elif spec.accelerators:
                amount = float(r.Accelerators if r.Accelerators is not None else (r.Count or 0) * spec.accelerators)
            else:
                amount = float(r.VCpu if r.VCpu is not None else (r.Count or 0) * spec.vcpu)
        except InvalidInput:  # a type or profile the catalog does not know: no capacity to hold it against
            continue
        out[t] = out.get(t, 0.0) + amount
    return out


def total(quotas: Iterable[ComputeQuota]) -> dict[str, float]:
    out: dict[str, float] = {}
    for q in quotas:
        for t, amount in load(q).items():
            out[t] = out.get(t, 0.0) + amount
    return out


def limits(healthy: Mapping[str, float], ceilings: Mapping[str, float]) -> dict[str, float]:
    """Per type, what the enabled quotas may sum to: the healthy capacity, or the autoscaler's ceiling if higher."""
    return {t: max(healthy.get(t, 0.0), ceilings.get(t, 0.0)) for t in {*healthy, *ceilings}}


@dataclass(slots=True)
class Guard:
    """The enabled quotas of one cluster, per instance type, as just read, against the limits just read; each
    write is checked (`refusal`) and then taken into account (`wrote`): the state of one pass of writes; the limits
    may be read again between writes (`read_again`). `held`: per quota id, what it holds per type; `totals`: their
    sums per type; `first`: the limits as read before the first write."""

    held: dict[str, dict[str, float]]
    totals: dict[str, float]
    limit: dict[str, float]
    first: dict[str, float]

    @classmethod
    def of(cls, quotas: Iterable[ComputeQuota], limit: Mapping[str, float]) -> "Guard":
        held = {q.ComputeQuotaId: load(q) for q in quotas}
        totals: dict[str, float] = {}
        for amounts in held.values():
            for t, amount in amounts.items():
                totals[t] = totals.get(t, 0.0) + amount
        return cls(held, totals, dict(limit), dict(limit))

    def read_again(self, limit: Mapping[str, float]) -> None:
        """The limits as just read: the next writes are checked against them."""
        self.limit = dict(limit)

    def _after(self, quota_id: str | None, after: ComputeQuota | None) -> dict[str, float]:
        was = self.held.get(quota_id or "", {})
        now = load(after)
        return {t: self.totals.get(t, 0.0) - was.get(t, 0.0) + now.get(t, 0.0) for t in {*was, *now}}

    def refusal(self, quota_id: str | None, after: ComputeQuota | None) -> str | None:
        """Why writing `after` over quota `quota_id` (None: a new quota) would raise an instance type above its
        limit, one line naming each type, the quotas' sum after the write and the limit; None when it may be
        written."""
        over = []
        for t, amount in sorted(self._after(quota_id, after).items()):
            before, limit = self.totals.get(t, 0.0), self.limit.get(t, 0.0)
            if amount > limit + EPS and amount > before + EPS:
                first = self.first.get(t, 0.0)
                over.append(f"{t}: the enabled quotas would hold {amount:g}, the cluster has {limit:g} healthy"
                            + (f" (they hold {before:g} now)" if before > limit + EPS else "")
                            + (f" (it had {first:g} when this pass of writes began)" if first > limit + EPS
                               else ""))
        return "; ".join(over) or None

    def wrote(self, quota_id: str, after: ComputeQuota | None) -> None:
        """A write was made: the quota now holds `after` (None: deleted)."""
        self.totals.update(self._after(quota_id, after))
        self.held[quota_id] = load(after)
