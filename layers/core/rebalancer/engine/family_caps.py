"""Family caps: a team's sum over an instance family's pools, bounded jointly across those pools.

A cap on a family (`cap: {ml.p5: 24}`) bounds what the team holds on the family's types together, wherever its work
runs: all 24 may land on ml.p5en.48xlarge. The pools a family cap touches are allocated together, by the
definition of DESIGN.md's steps 1-3 extended to several pools: weighted max-min fairness (the leximin of a_ip / w_i)
over every (team i, pool p) pair, under each pool's capacity Σ_i a_ip ≤ C_p and each family cap
Σ_{p∈F} a_ip ≤ K_iF, between the floors f_ip and ceilings u_ip of the single-pool engine. So where the cap binds, the
team's budget flows to the pools where its demand is (a pool it does not want gives it nothing), and in each pool
what the capped team cannot take stays with the others, shared by weight as before.

Computed by progressive filling with one level t for every pair: a pair rises as clamp(t·w_i, f_ip, u_ip) until its
pool fills (the pool freezes: each of its pairs keeps what it has) or its team's family sum reaches the cap (the
team's pairs in the family freeze, which is a lower ceiling for the team in each of those pools). The result is
a_ip = clamp(min(L_p, T_iF)·w_i, f_ip, u_ip), with L_p the level at which pool p froze and T_iF the one at which the
team's family did. A pool level can only rise when a family freezes and a family level only when a pool freezes, so
a family whose level is at most the level of each of its open pools freezes there for good, and a pool whose level
is below that of each open family touching it does too: each round freezes all of those at once. Without family
caps pools never interact, and each is the single-pool water-fill, which keeps that path (`allocation.fair_shares`)
as it was. A guarantee is a floor here as there: when a team's floors add up to more than its family cap, the team
keeps its floors and rises nowhere in the family.

Integers: each pool is rounded by largest remainder as in step 4, except that a capped team takes at most
K − Σ⌊a_ip⌋ of its family's leftover units. When that leaves a pool a unit short, an augmenting path moves a capped
team's unit from one of its pools to another (so the unit it gives up goes to someone who can take it there): a
rounding that fills every pool exists (the fractional parts are a feasible flow), and a path finds it. Every integer
stays within one unit of its continuous value.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

EPS = 1e-9
INF = math.inf


def fill_level(capacity: float, weights: Sequence[float], floors: Sequence[float],
               ceilings: Sequence[float]) -> float:
    """The smallest level t ≥ 0 at which Σ clamp(t·w_i, f_i, u_i) reaches `capacity`; INF when the ceilings fit.

    The sum is piecewise linear in t with breakpoints f_i/w_i and u_i/w_i: the same sweep as allocation.water_fill,
    returning the level instead of the amounts (the coupled solve compares levels across pools).
    """
    events: list[tuple[float, float, float]] = []  # (level, Δslope, Δconstant)
    const = 0.0
    for w, f, u in zip(weights, floors, ceilings, strict=True):
        const += f
        if w > 0 and u > f:
            events.append((f / w, w, -f))
            if u < INF:
                events.append((u / w, -w, u))
    if const >= capacity - EPS:
        return 0.0
    events.sort()
    slope = 0.0
    for at, d_slope, d_const in events:
        if slope > 0 and const + slope * at >= capacity - EPS:
            return max((capacity - const) / slope, 0.0)
        slope += d_slope
        const += d_const
    if slope > EPS:
        return max((capacity - const) / slope, 0.0)
    return INF


def clamp(level: float, w: float, f: float, u: float) -> float:
    """A pair's amount at `level` (a weight-0 pair keeps its floor, even at an infinite level)."""
    if w <= 0:
        return f
    return min(max(level * w, f), u)


@dataclass(frozen=True, slots=True)
class CoupledPool:
    """One pool of the coupled solve: its capacity and, per claim, weight, floor and ceiling."""

    capacity: float
    weights: Sequence[float]
    floors: Sequence[float]
    ceilings: Sequence[float]


@dataclass(frozen=True, slots=True)
class Family:
    """One team's family cap: `amount` bounds the sum of its `pairs`, (pool index, claim index) each."""

    amount: float
    pairs: tuple[tuple[int, int], ...]


@dataclass(slots=True)
class _Open:
    """A pool while it fills: its ceilings lowered as its families freeze, its level, whether it is frozen."""

    capacity: float
    weights: Sequence[float]
    floors: Sequence[float]
    ceilings: list[float]
    families: list[int] = field(default_factory=list)  # the families with a pair in this pool
    level: float = 0.0
    frozen: bool = False
    dirty: bool = True


def coupled_fill(pools: Sequence[CoupledPool], families: Sequence[Family]) -> list[list[float]]:
    """Weighted max-min fair amounts of every pool's claims under the pools' capacities and the family caps
    (needs Σ f ≤ capacity per pool and f ≤ u per claim, as `allocation.water_fill`)."""
    fill = _Filling.start(pools, families)
    while True:
        fill.refresh_levels()
        if fill.freeze_families():
            continue  # lower ceilings: the pools' levels rise
        if not fill.freeze_pools():
            break
    return [v if v is not None else list(p.floors) for v, p in zip(fill.values, pools, strict=True)]


@dataclass(slots=True)
class _Filling:
    """The progressive filling's state: each pool's and family's level, which are frozen, and the frozen pools'
    amounts."""

    open_: list[_Open]
    families: Sequence[Family]
    fam_level: list[float]
    fam_frozen: list[bool]
    fam_dirty: list[bool]
    values: list[list[float] | None]

    @classmethod
    def start(cls, pools: Sequence[CoupledPool], families: Sequence[Family]) -> _Filling:
        open_ = [_Open(max(p.capacity, 0.0), p.weights, p.floors, list(p.ceilings)) for p in pools]
        for j, fam in enumerate(families):
            for p in {p for p, _ in fam.pairs}:
                open_[p].families.append(j)
        n = len(families)
        return cls(open_, families, [0.0] * n, [False] * n, [True] * n, [None] * len(pools))

    def family_level(self, j: int) -> float:
        """The level at which family j's open pairs reach its cap, less what its frozen pairs hold."""
        fam = self.families[j]
        const, ws, fs, us = 0.0, [], [], []
        for p, i in fam.pairs:
            pool = self.open_[p]
            frozen = self.values[p]
            if frozen is not None:
                const += frozen[i]
            else:
                ws.append(pool.weights[i])
                fs.append(pool.floors[i])
                us.append(pool.ceilings[i])
        return fill_level(fam.amount - const, ws, fs, us)

    def refresh_levels(self) -> None:
        for pool in self.open_:
            if pool.dirty and not pool.frozen:
                pool.level = fill_level(pool.capacity, pool.weights, pool.floors, pool.ceilings)
                pool.dirty = False
        for j in range(len(self.families)):
            if self.fam_dirty[j] and not self.fam_frozen[j]:
                self.fam_level[j] = self.family_level(j)
                self.fam_dirty[j] = False

    def freeze_families(self) -> bool:
        """Freezes every family whose level is at most each of its open pools': its pairs' ceilings become their
        amounts at that level. Whether any froze."""
        froze = False
        for j, fam in enumerate(self.families):
            if self.fam_frozen[j]:
                continue
            level = self.fam_level[j]
            if all(level <= self.open_[p].level for p, _ in fam.pairs if not self.open_[p].frozen):
                self.fam_frozen[j] = froze = True
                if level < INF:
                    for p, i in fam.pairs:
                        pool = self.open_[p]
                        if not pool.frozen:
                            pool.ceilings[i] = clamp(level, pool.weights[i], pool.floors[i], pool.ceilings[i])
                            pool.dirty = True
        return froze

    def freeze_pools(self) -> bool:
        """Freezes every open pool whose level is below each of its open families': its amounts are final. Whether
        any froze."""
        froze = False
        for p, pool in enumerate(self.open_):
            if pool.frozen or not all(pool.level < self.fam_level[j] for j in pool.families
                                      if not self.fam_frozen[j]):
                continue
            pool.frozen = froze = True
            self.values[p] = [clamp(pool.level, w, f, u)
                              for w, f, u in zip(pool.weights, pool.floors, pool.ceilings, strict=True)]
            for j in pool.families:
                self.fam_dirty[j] = True
        return froze


# ---------------------------------------------------------------- integers


def _order(values: Sequence[float], base: Sequence[int], uppers: Sequence[float], weights: Sequence[float],
           names: Sequence[str]) -> list[int]:
    """The claims that may take a leftover unit, in largest-remainder order (ties: larger weight, then name)."""
    return sorted((i for i, v in enumerate(values) if v - base[i] > EPS and base[i] + 1 <= uppers[i] + EPS),
                  key=lambda i: (-(values[i] - base[i]), -weights[i], names[i]))


def coupled_round(values: Sequence[Sequence[float]], totals: Sequence[int], uppers: Sequence[Sequence[float]],
                  weights: Sequence[Sequence[float]], names: Sequence[Sequence[str]],
                  families: Sequence[Family]) -> list[list[int]]:
    """Per pool, integers within one unit of `values` summing to at most `totals[p]`, never above `uppers`, and
    within each family cap (rounded down to whole units, or the floors' sum if that is more)."""
    rounding = _Rounding.start(values, uppers, weights, names, families)
    for p, short in enumerate(rounding.largest_remainders(totals)):
        for _ in range(short):
            if not rounding.augment(p):
                break
    return [[b + int(u) for b, u in zip(bs, us, strict=True)] for bs, us in zip(rounding.base, rounding.up,
                                                                                 strict=True)]


@dataclass(slots=True)
class _Rounding:
    """Which claims take a unit above their floor (`up`), and each family's units left to give."""

    base: list[list[int]]
    up: list[list[bool]]
    families: Sequence[Family]
    family_of: dict[tuple[int, int], int]
    budget: list[int]
    orders: list[list[int]]

    @classmethod
    def start(cls, values: Sequence[Sequence[float]], uppers: Sequence[Sequence[float]],
              weights: Sequence[Sequence[float]], names: Sequence[Sequence[str]],
              families: Sequence[Family]) -> _Rounding:
        base = [[math.floor(v + EPS) for v in vs] for vs in values]
        family_of: dict[tuple[int, int], int] = {}
        budget = []
        for j, fam in enumerate(families):
            for pair in fam.pairs:
                family_of[pair] = j
            if fam.amount == INF:
                budget.append(len(fam.pairs))  # one unit per pair at most: never the limit
                continue
            total = sum(values[p][i] for p, i in fam.pairs)
            budget.append(max(0, math.floor(max(fam.amount, total) + EPS) - sum(base[p][i] for p, i in fam.pairs)))
        orders = [_order(values[p], base[p], uppers[p], weights[p], names[p]) for p in range(len(values))]
        return cls(base, [[False] * len(vs) for vs in values], families, family_of, budget, orders)

    def free(self, p: int, i: int) -> bool:
        j = self.family_of.get((p, i))
        return j is None or self.budget[j] > 0

    def take(self, p: int, i: int) -> None:
        self.up[p][i] = True
        j = self.family_of.get((p, i))
        if j is not None:
            self.budget[j] -= 1

    def largest_remainders(self, totals: Sequence[int]) -> list[int]:
        """Each pool's leftover units by largest remainder, skipping the claims whose family has none left; how many
        units each pool is still short."""
        short = []
        for p, order in enumerate(self.orders):
            left = totals[p] - sum(self.base[p])
            for i in order:
                if left <= 0:
                    break
                if self.free(p, i):
                    self.take(p, i)
                    left -= 1
            short.append(max(left, 0))
        return short

    def augment(self, start: int) -> bool:
        """One more unit for pool `start` along a path of pools, each giving a capped team's unit to the next."""
        up = self.up
        parent: dict[int, tuple[int, int, int] | None] = {start: None}
        queue = deque([start])
        while queue:
            p = queue.popleft()
            for i in self.orders[p]:
                if up[p][i]:
                    continue
                if self.free(p, i):
                    self.take(p, i)
                    q = p
                    while (step := parent[q]) is not None:
                        prev, gains, gave = step
                        up[prev][gains], up[q][gave] = True, False
                        q = prev
                    return True
                fam = self.families[self.family_of[(p, i)]]
                for q, iq in fam.pairs:
                    if q not in parent and up[q][iq]:
                        parent[q] = (p, i, iq)
                        queue.append(q)
        return False
