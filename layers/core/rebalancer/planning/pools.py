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

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from operator import attrgetter
from typing import TypeVar

from rebalancer.catalog import mig
from rebalancer.catalog import specs as catalog
from rebalancer.domain import ownership
from rebalancer.domain.context import PlanningContext
from rebalancer.domain.plan import Hold
from rebalancer.domain.policy import Amount, Fairness, Policy, TeamPolicy, family_types
from rebalancer.domain.pools import PoolKey, holdings, pool_name
from rebalancer.domain.quotas import AMOUNT_RANGE
from rebalancer.domain.snapshot import Demand, Snapshot
from rebalancer.engine import stability
from rebalancer.engine.allocation import EPS, INF, Claims, FamilyBound, PoolInput, largest_remainder
from rebalancer.engine.reservations import began_since, ended_since
from rebalancer.errors import InvalidInput
from rebalancer.planning import capacity
from rebalancer.planning.admitted import with_admitted
from rebalancer.planning.aging import aged_weights
from rebalancer.planning.context import planning_context
from rebalancer.planning.fair_share import windowed_weights
from rebalancer.planning.gangs import with_gangs


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
    cooldown: tuple[Hold | None, ...]  # the cooldown the team is in, or None
    demand: tuple[Mapping[str, Demand], ...]
    holds: tuple[Mapping[str, float], ...]  # what its quota holds
    guarantee: Mapping[str, Sequence[tuple[int, float]]]  # pool → (team index, whole units); families divided
    cap: Mapping[str, Sequence[tuple[int, float]]]
    notes: Mapping[str, Sequence[tuple[int, tuple[str, ...]]]]

    @classmethod
    def of(cls, names: Sequence[str], policies: Sequence[TeamPolicy], amounts: Sequence[TeamAmounts],
           cooldown: Sequence[Hold | None], demand: Sequence[Mapping[str, Demand]],
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
        amount = attrgetter(resource)  # on d.in_use: a fifth cheaper than attrgetter("in_use.<resource>") on d
        in_use = [0.0 if d is None else float(amount(d.in_use)) for d in found]
        demand = [0.0 if d is None else float(math.ceil(used + amount(d.pending) - EPS))
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


def build_pools(snapshot: Snapshot, policy: Policy, now: datetime,
                context: PlanningContext | None = None) -> tuple[list[PoolInput], list[str]]:
    """The engine's input for a policy as written (the drift report, benchmarks, tests): the teams whose quota
    CloudFormation owns held outside it, as in a plan, and no budget applied. A plan computes the whole effective
    policy once (rebalancer.engine.stability.effective) and reads its pools with `pool_inputs`. `context`: the
    recent changes (cooldown) and ages of pending work (aging); without one, the snapshot's alone."""
    if context is None:
        context = planning_context(snapshot, policy)
    effective = stability.effective(policy, snapshot, context, (stability.OWNERSHIP,))
    pools, warnings = pool_inputs(snapshot, effective.policy, now, context)
    return pools, [*effective.opening, *warnings]


def pool_inputs(snapshot: Snapshot, policy: Policy, now: datetime,
                context: PlanningContext) -> tuple[list[PoolInput], list[str]]:
    """For every pool, the capacity the effective policy's teams share and one claim per team: the capacity of
    each pool, then what each team brings, then each pool's input."""
    warnings: list[str] = []
    quotas = {q.team: q for q in snapshot.quotas}
    outsiders = sorted(t for t in quotas if t not in policy.teams)
    unnamed = [t for t in outsiders if not ownership.stack_of(snapshot, quotas[t])]
    if unnamed:
        warnings.append(f"teams with a quota but not in the policy keep it untouched: {', '.join(unnamed)}")
    # A deactivated quota holds nothing: its team's jobs cannot be admitted.
    held_by = {q.team: holdings(q, i) if q.ActivationState != "Disabled" else {}
               for i, q in enumerate(snapshot.quotas)}
    healthy = capacity_of(snapshot, policy, held_by, context.unavailable_since)
    teams, bounds = teams_of(snapshot, policy, context, held_by, healthy.raw, now, warnings)
    pools = [_pool_input(name, healthy, teams, bounds.get(name, ()), held_by, outsiders, snapshot, context, policy,
                         warnings)
             for name in sorted(healthy.parsed)]
    if policy.fairness.gang_steps or policy.reclaim.max_gpu_hours > 0:  # the reclaim serves whole workloads
        pools = with_gangs(pools, snapshot.pending_workloads)
    if policy.reclaim.max_gpu_hours > 0:
        pools = with_admitted(pools, snapshot.running_workloads, now)
    return pools, warnings


@dataclass(frozen=True, slots=True)
class Capacity:
    """Every pool a plan looks at (by name) and its capacity now (`raw`, before what teams outside the policy
    hold), with what the capacity model of rebalancer.planning.capacity says of each type (its notes, what it
    lets a pool reach)."""

    parsed: Mapping[str, PoolKey]
    raw: Mapping[str, float]
    model: capacity.Capacity
    carved: Mapping[str, int]  # whole GPUs of a type that its MIG partitions occupy
    policy_pools: frozenset[str]  # the pools the policy names (not its families)


def capacity_of(snapshot: Snapshot, policy: Policy, held_by: Mapping[str, Mapping[str, float]],
                unavailable_since: Mapping[str, tuple[str, datetime]] | None = None) -> Capacity:
    """The pools and their capacity now: a type's nodes that count (rebalancer.planning.capacity) times its primary
    resource, less the GPUs its MIG partitions occupy; a MIG pool's partitions."""
    policy_pools = frozenset(k for k in policy.pools() if not family_types(k))
    parsed = {name: PoolKey.parse(name) for name in _pool_names(snapshot, set(policy_pools), held_by)}
    seen = {node: since for node, (_, since) in (unavailable_since or {}).items()}
    caps = capacity.of_snapshot(snapshot, policy, seen)
    carved: Counter[str] = Counter()
    for t, profiles in snapshot.mig.items():
        for profile, n in profiles.items():
            carved[t] += math.ceil(n / mig.partitions_per_gpu_on(t, profile))
    raw: dict[str, float] = {}
    for name, key in parsed.items():
        t = key.instance_type
        if key.mig_profile:
            raw[name] = float(snapshot.mig.get(t, {}).get(key.mig_profile, 0))
        else:
            raw[name] = caps.amount_now(t, carved[t])
    return Capacity(parsed, raw, caps, carved, policy_pools)


def teams_of(snapshot: Snapshot, policy: Policy, context: PlanningContext,
             held_by: Mapping[str, Mapping[str, float]], raw: Mapping[str, float], now: datetime,
             warnings: list[str]) -> tuple[Teams, dict[str, list[FamilyBound]]]:
    """What the policy's active teams bring to every pool (amounts, cooldowns, demand, holdings), and the family
    caps per pool."""
    no_demand: dict[str, Demand] = {}
    no_holdings: dict[str, float] = {}
    minutes = policy.stability.cooldown_minutes
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
                     cooldown=[None if began_since(team, held_by.get(team, no_holdings), context.reservations,
                                                   context.last_changed.get(team))
                               or ended_since(team, held_by.get(team, no_holdings), context.ended,
                                              context.last_changed.get(team))
                               else stability.cooling_down(context.last_changed.get(team), now, minutes)
                               for team in names],
                     demand=[snapshot.demand.get(team, no_demand) for team in names],
                     holds=[held_by.get(team, no_holdings) for team in names])
    return teams, bounds


def _pool_input(name: str, healthy: Capacity, teams: Teams, bounds: Sequence[FamilyBound],
                held_by: Mapping[str, Mapping[str, float]], outsiders: Sequence[str], snapshot: Snapshot,
                context: PlanningContext, policy: Policy, warnings: list[str]) -> PoolInput:
    """One pool's input: its capacity less what teams outside the policy hold, the facts its reasons quote, the
    claims (weights aged when the policy says so), and what the capacity model lets it reach."""
    key = healthy.parsed[name]
    t = key.instance_type
    raw, carved, of_type = healthy.raw[name], healthy.carved[t], healthy.model.of(t)
    notes: list[str] = []
    if key.mig_profile:
        if raw == 0 and name in healthy.policy_pools:
            warnings.append(f"{name}: the snapshot reports no healthy partitions of this profile")
    else:
        notes.extend(of_type.notes)
        if carved:
            notes.append(f"{carved} GPUs of {t} carved into MIG partitions")
        if not of_type.now and not of_type.unhealthy and name in healthy.policy_pools:
            warnings.append(f"{name}: named in the policy but the cluster has no such nodes")
    others = sum(held_by[o].get(name, 0.0) for o in outsiders)
    if others:
        notes.append(f"{others:g} held by teams outside the policy")
    shared = raw - others
    if shared < 0:
        warnings.append(f"{name}: teams outside the policy hold {others:g}, more than the healthy {raw:g}")
        shared = 0.0
    shared, claims = healthy.model.pool(key, shared, teams.claims(name, key.resource))
    if shared > AMOUNT_RANGE[1]:  # an autoscaler's ceiling far beyond any cluster: no quota can hold more
        warnings.append(f"{name}: {shared:,.0f} reachable is more than a quota can hold (the API's maximum is "
                        f"{AMOUNT_RANGE[1]:,}); planned within {AMOUNT_RANGE[1]:,}")
        shared = float(AMOUNT_RANGE[1])
    if policy.fairness.age_doubling_hours is not None:
        claims = _aged(claims, context, name, snapshot.taken_at, policy.fairness.age_doubling_hours)
    if policy.fairness.window_hours is not None and not key.mig_profile:
        claims = _windowed(claims, context, t, policy.fairness.window_hours, policy.fairness, shared)
    return PoolInput(name, key.resource, shared, claims, tuple(notes), tuple(bounds))


def _aged(claims: Claims, context: PlanningContext, pool: str, taken_at: datetime, doubling_hours: float) -> Claims:
    """The claims with each team's weight grown by the age of its oldest pending work (rebalancer.planning.aging)."""
    since = [context.pending_since.get(team, {}).get(pool) for team in claims.team]
    weights, why = aged_weights(claims.weight, since, taken_at, doubling_hours)
    notes = tuple([(*n, w) if w else n for n, w in zip(claims.notes, why, strict=True)])
    return replace(claims, weight=weights, notes=notes)


def _windowed(claims: Claims, context: PlanningContext, instance_type: str, window_hours: float,
              fairness: Fairness, capacity: float) -> Claims:
    """The claims with each team's weight scaled by its use of the pool (of `capacity` accelerators) over the
    trailing window (rebalancer.planning.fair_share)."""
    received = [context.trailing_usage.get(team, {}).get(instance_type, 0.0) for team in claims.team]
    weights, why = windowed_weights(claims.weight, claims.demand, received, window_hours,
                                    form=fairness.window_form, k=fairness.window_k, capacity=capacity)
    notes = tuple([(*n, w) if w else n for n, w in zip(claims.notes, why, strict=True)])
    return replace(claims, weight=weights, notes=notes)
