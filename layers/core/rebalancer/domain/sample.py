"""A light demand sample: what the scheduled observe step records every few minutes, so that a policy can be
backtested on the cluster's own recent history (`rebalancer backtest`, in the tools).

Per pool (an instance type, or `type:profile` for MIG partitions) and in the pool's primary unit (accelerators,
vCPUs or partitions): each team's in use, pending and quota; per instance type the healthy and unhealthy nodes.
A few kilobytes for fifty teams, against the hundreds a full snapshot takes. A sample read from a file names only
instance types and MIG profiles of the catalog, carries a time zone, and stays within the counts below.
"""

import functools
from typing import Annotated, Literal

from pydantic import AwareDatetime, Field, NonNegativeFloat, field_validator

from rebalancer.catalog import specs as catalog
from rebalancer.domain.frozen import Frozen
from rebalancer.domain.pools import PoolKey, holdings
from rebalancer.domain.snapshot import HEALTHY_NODE_STATUS, Snapshot
from rebalancer.errors import InvalidInput

MAX_NODES = 100_000  # of one instance type; HyperPod clusters hold thousands
MAX_TEAMS = 10_000
MAX_POOLS = 200  # pools a team uses: instance types and their MIG profiles
Count = Annotated[int, Field(ge=0, le=MAX_NODES * 8)]  # nodes, or MIG partitions (at most 7 per GPU)


@functools.lru_cache(maxsize=1024)
def _check_pool(pool: str) -> None:
    """ValueError naming the type or the MIG profile (cached: every sample of a history names the same pools)."""
    PoolKey.parse(pool)


class PoolUse(Frozen):
    in_use: NonNegativeFloat = 0
    pending: NonNegativeFloat = 0
    quota: NonNegativeFloat = 0


class Nodes(Frozen):
    healthy: Annotated[int, Field(ge=0, le=MAX_NODES)] = 0
    unhealthy: Annotated[int, Field(ge=0, le=MAX_NODES)] = 0


class DemandSample(Frozen):
    format: Literal[1] = 1
    cluster: str = Field(max_length=256)
    cluster_arn: str = Field(max_length=2048)
    at: AwareDatetime
    nodes: dict[str, Nodes] = Field(default_factory=dict, max_length=MAX_POOLS)  # per instance type
    mig: dict[str, dict[str, Count]] = Field(default_factory=dict, max_length=MAX_POOLS)  # healthy partitions
    teams: dict[str, dict[str, PoolUse]] = Field(default_factory=dict, max_length=MAX_TEAMS)  # team → pool → use

    @field_validator("nodes", "mig")
    @classmethod
    def _instance_types(cls, per_type: dict[str, object]) -> dict[str, object]:
        for itype in per_type:
            if itype not in catalog.known_types():
                raise ValueError(f"{itype[:80]!r} is not an instance type this tool knows (e.g. ml.p5.48xlarge)")
        return per_type

    @field_validator("teams")
    @classmethod
    def _pools(cls, teams: dict[str, dict[str, PoolUse]]) -> dict[str, dict[str, PoolUse]]:
        for team, pools in teams.items():
            if len(pools) > MAX_POOLS:
                raise ValueError(f"team {team[:40]!r} uses {len(pools)} pools, more than {MAX_POOLS}")
            for pool in pools:
                _check_pool(pool)
        return teams


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

