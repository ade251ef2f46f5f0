"""Reservations as a policy rule: each active reservation (the planning context's) raises its team's guarantee in
its pool to at least the reserved amount for this plan, and names itself in the reasons of the team's changes.
Once its window is over the context no longer holds it, so the next plan is the policy's own again. Where it begins
the cooldown does not hold what it brings (`began_since`, read by planning.pools); a plan that leaves a team short
of what it reserves says so (`shortfalls`, read by the planner)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime

from rebalancer.catalog import specs as catalog
from rebalancer.domain.policy import Amount, Policy, TeamPolicy, family_types
from rebalancer.domain.pools import holdings
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.domain.reservation import Reservation
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import UnknownInstanceType


def began_since(team: str, holds: Mapping[str, float], reservations: Sequence[Reservation],
                last_changed: datetime | None) -> bool:
    """Whether a reservation of the team, or on a pool it holds quota in, began to be held (its window's start less
    its lead) after its quota last changed: the changes it brings are not held by the cooldown (the admin asked for
    them at that time), later ones are."""
    return any((r.team == team or holds.get(r.pool)) and (last_changed is None or r.held_from > last_changed)
               for r in reservations)


def ended_since(team: str, holds: Mapping[str, float], ended: Sequence[Reservation],
                last_changed: datetime | None) -> bool:
    """Whether a reservation of the team, or on a pool it holds quota in, ended (or was cancelled) after the team's
    quota last changed while it was held: that change was the reservation's (its raise, or the room made for it),
    and undoing it is the admin's decision at a stated time, as its start was, not churn the cooldown is there to
    damp; held back, a cancelled reservation's accelerators would sit unused for up to the cooldown."""
    return last_changed is not None and any(
        (r.team == team or holds.get(r.pool)) and r.ended_at is not None and r.held_from <= last_changed < r.ended_at
        for r in ended)


def pool_total(snapshot: Snapshot, instance_type: str) -> float:
    """The type's healthy amount in its primary unit (what a percent guarantee or cap is of)."""
    return float(snapshot.healthy_nodes()[instance_type] * catalog.spec(instance_type).primary_per_instance)


def reserved(policy: Policy, snapshot: Snapshot,
             reservations: Sequence[Reservation]) -> tuple[Policy, dict[str, str], list[str]]:
    """The policy with each reserved (team, pool) guarantee at least the sum of its active reservations, bounded by
    the team's cap there; the note per team for its changes' reasons; a warning per reservation it cannot honour."""
    if not reservations:
        return policy, {}, []
    amounts: dict[tuple[str, str], int] = defaultdict(int)
    labels: dict[str, list[str]] = defaultdict(list)
    warnings: list[str] = []
    for r in reservations:
        team = policy.teams.get(r.team)
        why = unhonoured(r.team, r.pool, team)
        if why:
            warnings.append(f"{r.label}: not honoured: {why}")
            continue
        amounts[(r.team, r.pool)] += r.accelerators
        labels[r.team].append(r.label)
    # The other teams holding quota in a reserved pool: what their changes there make room for (a quota that drops
    # when a reservation begins says why).
    holders = [(q.team, _held(q)) for q in snapshot.quotas if q.team in policy.teams]
    for r in reservations:
        if (r.team, r.pool) in amounts:
            for holder, held in holders:
                if holder != r.team and held.get(r.pool):
                    labels[holder].append(f"{r.accelerators} of {r.pool} reserved for {r.team} ({r.label})")
    teams = dict(policy.teams)
    for (name, pool), amount in sorted(amounts.items()):
        teams[name] = _raised(teams[name], pool, amount, pool_total(snapshot, pool), warnings)
    notes = {team: "; ".join(names) for team, names in labels.items()}
    return policy.model_copy(update={"teams": teams}), notes, warnings


def _held(quota: ComputeQuota) -> dict[str, float]:
    try:
        return holdings(quota)
    except UnknownInstanceType:  # said where the quotas are read; here it holds nothing a reservation takes
        return {}


def unhonoured(name: str, pool: str, team: TeamPolicy | None) -> str | None:
    """Why a reservation of team `name` on `pool` cannot be honoured under this policy, or None: the one rule the
    check at creation (rebalancer.planning.reservations) and the planner both apply."""
    if team is None or team.remove:
        return f"team {name} is not managed by the policy"
    for field, amounts in (("guarantee", team.guarantee), ("cap", team.cap)):
        family = next((key for key in amounts if pool in family_types(key)), None)
        if family is not None:
            return (f"team {name}'s {field} names the family {family}: a reservation raises a guarantee of one type, "
                    "which the policy cannot hold beside it")
    return None


def _raised(team: TeamPolicy, pool: str, amount: int, total: float, warnings: list[str]) -> TeamPolicy:
    cap = team.cap_for(pool, total)
    floor = team.guarantee_for(pool, total)
    target = float(min(amount, cap))
    if target < amount:
        warnings.append(f"reservations of {amount} on {pool} for a team capped at {cap:g} there: guarantee {target:g}")
    if target <= floor:
        return team
    guarantee = {**team.guarantee, pool: Amount(value=target)}
    return team.model_copy(update={"guarantee": guarantee})


def shortfalls(allocations: Mapping[str, Mapping[str, Mapping[str, float]]],
               reservations: Sequence[Reservation]) -> list[str]:
    """A warning per active reservation its team does not hold in full after this plan (a hold on another team, a
    cap set since): the next runs bring it once the hold lifts."""
    wanted: dict[tuple[str, str], int] = defaultdict(int)
    for r in reservations:
        wanted[(r.team, r.pool)] += r.accelerators
    out = []
    for (team, pool), amount in sorted(wanted.items()):
        got = allocations.get(team, {}).get(pool, {}).get("accelerators", 0.0)
        if got < amount:
            out.append(f"{team} holds {got:g} of the {amount} it reserves on {pool} after this plan (a hold or "
                       "a cap keeps the rest); later runs raise it once that lifts")
    return out
