"""The pending workloads of the snapshot as the engine's gang sizes (`fairness.gang_steps`): per pool, per claim,
the accelerators of each of the team's pending workloads on that instance type, in the order Kueue's
BestEffortFIFO queues consider them (creation time, then name; a workload without a creation time last). MIG pools
list none: their partitions are not accelerators of the type. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from rebalancer.domain.snapshot import PendingWorkload
from rebalancer.engine.allocation import PoolInput


def gang_sizes(workloads: Iterable[PendingWorkload]) -> dict[str, dict[str, tuple[float, ...]]]:
    """pool → team → sizes of its pending workloads there, in admission order."""
    out: dict[str, dict[str, list[float]]] = {}
    for w in sorted(workloads, key=lambda w: w.admission_order):
        out.setdefault(w.pool, {}).setdefault(w.team, []).append(w.accelerators)
    return {pool: {team: tuple(sizes) for team, sizes in teams.items()} for pool, teams in out.items()}


def with_gangs(pools: Sequence[PoolInput], workloads: Iterable[PendingWorkload]) -> list[PoolInput]:
    """The pools, each accelerator pool listing its claims' gang sizes (() for a team with none there)."""
    sizes = gang_sizes(workloads)
    out = []
    for pool in pools:
        by_team = sizes.get(pool.key)
        if by_team is None:
            out.append(pool)
            continue
        out.append(replace(pool, gangs=tuple(by_team.get(t, ()) for t in pool.claims.team)))
    return out
