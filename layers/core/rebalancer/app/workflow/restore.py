"""What a restore (`rebalancer rollback --to SNAPSHOT`) would do, checked before anything is written: the snapshot's
quotas must be this cluster's (its ARN, and quota ids the cluster holds now: a quota id names one quota in the
account, so a snapshot of another cluster would rewrite that cluster's quotas); the quotas after the restore are
summed per instance type against today's healthy capacity (what the write path will refuse); and only the quotas
that would change are listed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rebalancer.adapters.sagemaker.quota_writer import same_state
from rebalancer.domain.healthy import EPS, total
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.errors import InvalidInput
from rebalancer.parsing.text import short

SHOWN_IDS = 3


@dataclass(frozen=True, slots=True)
class Restore:
    changed: tuple[ComputeQuota, ...]  # the snapshot's quotas that differ from the cluster's now
    unchanged: int
    over_capacity: tuple[str, ...]  # one line per instance type the restore would put above its healthy capacity


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


def plan_restore(target: Sequence[ComputeQuota], current: Mapping[str, ComputeQuota],
                 healthy: Mapping[str, float]) -> Restore:
    """The quotas that would change, and the instance types the restored state would hold above their healthy
    capacity (`healthy`, per type as rebalancer.domain.healthy counts it; the snapshot's quotas and the cluster's
    quotas the snapshot leaves alone). The write path refuses a write that would raise such a type: the restore
    leaves those quotas as they are."""
    wanted = {q.ComputeQuotaId for q in target}
    after = total([*target, *(q for qid, q in current.items() if qid not in wanted)])
    over = tuple(f"{t}: the restored quotas would hold {after[t]:g}, the cluster has {healthy.get(t, 0.0):g} healthy"
                 for t in sorted(after) if after[t] > healthy.get(t, 0.0) + EPS)
    changed = tuple(q for q in target if not same_state(current[q.ComputeQuotaId], q))
    return Restore(changed=changed, unchanged=len(target) - len(changed), over_capacity=over)
