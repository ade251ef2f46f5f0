"""A plan's basis (rebalancer.domain.basis) from the snapshot and the planning context it was made with: the same
capacity model the plan stood on (rebalancer.planning.capacity, through the pools' capacity), so that comparing two
bases compares like with like. Pure."""

from __future__ import annotations

from rebalancer.catalog import specs as catalog
from rebalancer.domain.basis import PlanBasis
from rebalancer.domain.context import PlanningContext
from rebalancer.domain.policy import Policy
from rebalancer.domain.pools import PoolKey, holdings
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import InvalidInput
from rebalancer.planning.pools import capacity_of


def basis_of(snapshot: Snapshot, policy: Policy, context: PlanningContext) -> PlanBasis:
    held_by = {}
    for q in snapshot.quotas:
        try:
            held_by[q.team] = holdings(q) if q.ActivationState != "Disabled" else {}
        except InvalidInput:  # the planner has refused such a snapshot already; its pools are not compared
            held_by[q.team] = {}
    held: dict[str, float] = {}
    for holds in held_by.values():
        for pool, amount in holds.items():
            held[pool] = held.get(pool, 0.0) + amount
    healthy = capacity_of(snapshot, policy, held_by, context.unavailable_since)
    ceilings = {}
    for t, c in healthy.model.by_type.items():
        if c.reachable > c.now:
            ceilings[t] = float(c.reachable * catalog.spec(t).primary_per_instance)
    demand: dict[str, dict[str, float]] = {}
    for team, by_pool in snapshot.demand.items():
        for pool, d in by_pool.items():
            try:
                key = healthy.parsed.get(pool) or PoolKey.parse(pool)
            except ValueError:  # demand on a type the catalog does not know: nothing was planned for it
                continue
            amount = d.total(key.resource)
            if amount:
                demand.setdefault(team, {})[pool] = amount
    config = snapshot.scheduler_config
    return PlanBasis(taken_at=snapshot.taken_at, capacity=dict(healthy.raw), held=held, ceilings=ceilings,
                     quota_versions={q.team: q.ComputeQuotaVersion for q in snapshot.quotas},
                     scheduler_version=config.ClusterSchedulerConfigVersion if config else None, demand=demand)
