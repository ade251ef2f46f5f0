"""The cluster as a forecast (rebalancer.forecast) starts from it, read from a snapshot: each pool's size, each
team's ClusterQueue as its compute quota configures it, what runs and what waits. Both the estimated starts
(rebalancer.planning.eta) and a plan's preemptions (rebalancer.planning.preemptions) forecast from it. Pure."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from rebalancer.domain.outlook import workload_key
from rebalancer.domain.pools import holdings
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.domain.snapshot import NO_DEMAND, Snapshot
from rebalancer.forecast import model as fc
from rebalancer.planning.why import DEFAULT_BORROW_LIMIT, capacity


def queue_of(quota: ComputeQuota | None, team: str, pool: str, held: Mapping[str, float] | None = None) -> fc.Queue:
    """The team's ClusterQueue in `pool` as its compute quota configures it (the simulator applies a plan's writes
    by this too). `held`: the quota's holdings (rebalancer.domain.pools.holdings), when the caller has them."""
    if quota is None:  # a team without a compute quota has no ClusterQueue: nothing of it is admitted
        return fc.Queue(team, 0.0, lend=False, borrow=False)
    cfg = quota.ComputeQuotaConfig
    sharing = cfg.ResourceSharingConfig
    strategy = sharing.Strategy if sharing is not None else "LendAndBorrow"
    absolute = next((float(r.Accelerators) for r in (sharing.AbsoluteBorrowLimits or ()) if sharing is not None
                     and r.InstanceType == pool and r.Accelerators is not None), None) if sharing else None
    percent = (sharing.BorrowLimit if sharing is not None and sharing.BorrowLimit is not None
               else DEFAULT_BORROW_LIMIT)
    weight = quota.ComputeQuotaTarget.FairShareWeight
    nominal = (holdings(quota) if held is None else held).get(pool, 0.0)
    return fc.Queue(team, nominal, weight=float(weight) if weight is not None else 1.0,
                    lend=strategy != "DontLend", borrow=strategy == "LendAndBorrow",
                    borrow_limit_percent=None if absolute is not None else float(percent), borrow_limit=absolute,
                    preempt_within=cfg.PreemptTeamTasks != "Never")


def cluster_of(snapshot: Snapshot, only: Collection[str] | None = None) -> fc.Cluster:
    """Every instance type with accelerators that a workload waits for or runs on (of `only`, when given); each
    team's queue in it; what runs (what demand says is in use beyond the workloads listed counts as one workload
    that started now)."""
    quotas = {q.team: q for q in snapshot.quotas}
    held = {q.team: holdings(q) for q in snapshot.quotas}  # once per quota, not once per quota and pool
    pools = sorted({w.pool for w in snapshot.pending_workloads} | {w.pool for w in snapshot.running_workloads})
    if only is not None:
        pools = [p for p in pools if p in only]
    at = snapshot.taken_at.timestamp()
    out = []
    for pool in pools:
        size = capacity(snapshot, pool)
        running = [fc.Running(workload_key(w.team, w.name, w.pool), w.team, w.accelerators,
                              w.started.timestamp() if w.started else at, priority=w.priority or 0,
                              declared=w.declared_s, limit=w.limit_s)
                   for w in snapshot.running_workloads if w.pool == pool]
        listed: dict[str, float] = {}
        for r in running:
            listed[r.team] = listed.get(r.team, 0.0) + r.accelerators
        for team, by_pool in sorted(snapshot.demand.items()):
            rest = by_pool.get(pool, NO_DEMAND).in_use.accelerators - listed.get(team, 0.0)
            if rest >= 1:
                running.append(fc.Running(workload_key(team, "(in use, not listed)", pool), team, rest, at))
        waiting = [fc.Waiting(workload_key(w.team, w.name, w.pool), w.team, w.accelerators,
                              w.created.timestamp() if w.created else at, declared=w.declared_s, limit=w.limit_s)
                   for w in snapshot.pending_workloads if w.pool == pool]
        teams = sorted(set(quotas) | {r.team for r in running} | {w.team for w in waiting})
        queues = tuple(queue_of(quotas.get(t), t, pool, held.get(t)) for t in teams)
        out.append(fc.Pool(pool, size, queues, tuple(running), tuple(waiting)))
    config = snapshot.scheduler_config.SchedulerConfig if snapshot.scheduler_config is not None else {}
    return fc.Cluster(at, tuple(out), fair_share=config.get("FairShare", "Enabled") != "Disabled",
                      share_unallocated=config.get("IdleResourceSharing", "Enabled") != "Disabled")
