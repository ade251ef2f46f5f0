"""What a plan's writes would make Kueue preempt: the running workloads of the snapshot that a ClusterQueue takes back
its nominal quota from once the plan's amounts are written, by the forecast's own reclaim model
(rebalancer.forecast.engine.preempted: Kueue reclaims among borrowing workloads, lower priority first, then the most
recently admitted first). Each with how long it has run, so that the GPU-hours at risk can be put to whoever approves
the plan and told to the team that loses the work. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rebalancer.domain.outlook import workload_key
from rebalancer.domain.plan import PREEMPTIONS_LISTED, Change, Preemption
from rebalancer.domain.snapshot import Snapshot
from rebalancer.forecast.engine import preempted
from rebalancer.planning.forecast_cluster import cluster_of

Allocations = Mapping[str, Mapping[str, Mapping[str, float]]]  # Plan.allocations


def preemptions(snapshot: Snapshot, allocations: Allocations,
                changes: Iterable[Change]) -> tuple[list[Preemption], float]:
    """The workloads the plan (its `allocations`, reached by `changes`) would make Kueue preempt, the largest by
    GPU-hours first, and the GPU-hours at risk over all of them. Lowering a quota evicts nothing by itself: only a
    team whose quota rises and has work waiting there can take back what others borrow, so only the pools where
    such a team's accelerators rise are looked at (a plan that raises none costs no forecast)."""
    waiting = {(w.team, w.pool) for w in snapshot.pending_workloads}
    raised = {c.instance_type for c in changes if c.resource == "accelerators" and c.after > c.before
              and c.mig_profile is None and (c.team, c.instance_type) in waiting}
    if not snapshot.running_workloads or not raised:
        return [], 0.0
    cluster = cluster_of(snapshot, raised)
    pools = {p.name for p in cluster.pools}
    quotas = {team: {pool: amounts["accelerators"] for pool, amounts in by_pool.items()
                     if pool in pools and "accelerators" in amounts}
              for team, by_pool in allocations.items()}
    listed = {workload_key(w.team, w.name, w.pool): w for w in snapshot.running_workloads}
    at = snapshot.taken_at
    out = []
    for job in preempted(cluster, quotas):
        w = listed.get(job.job)
        name, pool = job.job.removeprefix(f"{job.team}/").rsplit("@", 1)
        ran = None if w is None or w.started is None else max(0.0, (at - w.started).total_seconds())
        out.append(Preemption(team=job.team, workload=name, pool=pool, accelerators=job.accelerators, ran_s=ran))
    out.sort(key=lambda p: (-p.gpu_hours, -p.accelerators, p.team, p.workload, p.pool))
    return out, sum(p.gpu_hours for p in out)


def listed(found: list[Preemption]) -> tuple[tuple[Preemption, ...], int]:
    """What a plan lists of them (the largest PREEMPTIONS_LISTED) and how many it leaves unlisted."""
    return tuple(found[:PREEMPTIONS_LISTED]), max(0, len(found) - PREEMPTIONS_LISTED)
