"""The allocation engine: per pool, who should hold how much. Pure: numbers in, numbers and reasons out.

A *pool* is an instance type's primary resource (accelerators, or vCPUs for CPU-only types) or one MIG profile on
an instance type (`ml.p5.48xlarge:mig-1g.10gb`, counted in partitions). Each pool is allocated on its own, in the
five steps of DESIGN.md "Allocation semantics":

1. Guarantees are floors f_i. When they add up to more than the pool's capacity they are scaled down
   proportionally and a warning says so.
2. Weighted water-filling: with ceiling u_i = max(f_i, min(demand_i, cap_i)), a_i = clamp(L·w_i, f_i, u_i) with the
   largest level L for which Σ a_i ≤ capacity (a sort over the 2n breakpoints f_i/w_i and u_i/w_i, O(n log n)).
3. Surplus: `idle` leaves capacity nobody demands unallocated; `spread` fills again from u_i up to cap_i by weight.
   With `gang_steps` (a pool listing its teams' pending workloads), the amounts then move to whole gangs
   (rebalancer.engine.gangs, `gang_stepped`); not in pools solved with family caps.
4. Integers: largest-remainder rounding of the continuous a_i (rebalancer.engine.rounding), never above a team's
   cap, each integer within one unit of its continuous value. The continuous allocation itself is monotone in
   capacity; the rounding, like every quota method, can show the Alabama paradox.
5. Stability, relative to the current quotas: the holds of rebalancer.engine.stability, one ordered list of rules
   (cooldown, min_step, protected in-use, the shrink tiers when holds leave a pool above its capacity, max_move
   across the accelerator pools), applied stage by stage in the order that module lists them. The policy rules of
   that list (budget caps, ownership) made the policy the planner read these pools from.

Family caps (a team's sum over an instance family's pools, `PoolInput.families`): the pools they touch are solved
together in steps 1-4, by the same definition over every (team, pool) pair with the family caps as extra
constraints (rebalancer.engine.family_caps); step 5 is per pool as usual. Pools without family caps take the path above,
unchanged.

MIG model (deliberately small): a MIG pool's capacity is the number of partitions of that profile the healthy nodes
expose (the snapshot's `mig` field, read from node allocatable `nvidia.com/mig-…`). Those partitions occupy
ceil(partitions / partitions-per-GPU) whole GPUs, which the planner carves out of the type's whole-GPU pool. The
rebalancer redistributes partitions between teams; it never changes a node's MIG layout.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, fields, replace

from rebalancer.domain.plan import Hold
from rebalancer.engine import gangs, reasons, stability
from rebalancer.engine.family_caps import CoupledPool, Family, coupled_fill, coupled_round
from rebalancer.engine.rounding import EPS, largest_remainder
from rebalancer.engine.stability import Admitted, Settings, Surplus
from rebalancer.errors import InvalidInput

# EPS, largest_remainder, Settings and Surplus are defined with the step they belong to and read from here too.
__all__ = ["EPS", "INF", "Allocation", "Claim", "Claims", "FamilyBound", "Outcome", "PoolInput", "PoolResult",
           "Settings", "Surplus", "allocate", "fair_shares", "gang_stepped", "largest_remainder", "scaled_floors",
           "solve_families", "water_fill"]

INF = math.inf


@dataclass(frozen=True, slots=True)
class Claim:
    """One team in one pool. Amounts are in the pool's unit; `cap` is INF when the policy sets none."""

    team: str
    weight: float
    guarantee: float = 0.0
    cap: float = INF
    demand: float = 0.0
    current: float = 0.0
    in_use: float = 0.0
    protected: bool = False
    cooldown: Hold | None = None  # the cooldown the team is in, or None
    notes: tuple[str, ...] = ()  # facts about this team's amounts quoted in its reason (e.g. a family split)


# A claim's fields in order: Claim's attributes, and Claims' columns.
_FIELDS = tuple(f.name for f in fields(Claim))


@dataclass(frozen=True, slots=True)
class Claims:
    """A pool's claims as parallel columns, entry i of every column being team i's (see Claim). The engine reads
    columns; at 1,000 teams × 15 pools, one object per claim was 15k objects for the garbage collector to walk.
    Iterating gives Claim rows; a step that changes columns makes new claims (`dataclasses.replace`)."""

    team: tuple[str, ...]
    weight: tuple[float, ...]
    guarantee: tuple[float, ...]
    cap: tuple[float, ...]
    demand: tuple[float, ...]
    current: tuple[float, ...]
    in_use: tuple[float, ...]
    protected: tuple[bool, ...]
    cooldown: tuple[Hold | None, ...]
    notes: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, claims: Iterable[Claim]) -> Claims:
        rows = tuple(claims)
        return cls(*(tuple(getattr(c, name) for c in rows) for name in _FIELDS))

    def __len__(self) -> int:
        return len(self.team)

    def __iter__(self) -> Iterator[Claim]:
        return (Claim(*row) for row in zip(self.team, self.weight, self.guarantee, self.cap, self.demand,
                                            self.current, self.in_use, self.protected, self.cooldown, self.notes,
                                            strict=True))


@dataclass(frozen=True, slots=True)
class FamilyBound:
    """A family cap of one team, listed by every pool of the family: the team's amounts over the pools that list
    the same (team, key) add up to at most `amount`. Those pools are allocated together (rebalancer.engine.family_caps).
    A team's families do not overlap (the policy says so)."""

    team: str
    key: str  # the family, as the policy names it (ml.p5)
    amount: float


@dataclass(frozen=True, slots=True)
class PoolInput:
    key: str
    resource: str
    capacity: float  # what the policy's teams share (healthy capacity minus what others hold)
    claims: Claims
    notes: tuple[str, ...] = ()  # capacity facts quoted in every reason of this pool
    families: tuple[FamilyBound, ...] = ()  # the family caps of teams in this pool; usually none
    # Per claim, the sizes of its pending workloads in admission order (rebalancer.engine.gangs); () when not read.
    gangs: tuple[tuple[float, ...], ...] = ()
    # Per claim, the workloads it runs here, newest admitted first (the reclaim rule); () when not read.
    admitted: tuple[tuple[Admitted, ...], ...] = ()

    @classmethod
    def of(cls, key: str, resource: str, capacity: float, claims: Iterable[Claim],
           notes: tuple[str, ...] = (), families: tuple[FamilyBound, ...] = (),
           gangs: tuple[tuple[float, ...], ...] = (),
           admitted: tuple[tuple[Admitted, ...], ...] = ()) -> PoolInput:
        """A pool from Claim rows."""
        return cls(key, resource, capacity, Claims.of(claims), notes, families, gangs, admitted)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One claim's outcome (PoolResult.outcomes)."""

    team: str
    pool: str
    resource: str
    before: float
    after: int
    fair: float  # the continuous allocation of steps 1-3
    desired: int  # after rounding, before the stability rules
    reason: str

    @property
    def changed(self) -> bool:
        return abs(self.after - self.before) > EPS


@dataclass(frozen=True, slots=True)
class PoolResult:
    """One pool's outcome as parallel columns, one entry per claim in input order (a plan at 1,000 teams × 15
    types would otherwise keep 15k Outcome objects alive, which the garbage collector traverses again and again).
    `reasons[i]` is empty when claim i keeps its amount."""

    key: str
    resource: str
    capacity: float
    teams: tuple[str, ...]
    before: tuple[float, ...]
    after: tuple[int, ...]
    fair: tuple[float, ...]  # the continuous allocation of steps 1-3
    desired: tuple[int, ...]  # after rounding, before the stability rules
    reasons: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    holds: tuple[Hold | None, ...] = ()  # per claim, what keeps it from `desired` (None: nothing)
    # per claim that moves or is held, its reason's "wants W because …" clause (rebalancer.engine.reasons); else ""
    wants: tuple[str, ...] = ()
    # What the clauses are written from, per claim: the continuous share before gang steps, demand, what runs,
    # weight, guarantee, cap and notes (the claims' own columns); the pool's notes, the guarantees' factor, whether
    # surplus was spread.
    share: tuple[float, ...] = ()
    demand: tuple[float, ...] = ()
    running: tuple[float, ...] = ()
    weight: tuple[float, ...] = ()
    guarantee: tuple[float, ...] = ()
    cap: tuple[float, ...] = ()
    claim_notes: tuple[tuple[str, ...], ...] = ()
    notes: tuple[str, ...] = ()
    factor: float = 1.0
    spread: bool = False

    def facts(self, i: int) -> tuple[str, ...]:
        """The facts claim i's reason quotes after its clauses: its own notes, then its pool's."""
        return (*self.claim_notes[i], *self.notes) if self.claim_notes else self.notes

    def wants_of(self, i: int) -> str:
        """Claim i's "wants W because …" clause, whether or not it moves."""
        if self.wants and self.wants[i]:
            return self.wants[i]
        return reasons.wants(self.desired[i], share=self.share[i], demand=self.demand[i], running=self.running[i],
                             weight=self.weight[i], weight_total=sum(self.weight), guarantee=self.guarantee[i],
                             factor=self.factor, cap=self.cap[i], capacity=math.floor(max(self.capacity, 0.0) + EPS),
                             spread=self.spread, guaranteed=sum(self.guarantee) * self.factor)

    @property
    def outcomes(self) -> tuple[Outcome, ...]:
        """The same result row by row."""
        key, resource = self.key, self.resource
        return tuple(Outcome(*row) for row in zip(self.teams, (key,) * len(self.teams), (resource,) * len(self.teams),
                                                  self.before, self.after, self.fair, self.desired, self.reasons,
                                                  strict=True))


@dataclass(frozen=True, slots=True)
class Allocation:
    pools: tuple[PoolResult, ...]
    warnings: tuple[str, ...] = ()


# ---------------------------------------------------------------- steps 1-3: continuous


def water_fill(capacity: float, weights: Sequence[float], floors: Sequence[float],
               ceilings: Sequence[float]) -> list[float]:
    """a_i = clamp(L·w_i, f_i, u_i) for the largest L with Σ a_i ≤ capacity (needs Σ f_i ≤ capacity, f_i ≤ u_i).

    Σ a_i(L) is piecewise linear in L with breakpoints f_i/w_i (team starts rising) and u_i/w_i (team stops):
    sweep them in order, keeping the constant part and the slope, and solve the linear piece that crosses capacity.
    """
    # The events (level, Δslope, Δconstant) as three columns, sorted as the tuples would be (by level, then Δslope,
    # then Δconstant: stable sorts from the last key) without a tuple per event: 30k of them at 1,000 teams ×
    # 15 pools, each tracked by the garbage collector.
    levels: list[float] = []
    slopes: list[float] = []
    consts: list[float] = []
    const = 0.0
    for w, f, u in zip(weights, floors, ceilings, strict=True):
        const += f
        if w > 0:
            levels.append(f / w)
            slopes.append(w)
            consts.append(-f)
            if u < INF:
                levels.append(u / w)
                slopes.append(-w)
                consts.append(u)
    order = sorted(range(len(levels)), key=consts.__getitem__)
    order.sort(key=slopes.__getitem__)
    order.sort(key=levels.__getitem__)
    slope = 0.0
    level = INF
    for at, d_slope, d_const in zip(map(levels.__getitem__, order), map(slopes.__getitem__, order),
                                    map(consts.__getitem__, order), strict=True):
        if const + slope * at >= capacity - EPS and slope > 0:
            level = (capacity - const) / slope
            break
        slope += d_slope
        const += d_const
    else:
        if slope > EPS:
            level = (capacity - const) / slope
    finite = level < INF
    return [min(max((level * w if finite else INF) if w > 0 else 0.0, f), u)
            for w, f, u in zip(weights, floors, ceilings, strict=True)]


def scaled_floors(capacity: float, guarantees: Sequence[float]) -> tuple[list[float], float]:
    """Guarantees as floors, scaled down proportionally when they exceed capacity. Returns (floors, factor)."""
    total = sum(guarantees)
    if total <= capacity + EPS or total == 0:
        return list(guarantees), 1.0
    factor = max(capacity, 0.0) / total
    return [g * factor for g in guarantees], factor


def fair_shares(pool: PoolInput, surplus: Surplus) -> tuple[list[float], float]:
    """Steps 1-3: the continuous allocation of every claim, and the factor applied to guarantees."""
    claims = pool.claims
    cap = max(pool.capacity, 0.0)
    floors, factor = scaled_floors(cap, claims.guarantee)
    weights = claims.weight
    # A weight-0 team gets its floor only, even when everything fits (L·0 = 0 at any level).
    ceilings = [max(f, min(d, c)) if w > 0 else f
                for f, w, d, c in zip(floors, weights, claims.demand, claims.cap, strict=True)]
    shares = ceilings if sum(ceilings) <= cap + EPS else water_fill(cap, weights, floors, ceilings)
    if surplus == "spread" and sum(shares) < cap - EPS:
        # Also when demand exceeds capacity but only weight-0 teams hold it: they get floors, the rest spreads.
        shares = water_fill(cap, weights, shares, [max(a, c) for a, c in zip(shares, claims.cap, strict=True)])
    return shares, factor


def _ceilings(floors: Sequence[float], claims: Claims) -> list[float]:
    return [max(f, min(d, c)) if w > 0 else f
            for f, w, d, c in zip(floors, claims.weight, claims.demand, claims.cap, strict=True)]


def gang_stepped(pool: PoolInput, shares: Sequence[float], surplus: Surplus) -> tuple[list[float], PoolInput]:
    """Steps 1-3 with quota in gang-sized steps (rebalancer.engine.gangs): the stepped teams' amounts, and what they
    leave water-filled among the others as in step 2 (and spread, with `spread`), until no team the others' new
    amounts put between two levels is left (at most one round per team); the pool's claims carry a note for each
    team moved off its share."""
    claims = pool.claims
    cap = max(pool.capacity, 0.0)
    floors, _ = scaled_floors(cap, claims.guarantee)
    ceilings = _ceilings(floors, claims)
    out = list(shares)
    fixed: dict[int, gangs.Step] = {}
    for _ in range(len(claims)):
        new = gangs.steps(cap, out, floors, ceilings, claims.in_use, pool.gangs, claims.team,
                          {i: s.amount for i, s in fixed.items()})
        if not new:
            break
        fixed.update(new)
        fixed = _fill_others(out, fixed, cap, floors, ceilings, claims, surplus)
    notes = list(claims.notes)
    for i, s in fixed.items():
        if abs(s.amount - s.share) > EPS:
            notes[i] = (*notes[i], gangs.note(s))
    return out, replace(pool, claims=replace(claims, notes=tuple(notes)))


def _fill_others(out: list[float], fixed: dict[int, gangs.Step], cap: float, floors: Sequence[float],
                 ceilings: Sequence[float], claims: Claims, surplus: Surplus) -> dict[int, gangs.Step]:
    """What the stepped teams leave, water-filled among the others into `out`; what those cannot use goes back to
    the stepped teams (gangs.take_leftover), whose amounts are written into `out` too. Returns the stepped teams."""
    others = [i for i in range(len(claims)) if i not in fixed]
    rest = cap - sum(s.amount for s in fixed.values())
    weights = [claims.weight[i] for i in others]
    low, high = [floors[i] for i in others], [ceilings[i] for i in others]
    filled = high if sum(high) <= rest + EPS else water_fill(rest, weights, low, high)
    if surplus == "spread" and sum(filled) < rest - EPS:
        filled = water_fill(rest, weights, filled, [max(a, claims.cap[i]) for a, i in zip(filled, others, strict=True)])
    if sum(filled) < rest - EPS:
        fixed = gangs.take_leftover(fixed, rest - sum(filled), claims.team)
    for i, a in zip(others, filled, strict=True):
        out[i] = a
    for i, s in fixed.items():
        out[i] = s.amount
    return fixed


@dataclass(frozen=True, slots=True)
class _Solved:
    """Steps 1-4 of a pool solved with the others of its family caps: the pool (its claims' notes now saying
    which family cap applied), the continuous amounts, the guarantees' factor and the integers."""

    pool: PoolInput
    shares: list[float]
    factor: float
    desired: list[int]


def solve_families(pools: Sequence[PoolInput], surplus: Surplus) -> dict[str, _Solved]:
    """Steps 1-4 of every pool that lists a family cap, solved jointly (rebalancer.engine.family_caps); by pool key."""
    coupled = [p for p in pools if p.families]
    groups: dict[tuple[str, str], list[tuple[int, int]]] = {}
    amounts: dict[tuple[str, str], float] = {}
    for p, pool in enumerate(coupled):
        index = {t: i for i, t in enumerate(pool.claims.team)}
        for b in pool.families:
            i = index.get(b.team)
            if i is not None:
                groups.setdefault((b.team, b.key), []).append((p, i))
                amounts[b.team, b.key] = min(b.amount, amounts.get((b.team, b.key), INF))
    keys = sorted(groups)
    seen: dict[tuple[int, int], str] = {}
    for team, key in keys:
        for pair in groups[team, key]:
            if pair in seen:  # the policy refuses overlapping families; the rounding relies on it
                raise InvalidInput(f"{team}: family caps {seen[pair]} and {key} overlap on {coupled[pair[0]].key}",
                                   value=key)
            seen[pair] = key
    families = [Family(amounts[k], tuple(groups[k])) for k in keys]
    floors, factors, ceilings = [], [], []
    for pool in coupled:
        c = pool.claims
        f, factor = scaled_floors(max(pool.capacity, 0.0), c.guarantee)
        floors.append(f)
        factors.append(factor)
        ceilings.append([max(fl, min(d, cap)) if w > 0 else fl
                         for fl, w, d, cap in zip(f, c.weight, c.demand, c.cap, strict=True)])
    shares = coupled_fill([CoupledPool(p.capacity, p.claims.weight, f, u)
                           for p, f, u in zip(coupled, floors, ceilings, strict=True)], families)
    if surplus == "spread":
        shares = coupled_fill([CoupledPool(p.capacity, p.claims.weight, s,
                                           [max(a, cap) for a, cap in zip(s, p.claims.cap, strict=True)])
                               for p, s in zip(coupled, shares, strict=True)], families)
    totals = [min(math.floor(max(p.capacity, 0.0) + EPS), math.floor(sum(s) + EPS))
              for p, s in zip(coupled, shares, strict=True)]
    desired = coupled_round(shares, totals, [p.claims.cap for p in coupled], [p.claims.weight for p in coupled],
                            [p.claims.team for p in coupled], families)
    notes = [list(p.claims.notes) for p in coupled]
    for (_, key), fam in zip(keys, families, strict=True):
        if fam.amount < INF and sum(desired[p][i] for p, i in fam.pairs) >= math.floor(fam.amount + EPS):
            note = (f"family cap {key} = {reasons.figure(fam.amount)} (sum over "
                    + ", ".join(f"{coupled[p].key} {desired[p][i]}" for p, i in fam.pairs) + ")")
            for p, i in fam.pairs:
                notes[p][i] = (*notes[p][i], note)
    return {p.key: _Solved(replace(p, claims=replace(p.claims, notes=tuple(n))), s, factor, d)
            for p, s, factor, d, n in zip(coupled, shares, factors, desired, notes, strict=True)}


# ---------------------------------------------------------------- steps 4-5 of one pool


@dataclass(slots=True)
class _Pool:
    """Working state of one pool between the per-pool steps and the plan rules (stability.Working)."""

    input: PoolInput
    shares: list[float]
    desired: list[int]
    after: list[int]
    holds: list[Hold | None]
    warnings: list[str]
    factor: float
    spread: bool
    fair: list[float]  # the continuous shares of steps 1-3, before gang steps


def _allocate_pool(pool: PoolInput, settings: Settings, solved: _Solved | None = None) -> _Pool:
    """Steps 1-5 of one pool; steps 1-4 come solved when the pool has family caps."""
    if solved is not None:
        pool = solved.pool
    claims = pool.claims
    names, weights = claims.team, claims.weight
    capacity = math.floor(max(pool.capacity, 0.0) + EPS)
    if solved is None:
        shares, factor = fair_shares(pool, settings.surplus)
        fair = shares
        if settings.gang_steps and pool.gangs:
            shares, pool = gang_stepped(pool, shares, settings.surplus)
            claims = pool.claims
        total = min(capacity, math.floor(sum(shares) + EPS))
        desired = largest_remainder(shares, total, claims.cap, weights, names)
    else:
        shares, factor, desired = solved.shares, solved.factor, list(solved.desired)
        fair = shares

    warnings: list[str] = []
    if factor < 1:
        g = sum(claims.guarantee)
        warnings.append(f"{pool.key}: guarantees add up to {g:g} but only {capacity} are available; scaled "
                        f"down to {factor:.0%} of each")

    after, holds = stability.hold_pool(pool.key, capacity, desired, claims, settings, warnings, factor)
    return _Pool(pool, shares, desired, after, holds, warnings, factor, settings.surplus == "spread", fair)


def _reasons(p: _Pool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Per claim, its reason and its "wants" clause (rebalancer.engine.reasons), "" for a claim that keeps its
    amount and is wanted to. At 1,000 teams × 15 pools about 11k claims move, on a few hundred distinct cases:
    each distinct reason is written once per pool."""
    c = p.input.claims
    total = sum(c.weight)
    capacity = math.floor(max(p.input.capacity, 0.0) + EPS)
    guaranteed = sum(c.guarantee) * p.factor
    pool_notes = p.input.notes
    factor, spread = p.factor, p.spread
    written: dict[tuple[object, ...], tuple[str, str]] = {}
    out: list[str] = []
    clauses: list[str] = []
    for after, before, desired, share, demand, running, weight, guarantee, cap, notes, hold in zip(
            p.after, c.current, p.desired, p.fair, c.demand, c.in_use, c.weight, c.guarantee, c.cap, c.notes,
            p.holds, strict=True):
        if after == before and desired == before:
            out.append("")
            clauses.append("")
            continue
        case = (after, desired, share, demand, running, weight, guarantee, cap, notes, hold)
        found = written.get(case)
        if found is None:
            clause = reasons.wants(desired, share=share, demand=demand, running=running, weight=weight,
                                   weight_total=total, guarantee=guarantee, factor=factor, cap=cap,
                                   capacity=capacity, spread=spread, guaranteed=guaranteed)
            found = written[case] = (reasons.reason(clause, after, desired, hold, (*notes, *pool_notes)), clause)
        out.append(found[0])
        clauses.append(found[1])
    return tuple(out), tuple(clauses)


def allocate(pools: Sequence[PoolInput], settings: Settings) -> Allocation:
    """All five steps for every pool. Pools with family caps are solved together first (`solve_families`); the
    others, one by one; the plan rules (max_move) then span the pools, in pool-key order."""
    ordered = sorted(pools, key=lambda q: q.key)
    solved = solve_families(ordered, settings.surplus) if any(p.families for p in ordered) else {}
    work = [_allocate_pool(pool, settings, solved.get(pool.key)) for pool in ordered]
    stability.hold_plan(work, settings)
    warnings: list[str] = []
    results = []
    for p in work:
        claims = p.input.claims
        said, wanted = _reasons(p)
        results.append(PoolResult(p.input.key, p.input.resource, p.input.capacity, claims.team, claims.current,
                                  tuple(p.after), tuple(p.shares), tuple(p.desired), said, tuple(p.warnings),
                                  tuple(p.holds), wanted, tuple(p.fair), claims.demand, claims.in_use, claims.weight,
                                  claims.guarantee, claims.cap, claims.notes, p.input.notes, p.factor, p.spread))
        warnings.extend(p.warnings)
    return Allocation(tuple(results), tuple(warnings))
