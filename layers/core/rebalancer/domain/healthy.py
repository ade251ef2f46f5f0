"""Healthy capacity at the write, and the rule every quota write obeys: no write raises the enabled quotas of an
instance type above the healthy capacity read just before it, unless they held as much already (a pool a node left
may stay where it was, never grow).

Counted per instance type in its primary unit (accelerators, or vCPUs of a CPU-only type), as the quotas hold it:
`Count` as that many instances' worth, a MIG partition as its share of one GPU (a GPU carved into partitions is
a GPU of the same nodes). A node counts when it is Running, or in a state HyperPod ends by itself and gives the
node back (`FOR_NOW_STATUSES`): the planner counts those for a grace period (rebalancer.planning.capacity), so a
plan that stands on them is not refused here; a node that failed counts nowhere. Only ListClusterNodes is read at
the write: the Kubernetes health labels the planner reads as well are not, so this rule is never stricter than the
plan, and a plan made before a node failed is.

On a cluster whose autoscaler may add nodes, what the quotas may reach is the autoscaler's ceiling, which the plan
read (`ceilings`, from the run's basis); a node failing there does not lower it."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rebalancer.catalog import mig
from rebalancer.catalog import specs as catalog
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.errors import InvalidInput

SCHEDULABLE_STATUS = "Running"
# Nodes HyperPod is working on and gives back (rebalancer.planning.capacity counts them for a grace period).
FOR_NOW_STATUSES = frozenset({"SystemUpdating", "DeepHealthCheckInProgress", "AttachInProgress", "DetachInProgress"})
COUNTED_STATUSES = frozenset({SCHEDULABLE_STATUS, *FOR_NOW_STATUSES})
EPS = 1e-6


def healthy_capacity(nodes: Iterable[tuple[str, str]]) -> dict[str, float]:
    """Per instance type, what its counted nodes carry. `nodes`: (instance type, status) pairs; a type the catalog
    does not know is left out (no quota of it is counted either)."""
    out: dict[str, float] = {}
    for instance_type, status in nodes:
        if status not in COUNTED_STATUSES:
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
