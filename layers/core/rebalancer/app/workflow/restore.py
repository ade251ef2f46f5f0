"""What a restore (`rebalancer rollback --to SNAPSHOT`) would do, checked before anything is written: the snapshot's
quotas must be this cluster's (its ARN, and quota ids the cluster holds now: a quota id names one quota in the
account, so a snapshot of another cluster would rewrite that cluster's quotas); the quotas after the restore are
summed per pool against today's healthy capacity; and only the quotas that would change are listed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rebalancer.adapters.sagemaker.quota_writer import same_state
from rebalancer.catalog import specs as catalog
from rebalancer.domain.pools import holdings
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.errors import InvalidInput, UnknownInstanceType
from rebalancer.parsing.text import short

SHOWN_IDS = 3


@dataclass(frozen=True)
class Restore:
    changed: tuple[ComputeQuota, ...]  # the snapshot's quotas that differ from the cluster's now
    unchanged: int
    over_capacity: tuple[str, ...]  # one line per pool the restore would put above its healthy capacity


def check_ownership(cluster_arn: str, target: Sequence[ComputeQuota], current: Mapping[str, ComputeQuota],
                    source: str) -> None:
    """InvalidInput when a quota of the snapshot belongs to another cluster, or is not among this cluster's."""
    for i, q in enumerate(target):
        if q.ClusterArn is not None and q.ClusterArn != cluster_arn:
            raise InvalidInput(f"quota {short(q.Name)} is of {short(q.ClusterArn, 120)}, not {cluster_arn}",
                               source=source, field=f"quotas.{i}.ClusterArn", value=q.ClusterArn)
    foreign = [q.ComputeQuotaId for q in target if q.ComputeQuotaId not in current]
    if foreign:
        listed = ", ".join(short(f) for f in foreign[:SHOWN_IDS]) + (" …" if len(foreign) > SHOWN_IDS else "")
        raise InvalidInput(f"{len(foreign)} quota(s) of the snapshot are not quotas of this cluster now ({listed}): "
                           "deleted since, or of another cluster; nothing restored", source=source,
                           field="quotas", value=foreign[0])


def capacity(healthy: Mapping[str, int]) -> dict[str, float]:
    """Healthy capacity per whole-instance pool, in the pool's unit (accelerators, or vCPUs of a CPU-only type).
    MIG pools are left out: their capacity is known only from the Kubernetes nodes."""
    out = {}
    for itype, nodes in healthy.items():
        try:
            spec = catalog.spec(itype)
        except UnknownInstanceType:
            continue
        out[itype] = float(nodes * (spec.accelerators or spec.vcpu))
    return out


def plan_restore(target: Sequence[ComputeQuota], current: Mapping[str, ComputeQuota],
                 healthy: Counter[str]) -> Restore:
    """The quotas that would change, and the pools the restored state would hold above healthy capacity (the
    snapshot's quotas, and the cluster's quotas the snapshot leaves alone)."""
    wanted = {q.ComputeQuotaId for q in target}
    after: dict[str, float] = {}
    for q in [*target, *(q for qid, q in current.items() if qid not in wanted)]:
        if q.ActivationState == "Disabled":
            continue
        try:
            held = holdings(q)
        except InvalidInput:  # a type the catalog does not know: no capacity to compare with either
            continue
        for pool, amount in held.items():
            after[pool] = after.get(pool, 0.0) + amount
    limits = capacity(healthy)
    over = tuple(f"{pool}: the restored quotas hold {after[pool]:g}, the cluster has {limits[pool]:g} healthy"
                 for pool in sorted(after) if pool in limits and after[pool] > limits[pool] + 1e-9)
    changed = tuple(q for q in target if not same_state(current[q.ComputeQuotaId], q))
    return Restore(changed=changed, unchanged=len(target) - len(changed), over_capacity=over)
