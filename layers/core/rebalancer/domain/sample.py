"""A light demand sample: what the scheduled observe step records every few minutes, so that a policy can be
backtested on the cluster's own recent history (`rebalancer backtest`, in the tools).

Per pool (an instance type, or `type:profile` for MIG partitions) and in the pool's primary unit (accelerators,
vCPUs or partitions): each team's in use, pending and quota; per instance type the healthy and unhealthy nodes.
A few kilobytes for fifty teams, against the hundreds a full snapshot takes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt

from rebalancer.catalog import specs as catalog
from rebalancer.domain.pools import PoolKey, holdings
from rebalancer.domain.snapshot import HEALTHY_NODE_STATUS, Snapshot
from rebalancer.errors import InvalidInput


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class PoolUse(Frozen):
    in_use: NonNegativeFloat = 0
    pending: NonNegativeFloat = 0
    quota: NonNegativeFloat = 0


class Nodes(Frozen):
    healthy: NonNegativeInt = 0
    unhealthy: NonNegativeInt = 0


class DemandSample(Frozen):
    format: Literal[1] = 1
    cluster: str
    cluster_arn: str
    at: datetime
    nodes: dict[str, Nodes] = Field(default_factory=dict)  # per instance type
    mig: dict[str, dict[str, NonNegativeInt]] = Field(default_factory=dict)  # healthy partitions, as in Snapshot
    teams: dict[str, dict[str, PoolUse]] = Field(default_factory=dict)  # team → pool → use


def _resource(pool: str) -> str | None:
    """The primary resource of a pool, or None for an instance type the catalog does not know."""
    try:
        return PoolKey.parse(pool).resource
    except ValueError:
        return None


def sample_of(snapshot: Snapshot) -> DemandSample:
    """The sample of a snapshot. Pools of instance types the catalog does not know are left out (no unit)."""
    nodes: dict[str, list[int]] = {}
    for t in snapshot.instance_types():
        nodes[t] = [0, 0]
    for n in snapshot.nodes:
        nodes.setdefault(n.InstanceType, [0, 0])[0 if n.InstanceStatus.Status == HEALTHY_NODE_STATUS else 1] += 1
    quotas: dict[str, dict[str, float]] = {}
    for q in snapshot.quotas:
        if q.ActivationState == "Disabled":
            continue
        try:
            quotas[q.team] = holdings(q)
        except InvalidInput:  # an unknown instance type in a quota: that quota is not sampled
            continue
    teams: dict[str, dict[str, PoolUse]] = {}
    for team in sorted(set(snapshot.demand) | set(quotas)):
        pools: dict[str, PoolUse] = {}
        held = quotas.get(team, {})
        for pool in sorted(set(snapshot.demand.get(team, {})) | set(held)):
            resource = _resource(pool)
            if resource is None:
                continue
            d = snapshot.demand_of(team, pool)
            use = PoolUse(in_use=d.in_use.get(resource), pending=d.pending.get(resource), quota=held.get(pool, 0.0))
            if use.in_use or use.pending or use.quota:
                pools[pool] = use
        if pools:
            teams[team] = pools
    return DemandSample(cluster=snapshot.cluster.ClusterName, cluster_arn=snapshot.cluster.ClusterArn,
                        at=snapshot.taken_at,
                        nodes={t: Nodes(healthy=h, unhealthy=u) for t, (h, u) in sorted(nodes.items())
                               if t in catalog.known_types()},
                        mig={t: dict(p) for t, p in sorted(snapshot.mig.items())}, teams=teams)

