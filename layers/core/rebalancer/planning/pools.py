"""Snapshot + policy → the engine's input: per pool, the capacity the policy's teams share and one claim per team.

How a quota's resource entries are read: the whole-GPU (or vCPU) amount of a type is the entry for that type
without an `AcceleratorPartition`, `Accelerators` if set, else `Count` × accelerators per instance (vCPU per
instance for CPU-only types); a MIG pool's amount is `AcceleratorPartition.Count` of the entry with that profile.
Percent guarantees and caps are of the pool's healthy capacity (before what teams outside the policy hold),
rounded down to whole units; demand is rounded up. A family's percent is of the family's healthy total; a family
guarantee is divided over the family's types by the team's demand, then by capacity; a family cap is not divided:
each pool of the family lists it (PoolInput.families) and the engine bounds the team's sum over them. Teams with a
quota but not in the policy keep it, and what they hold is taken out of the capacity the policy's teams share.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import TypeVar

from rebalancer.catalog import mig
from rebalancer.catalog import specs as catalog
from rebalancer.domain import ownership
from rebalancer.domain.policy import Amount, Policy, TeamPolicy, family_types
from rebalancer.domain.pools import PoolKey, holdings, pool_name
from rebalancer.domain.snapshot import ComputeQuota, Demand, Snapshot
from rebalancer.engine.allocation import EPS, INF, Claims, FamilyBound, PoolInput, largest_remainder
from rebalancer.errors import InvalidInput
from rebalancer.planning.aging import aged_weights
from rebalancer.planning.capacity import of_snapshot as capacity_of


def split_family(amount: int, capacities: dict[str, float]) -> dict[str, int]:
    """`amount` whole units divided across types in proportion to their healthy capacity, by largest remainder
    (ties: larger capacity, then type name). Never above a type's capacity; sums to `amount` when it fits."""
    names = sorted(capacities)
    total = sum(capacities.values())
    amount = min(amount, math.floor(total + EPS))
    if amount <= 0 or total <= 0:
        return dict.fromkeys(names, 0)
    values = [amount * capacities[t] / total for t in names]
    caps = [capacities[t] for t in names]
    return dict(zip(names, largest_remainder(values, amount, caps, caps, names), strict=True))


def split_by_demand(amount: int, capacities: dict[str, float], demand: Mapping[str, float]) -> dict[str, int]:
    """A family guarantee's `amount` placed where the team's demand is: in proportion to its demand on each type
    (at most that demand and the type's capacity), and what demand leaves over by the healthy capacity left."""
    names = sorted(capacities)
    wants = {t: min(max(demand.get(t, 0.0), 0.0), capacities[t]) for t in names}
    wanted = sum(wants.values())
    amount = min(amount, math.floor(sum(capacities.values()) + EPS))
    first = min(amount, math.floor(wanted + EPS))
    placed = dict.fromkeys(names, 0)
    if first > 0:
        values = [first * wants[t] / wanted for t in names]
        uppers = [wants[t] for t in names]
        placed = dict(zip(names, largest_remainder(values, first, uppers, uppers, names), strict=True))
    rest = split_family(amount - sum(placed.values()), {t: capacities[t] - placed[t] for t in names})
    return {t: placed[t] + rest[t] for t in names}


@dataclass(frozen=True, slots=True)
class FamilyCap:
    """A team's cap on a family: the sum of its amounts on `types` (the family's types in the cluster)."""

    key: str
    types: tuple[str, ...]
    amount: float


@dataclass(frozen=True, slots=True)
class TeamAmounts:
    """A team's guarantees and caps per pool in whole units (family guarantees divided across their types; family
    caps as a bound on the sum, see rebalancer.engine.family_caps), and the notes that explain a family guarantee's
    split, quoted in the reasons of the types it touched."""

    guarantee: Mapping[str, float]
    cap: Mapping[str, float]
    notes: Mapping[str, tuple[str, ...]]
    families: tuple[FamilyCap, ...] = ()


def team_amounts(team: str, tp: TeamPolicy, raw: Mapping[str, float], warnings: list[str],
                 demand: Mapping[str, float] | None = None) -> TeamAmounts:
    """`raw`: each pool's healthy capacity, which percents and family amounts are of; `demand`: the team's
    demand per pool, where its family guarantees go first."""
    notes: dict[str, tuple[str, ...]] = {}
    families: list[FamilyCap] = []

    def whole_units(what: str, amounts: Mapping[str, Amount]) -> dict[str, float]:
        out: dict[str, float] = {}
        for key, amount in amounts.items():
            members = family_types(key)
            if not members:
                out[key] = float(math.floor(amount.resolve(raw.get(key, 0.0)) + EPS))
                continue
            present = {t: raw[t] for t in members if raw.get(t, 0.0) > 0}
            total = sum(present.values())
            wanted = math.floor(amount.resolve(total) + EPS)
            for t in members:
                if t not in present:
                    out[t] = 0.0  # no healthy capacity of that type: nothing to hold there
            if not present:
                warnings.append(f"{team}: {what}.{key} names a family with no healthy nodes in the cluster")
                continue
            if what == "cap":
                # A cap bounds the sum over the family's types, wherever the team's work runs: the engine solves
                # those pools together. Above the family's total it simply never binds.
                families.append(FamilyCap(key, tuple(sorted(present)), float(wanted)))
                continue
            if wanted > total + EPS:
                warnings.append(f"{team}: {what}.{key} = {amount} is above the family's healthy {total:g}; "
                                f"limited to {total:g}")
            wants = {t: (demand or {}).get(t, 0.0) for t in present}
            split = split_by_demand(wanted, present, wants)
            how = ("the team's demand" if sum(min(wants[t], present[t]) for t in present) >= min(wanted, total)
                   else "the team's demand, then healthy capacity" if any(wants.values())
                   else "healthy capacity")
            note = (f"{what} {key} {amount} split by {how}: "
                    + ", ".join(f"{t} {n} of {present[t]:g}" for t, n in split.items()))
            for t, n in split.items():
                out[t] = float(n)
                notes[t] = (*notes.get(t, ()), note)
        return out

    guarantee = whole_units("guarantee", tp.guarantee)
    cap = whole_units("cap", tp.cap)
    return TeamAmounts(guarantee, cap, notes, tuple(families))


def demand_of(by_pool: Mapping[str, Demand], pool: str, resource: str) -> float:
    """A team's demand on one pool in whole units: what it runs plus what waits, rounded up (as Teams.claims reads
    it inline, in the planner's hot loop)."""
    d = by_pool.get(pool)
    if d is None:
        return 0.0
    return float(math.ceil(getattr(d.in_use, resource) + getattr(d.pending, resource) - EPS))


@dataclass(frozen=True, slots=True)
class Teams:
    """What the policy's teams bring to every pool, one entry per team in each column: built once per plan, read
    once per pool. The columns that do not depend on the pool are the engine's own, the same tuples in every pool.
    Guarantees, caps and notes are few: kept per pool as (team index, value) pairs over a default."""

    team: tuple[str, ...]
    weight: tuple[float, ...]
    protected: tuple[bool, ...]
    cooldown: tuple[str | None, ...]  # why the team is cooling down, or None
    demand: tuple[Mapping[str, Demand], ...]
    holds: tuple[Mapping[str, float], ...]  # what its quota holds
    guarantee: Mapping[str, Sequence[tuple[int, float]]]  # pool → (team index, whole units); families divided
    cap: Mapping[str, Sequence[tuple[int, float]]]
    notes: Mapping[str, Sequence[tuple[int, tuple[str, ...]]]]

    @classmethod
    def of(cls, names: Sequence[str], policies: Sequence[TeamPolicy], amounts: Sequence[TeamAmounts],
           cooldown: Sequence[str | None], demand: Sequence[Mapping[str, Demand]],
           holds: Sequence[Mapping[str, float]]) -> Teams:
        guarantee: dict[str, list[tuple[int, float]]] = {}
        cap: dict[str, list[tuple[int, float]]] = {}
        notes: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
        for i, a in enumerate(amounts):
            for pool, g in a.guarantee.items():
                guarantee.setdefault(pool, []).append((i, g))
            for pool, c in a.cap.items():
                cap.setdefault(pool, []).append((i, c))
            for pool, n in a.notes.items():
                notes.setdefault(pool, []).append((i, n))
        return cls(team=tuple(names), weight=tuple([tp.weight for tp in policies]),
                   protected=tuple([tp.protected_in_use for tp in policies]), cooldown=tuple(cooldown),
                   demand=tuple(demand), holds=tuple(holds), guarantee=guarantee, cap=cap, notes=notes)

    def claims(self, pool: str, resource: str) -> Claims:
        """Every team's claim on one pool (the hot loop of planning: one pass per pool over 1,000 teams)."""
        found = [by_pool.get(pool) for by_pool in self.demand]
        in_use_of, pending_of = attrgetter(f"in_use.{resource}"), attrgetter(f"pending.{resource}")
        in_use = [0.0 if d is None else float(in_use_of(d)) for d in found]
        demand = [0.0 if d is None else float(math.ceil(used + pending_of(d) - EPS))
                  for d, used in zip(found, in_use, strict=True)]
        return Claims(team=self.team, weight=self.weight, guarantee=_column(self.guarantee, pool, 0.0, self.team),
                      cap=_column(self.cap, pool, INF, self.team), demand=tuple(demand),
                      current=tuple([h.get(pool, 0.0) for h in self.holds]), in_use=tuple(in_use),
                      protected=self.protected, cooldown=self.cooldown, notes=_column(self.notes, pool, (), self.team))


_T = TypeVar("_T")


def _column(sparse: Mapping[str, Sequence[tuple[int, _T]]], pool: str, default: _T,
            team: Sequence[str]) -> tuple[_T, ...]:
    """One pool's column: `default` for every team but those listed."""
    column = [default] * len(team)
    for i, value in sparse.get(pool, ()):
        column[i] = value
    return tuple(column)


def _family_demand(tp: TeamPolicy, by_pool: Mapping[str, Demand]) -> dict[str, float]:
    """The team's demand on the types of the families its guarantees name (where those guarantees go first)."""
    types = {t for key in tp.guarantee for t in family_types(key)}
    return {t: demand_of(by_pool, t, catalog.spec(t).primary_resource) for t in types}


def _cooldown(quota: ComputeQuota | None, policy: Policy, now: datetime) -> str | None:
    minutes = policy.stability.cooldown_minutes
    if quota is None or quota.LastModifiedTime is None or minutes <= 0:
        return None
    age = (now - quota.LastModifiedTime).total_seconds() / 60
    if age < minutes:
        return f"cooldown: last changed {max(age, 0):.0f} min ago (cooldown {minutes:g} min)"
    return None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _pool_names(snapshot: Snapshot, policy_pools: set[str], held_by: Mapping[str, Mapping[str, float]]) -> set[str]:
    """Every pool the plan looks at: the cluster's types, its MIG profiles, what quotas hold, what the policy
    names. Raises InvalidInput for an unknown type or MIG profile in the snapshot."""
    names: set[str] = set()
    for t in snapshot.instance_types():
        catalog.spec(t, field="cluster.InstanceGroups.InstanceType")
        names.add(t)
    for t, profiles in snapshot.mig.items():
        for profile in profiles:
            try:
                names.add(str(PoolKey.parse(pool_name(t, profile))))
            except ValueError as e:
                raise InvalidInput(str(e), field=f"mig.{t}.{profile}", value=profile) from None
    for h in held_by.values():
        names |= h.keys()
    return names | policy_pools


def build_pools(snapshot: Snapshot, policy: Policy, now: datetime) -> tuple[list[PoolInput], list[str]]:
    """The engine's input: for every pool, the capacity the policy's teams share and one claim per team."""
    policy, warnings = ownership.held_outside(snapshot, policy)
    quotas = {q.team: q for q in snapshot.quotas}
    outsiders = sorted(t for t in quotas if t not in policy.teams)
    unnamed = [t for t in outsiders if not ownership.stack_of(snapshot, quotas[t])]
    if unnamed:
        warnings.append(f"teams with a quota but not in the policy keep it untouched: {', '.join(unnamed)}")

    # A deactivated quota holds nothing: its team's jobs cannot be admitted.
    held_by = {q.team: holdings(q, i) if q.ActivationState != "Disabled" else {}
               for i, q in enumerate(snapshot.quotas)}
    policy_pools = {k for k in policy.pools() if not family_types(k)}
    parsed = {name: PoolKey.parse(name) for name in _pool_names(snapshot, policy_pools, held_by)}

    caps = capacity_of(snapshot, policy)
    carved: Counter[str] = Counter()  # whole GPUs of a type that its MIG partitions occupy
    for t, profiles in snapshot.mig.items():
        for profile, n in profiles.items():
            carved[t] += math.ceil(n / mig.partitions_per_gpu_on(t, profile))
    raw: dict[str, float] = {}  # healthy capacity per pool
    for name, key in parsed.items():
        t = key.instance_type
        if key.mig_profile:
            raw[name] = float(snapshot.mig.get(t, {}).get(key.mig_profile, 0))
        else:
            raw[name] = caps.amount_now(t, carved[t])

    no_demand: dict[str, Demand] = {}
    no_holdings: dict[str, float] = {}
    names = policy.active_teams()
    team_policies = [policy.teams[team] for team in names]
    amounts = [team_amounts(team, tp, raw, warnings, _family_demand(tp, snapshot.demand.get(team, no_demand)))
               for team, tp in zip(names, team_policies, strict=True)]
    bounds: dict[str, list[FamilyBound]] = {}
    for team, a in zip(names, amounts, strict=True):
        for fam in a.families:
            for t in fam.types:
                bounds.setdefault(t, []).append(FamilyBound(team, fam.key, fam.amount))
    teams = Teams.of(names, team_policies, amounts,
                     cooldown=[_cooldown(quotas.get(team), policy, now) for team in names],
                     demand=[snapshot.demand.get(team, no_demand) for team in names],
                     holds=[held_by.get(team, no_holdings) for team in names])

    pools = []
    for name in sorted(parsed):
        key = parsed[name]
        t = key.instance_type
        notes: list[str] = []
        if key.mig_profile:
            if raw[name] == 0 and name in policy_pools:
                warnings.append(f"{name}: the snapshot reports no healthy partitions of this profile")
        else:
            notes.extend(caps.of(t).notes)
            if carved[t]:
                notes.append(f"{carved[t]} GPUs of {t} carved into MIG partitions")
            if not caps.of(t).now and not caps.of(t).unhealthy and name in policy_pools:
                warnings.append(f"{name}: named in the policy but the cluster has no such nodes")
        others = sum(held_by[o].get(name, 0.0) for o in outsiders)
        if others:
            notes.append(f"{others:g} held by teams outside the policy")
        capacity = raw[name] - others
        if capacity < 0:
            warnings.append(f"{name}: teams outside the policy hold {others:g}, more than the healthy {raw[name]:g}")
            capacity = 0.0
        resource = key.resource
        claims = teams.claims(name, resource)
        capacity, claims = caps.pool(key, capacity, claims)
        if policy.fairness.age_doubling_hours is not None:
            claims = _aged(claims, teams, name, snapshot.taken_at, policy.fairness.age_doubling_hours)
        pools.append(PoolInput(name, resource, capacity, claims, tuple(notes), tuple(bounds.get(name, ()))))
    return pools, warnings


def _aged(claims: Claims, teams: Teams, pool: str, taken_at: datetime, doubling_hours: float) -> Claims:
    """The claims with each team's weight grown by the age of its oldest pending work (rebalancer.planning.aging)."""
    weights, why = aged_weights(claims.weight, teams.demand, pool, taken_at, doubling_hours)
    notes = tuple([(*n, w) if w else n for n, w in zip(claims.notes, why, strict=True)])
    return dataclasses.replace(claims, weight=weights, notes=notes)
