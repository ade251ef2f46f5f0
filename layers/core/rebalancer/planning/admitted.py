"""The running workloads of the snapshot as the reclaim rule reads them (`reclaim` in the policy,
rebalancer.engine.stability): per accelerator pool, per claim, each workload the team runs there, the newest
admitted first, with how many minutes ago it was admitted. What a team runs beyond the workloads listed (collect
lists a bound per team and pool) or a workload whose admission time is not known is listed as of unknown age, which
keeps the rule from that team in that pool: it might be the work Kueue takes first. So does work of more than one
priority (or of a priority not read): Kueue reclaims the lowest priority first, whatever its age. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from rebalancer.domain.snapshot import RunningWorkload
from rebalancer.engine.allocation import EPS, PoolInput
from rebalancer.engine.stability import Admitted


def admitted_by_pool(workloads: Iterable[RunningWorkload],
                     now: datetime) -> dict[str, dict[str, list[Admitted]]]:
    """pool → team → its running workloads there, newest admitted first (unknown ages first)."""
    out: dict[str, dict[str, list[Admitted]]] = {}
    priorities: dict[tuple[str, str], set[int | None]] = {}
    for w in workloads:
        minutes = None if w.started is None else max(0.0, (now - w.started).total_seconds() / 60)
        out.setdefault(w.pool, {}).setdefault(w.team, []).append(Admitted(w.accelerators, minutes))
        priorities.setdefault((w.pool, w.team), set()).add(w.priority)
    for pool, teams in out.items():
        for team, work in teams.items():
            work.sort(key=lambda a: -1.0 if a.minutes is None else a.minutes)
            if len(priorities[pool, team]) > 1:  # Kueue takes the lowest priority first, whatever its age
                work.insert(0, Admitted(0.0, None))
    return out


def with_admitted(pools: Sequence[PoolInput], workloads: Iterable[RunningWorkload], now: datetime) -> list[PoolInput]:
    """The pools, each accelerator pool listing what its claims run (what they run beyond the workloads listed:
    one entry of unknown age first)."""
    by_pool = admitted_by_pool(workloads, now)
    # What a claim runs beyond the workloads listed, per amount: one entry shared by every claim of that amount (the
    # record is frozen), not one per claim (150,000 claims at 10,000 teams, most of them running unlisted work).
    unknown: dict[float, tuple[Admitted, ...]] = {}
    out = []
    for pool in pools:
        if pool.resource != "accelerators" or ":" in pool.key:
            out.append(pool)
            continue
        teams = by_pool.get(pool.key, {})
        listed = []
        for team, in_use in zip(pool.claims.team, pool.claims.in_use, strict=True):
            work = tuple(teams.get(team, ()))
            unlisted = in_use - sum(a.accelerators for a in work) if work else in_use
            if unlisted <= EPS:
                listed.append(work)
                continue
            first = unknown.get(unlisted)
            if first is None:
                first = unknown[unlisted] = (Admitted(unlisted, None),)
            listed.append(first + work if work else first)
        out.append(replace(pool, admitted=tuple(listed)))
    return out
