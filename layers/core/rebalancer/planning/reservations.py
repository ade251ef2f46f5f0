"""Whether a new reservation can be kept, checked when it is made (so the planner never meets one that cannot fit):
its window (bounded in time), its pool and team, the pool's capacity that lasts, and over every one of its windows,
each held from its lead: the team's cap on what it reserves at once, and the sum over teams of max(guarantee,
reserved) against that capacity. Pure: the caller brings the time, the snapshot, the policy and the cluster's other
reservations. Each refusal is one line (ReservationRefused).

The overlap check is a sweep: each hold of each reservation on the pool is two events (+amount where it begins,
-amount where it ends), sorted once, and the sum of max(guarantee, reserved) is kept up to date one team at a time,
so thousands of stored reservations (and a year of a recurring one's windows) cost O(n log n), not a pass over every
reservation at every instant (benchmarks/reservations_bench.py)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta

from rebalancer.catalog import specs as catalog
from rebalancer.domain.policy import Policy, TeamPolicy
from rebalancer.domain.reservation import Reservation
from rebalancer.domain.snapshot import Snapshot
from rebalancer.engine.reservations import pool_total, unhonoured
from rebalancer.errors import ReservationRefused
from rebalancer.planning import capacity
from rebalancer.spelling import nearest

# How far ahead a reservation may reach: its record is kept until a year and a month past its end (the table's
# AUDIT_RETENTION) and a recurring one's windows are counted one by one when a reservation is checked.
AHEAD_MAX = timedelta(days=366)
# The lead by default: a run every `capacity.run_interval_minutes` (the stack's ScheduleRate) must fall inside it,
# and that run must have its quotas in place before the window opens: collect, plan, apply, and verify's polls (at
# most 10 minutes: the template's VERIFY_POLL_SECONDS × VERIFY_MAX_ATTEMPTS), with a few minutes to spare.
SETTLE_MINUTES = 15


def default_lead_minutes(policy: Policy) -> int:
    """How long before each window its quota is raised unless the request says: one run interval and the time
    that run takes to settle (30 minutes with the default 15-minute schedule)."""
    return math.ceil(policy.capacity.run_interval_minutes) + SETTLE_MINUTES


def refuse_if_unfit(new: Reservation, policy: Policy, snapshot: Snapshot, others: Sequence[Reservation],
                    now: datetime) -> None:
    """Raises ReservationRefused naming what does not fit; returns when `new` can be kept."""
    _check_window(new, now)
    team = _check_team(new, policy)
    total = lasting_total(snapshot, policy, new.pool)
    if new.accelerators > total:
        raise ReservationRefused(f"{new.accelerators} accelerators is above the {total:g} of {new.pool} that last "
                                 "in the cluster (healthy, not spot)", field="--accelerators", value=new.accelerators)
    cap = team.cap_for(new.pool, pool_total(snapshot, new.pool))
    if new.accelerators > cap:
        raise ReservationRefused(f"{new.accelerators} accelerators is above team {new.team}'s cap.{new.pool} = "
                                 f"{cap:g}", field="--accelerators", value=new.accelerators)
    same_pool = [r for r in others if r.pool == new.pool and r.reservation_id != new.reservation_id
                 and r.status != "cancelled"]
    _sweep(new, policy, same_pool, total, cap)


def lasting_total(snapshot: Snapshot, policy: Policy, instance_type: str) -> float:
    """What guarantees of the type may stand on: its nodes counted now that last (rebalancer.planning.capacity)."""
    return float(capacity.of_snapshot(snapshot, policy).of(instance_type).lasting
                 * catalog.spec(instance_type).primary_per_instance)


def _check_window(new: Reservation, now: datetime) -> None:
    if new.until <= new.start:
        raise ReservationRefused(f"--until {new.until.isoformat()} is not after --from {new.start.isoformat()}",
                                 field="--until", value=new.until.isoformat())
    if new.until <= now:
        raise ReservationRefused(f"--until {new.until.isoformat()} is in the past (now {now.isoformat()})",
                                 field="--until", value=new.until.isoformat())
    if new.start < now:
        raise ReservationRefused(f"--from {new.start.isoformat()} is in the past (now {now.isoformat()}); leave "
                                 "--from out to start now", field="--from", value=new.start.isoformat())
    if new.until > now + AHEAD_MAX:
        raise ReservationRefused(f"--until {new.until.isoformat()} is more than {AHEAD_MAX.days} days ahead (now "
                                 f"{now.isoformat()}); reserve again nearer the time", field="--until",
                                 value=new.until.isoformat())
    if new.recurring and next(new.windows(new.start, new.until), None) is None:
        raise ReservationRefused(f"--every {new.every} ({new.timezone}) opens no window between --from "
                                 f"{new.start.isoformat()} and --until {new.until.isoformat()}", field="--every",
                                 value=new.every)


def _check_team(new: Reservation, policy: Policy) -> TeamPolicy:
    spec = catalog.spec(new.pool, field="--pool")
    if ":" in new.pool or not spec.accelerators:
        raise ReservationRefused(f"{new.pool} is not an accelerator instance type (a reservation holds whole "
                                 "accelerators)", field="--pool", value=new.pool)
    team = policy.teams.get(new.team)
    why = unhonoured(new.team, new.pool, team)
    if why or team is None:
        near = nearest(new.team, (t for t, p in policy.teams.items() if not p.remove), within=2) if team is None \
            else None
        hint = f"; did you mean {near}?" if near else ""
        raise ReservationRefused(f"{why or f'team {new.team} is not managed by the policy'}{hint}", field="--team",
                                 value=new.team)
    return team


def _sweep(new: Reservation, policy: Policy, others: Sequence[Reservation], total: float, cap: float) -> None:
    """At every instant of each of `new`'s holds: the new team's reservations within its cap, and every team's
    max(guarantee, reserved) within what lasts."""
    holds = list(new.holds(new.held_from, new.until))
    if not holds:
        return
    since, before = holds[0][0], holds[-1][1]
    events: list[tuple[datetime, int, str, int]] = []  # (when, 0 = ends before 1 = begins, team, amount)
    for r in (new, *others):
        for begins, ends in r.holds(since, before):
            events += [(begins, 1, r.team, r.accelerators), (ends, 0, r.team, -r.accelerators)]
    events.sort(key=lambda e: (e[0], e[1]))
    floors = {name: tp.guarantee_for(new.pool, total) for name, tp in policy.teams.items() if not tp.remove}
    reserved: dict[str, int] = defaultdict(int)
    held = sum(floors.values())
    mine = iter(holds)
    hold: tuple[datetime, datetime] | None = next(mine)
    i = 0
    while i < len(events):
        at = events[i][0]
        while i < len(events) and events[i][0] == at:  # everything at this instant, ends first
            _, _, team, amount = events[i]
            if team in floors:
                floor = floors[team]
                held += max(floor, reserved[team] + amount) - max(floor, reserved[team])
            reserved[team] += amount
            i += 1
        while hold is not None and at >= hold[1]:
            hold = next(mine, None)
        if hold is None:
            return
        if at < hold[0]:
            continue
        if reserved[new.team] > cap:
            raise ReservationRefused(f"from {at.isoformat()} team {new.team}'s reservations on {new.pool} would be "
                                     f"{reserved[new.team]}, above its cap.{new.pool} = {cap:g}",
                                     field="--accelerators", value=new.accelerators)
        if held > total + 1e-9:
            parts = ", ".join(f"{name} {amount:g} {'reserved' if reserved.get(name) else 'guaranteed'}"
                              for name, amount in sorted((n, max(f, reserved.get(n, 0))) for n, f in floors.items())
                              if amount)
            raise ReservationRefused(f"from {at.isoformat()} reservations and guarantees on {new.pool} would hold "
                                     f"{held:g} of its {total:g} accelerators ({parts})", field="--accelerators",
                                     value=new.accelerators)
