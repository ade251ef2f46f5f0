"""Whether a new reservation can be kept, checked when it is made (so the planner never meets one that cannot fit):
its window, its pool and team, the pool's capacity that lasts, the team's caps, and, at every instant of its window,
the sum over teams of max(guarantee, reserved) against that capacity. Pure: the caller brings the time, the
snapshot, the policy and the cluster's other reservations. Each refusal is one line (ReservationRefused)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from rebalancer.catalog import specs as catalog
from rebalancer.domain.policy import Policy, TeamPolicy, family_types
from rebalancer.domain.reservation import Reservation
from rebalancer.domain.snapshot import Snapshot
from rebalancer.engine.reservations import family_key, pool_total
from rebalancer.errors import ReservationRefused
from rebalancer.planning import capacity


def refuse_if_unfit(new: Reservation, policy: Policy, snapshot: Snapshot, others: Sequence[Reservation],
                    now: datetime) -> None:
    """Raises ReservationRefused naming what does not fit; returns when `new` can be kept."""
    _check_window(new, now)
    team = _check_team(new, policy)
    total = lasting_total(snapshot, policy, new.pool)
    if new.accelerators > total:
        raise ReservationRefused(f"{new.accelerators} accelerators is above the {total:g} of {new.pool} that last "
                                 "in the cluster (healthy, not spot)", field="--accelerators", value=new.accelerators)
    _check_caps(new, team, snapshot)
    _check_overlap(new, policy, [r for r in others if r.pool == new.pool and r.reservation_id != new.reservation_id],
                   total)


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


def _check_team(new: Reservation, policy: Policy) -> TeamPolicy:
    spec = catalog.spec(new.pool, field="--pool")
    if ":" in new.pool or not spec.accelerators:
        raise ReservationRefused(f"{new.pool} is not an accelerator instance type (a reservation holds whole "
                                 "accelerators)", field="--pool", value=new.pool)
    team = policy.teams.get(new.team)
    if team is None or team.remove:
        raise ReservationRefused(f"team {new.team} is not managed by the policy", field="--team", value=new.team)
    family = next((key for key in team.guarantee if new.pool in family_types(key)), None)
    if family is not None:
        raise ReservationRefused(f"team {new.team}'s guarantee is on the family {family}: a reservation raises a "
                                 "guarantee of one type, which the policy cannot hold beside it", field="--team",
                                 value=new.team)
    return team


def _check_caps(new: Reservation, team: TeamPolicy, snapshot: Snapshot) -> None:
    cap = team.cap_for(new.pool, pool_total(snapshot, new.pool))
    if new.accelerators > cap:
        raise ReservationRefused(f"{new.accelerators} accelerators is above team {new.team}'s cap.{new.pool} = "
                                 f"{cap:g}", field="--accelerators", value=new.accelerators)
    family = family_key(team, new.pool)
    if family is not None and family in team.cap:
        members = [t for t in family_types(family) if snapshot.healthy_nodes()[t]]
        limit = team.cap[family].resolve(sum(pool_total(snapshot, t) for t in members))
        if new.accelerators > limit:
            raise ReservationRefused(f"{new.accelerators} accelerators is above team {new.team}'s family cap "
                                     f"cap.{family} = {limit:g}", field="--accelerators", value=new.accelerators)


def _check_overlap(new: Reservation, policy: Policy, others: Sequence[Reservation], total: float) -> None:
    """At each instant a reservation in the window starts (and the window's start), every team holds at least its
    guarantee or what it reserves then: the sum must fit the capacity that lasts."""
    overlapping = [r for r in others if r.overlaps(new.start, new.until)]
    instants = sorted({new.start, *(r.start for r in overlapping if r.start > new.start)})
    for at in instants:
        reserved: dict[str, int] = defaultdict(int)
        for r in (new, *overlapping):
            if r.start <= at < r.until:
                reserved[r.team] += r.accelerators
        held = {name: max(tp.guarantee_for(new.pool, total), float(reserved.get(name, 0)))
                for name, tp in policy.teams.items() if not tp.remove}
        if sum(held.values()) > total:
            parts = ", ".join(f"{name} {amount:g} {'reserved' if reserved.get(name) else 'guaranteed'}"
                              for name, amount in sorted(held.items()) if amount)
            raise ReservationRefused(
                f"from {at.isoformat()} reservations and guarantees on {new.pool} would hold "
                f"{sum(held.values()):g} of its {total:g} accelerators ({parts})", field="--accelerators",
                value=new.accelerators)
