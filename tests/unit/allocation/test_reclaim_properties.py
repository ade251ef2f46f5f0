"""The reclaim rule (rebalancer.engine.stability.reclaim) on random full pools: what it takes is what Kueue would
reclaim first, young enough, within the plan's budget, never below a team's fair share; and the allocation's
invariants still hold with it."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from support.props import properties

from rebalancer.engine.allocation import EPS, INF, Claim, PoolInput, Settings, allocate
from rebalancer.engine.stability import Admitted

AGE, BUDGET = 30.0, 16.0
ON = Settings(max_move=None, reclaim_max_age_minutes=AGE, reclaim_max_gpu_hours=BUDGET)
OFF = Settings(max_move=None)


ages = st.integers(-5, 90).map(lambda m: None if m < 0 else m)  # minutes since admitted; a few not known


@st.composite
def pools(draw: st.DrawFn, key: str = "ml.p5.48xlarge") -> PoolInput:
    """A pool whose teams run whole workloads (sizes 1-16, admitted 0-90 minutes ago, some of unknown age), some
    protected, some waiting for more; capacity at most what the quotas hold (a full cluster) or a little more."""
    n = draw(st.integers(2, 6))
    claims, admitted = [], []
    for i in range(n):
        work = draw(st.lists(st.tuples(st.integers(1, 16), ages), max_size=5))
        running = sum(size for size, _ in work)
        pending = draw(st.integers(0, 40))
        cap = draw(st.one_of(st.just(INF), st.integers(0, 64).map(float)))
        claims.append(Claim(f"t{i}", float(draw(st.integers(1, 4))), guarantee=float(min(draw(st.integers(0, 8)), cap)),
                            cap=cap, demand=float(running + pending), current=float(running + draw(st.integers(0, 4))),
                            in_use=float(running), protected=draw(st.integers(0, 3)) > 0))
        admitted.append(tuple(sorted((Admitted(float(s), None if m is None else float(m)) for s, m in work),
                                     key=lambda a: -1.0 if a.minutes is None else a.minutes)))
    held = sum(c.current for c in claims)
    capacity = float(draw(st.integers(max(0, int(held) - 8), int(held) + 4)))
    # the pending workloads' sizes, as collect lists them (or not listed at all)
    gangs = tuple(tuple(draw(st.lists(st.integers(1, 16).map(float), max_size=3))) for _ in claims) \
        if draw(st.booleans()) else ()
    return PoolInput.of(key, "accelerators", capacity, claims, admitted=tuple(admitted), gangs=gangs)


def _preempted(work: tuple[Admitted, ...], lost: float) -> tuple[Admitted, ...]:
    """What Kueue preempts of a team whose quota drops `lost` below what it runs: its newest workloads until they
    cover the drop."""
    taken: list[Admitted] = []
    for w in work:
        if sum(a.accelerators for a in taken) >= lost - EPS:
            break
        taken.append(w)
    return tuple(taken)


def _both(pools_: list[PoolInput]) -> tuple[list[list[int]], list[list[int]], list[list[int]]]:
    """Per pool: the amounts without the rule, with it, and the fair shares (desired)."""
    off, on = allocate(pools_, OFF), allocate(pools_, ON)
    by_key = {p.key: p for p in on.pools}
    return ([list(p.after) for p in off.pools], [list(by_key[p.key].after) for p in off.pools],
            [list(p.desired) for p in off.pools])


@properties(200)
@given(pools())
def test_a_plan_takes_only_young_work_newest_first_within_the_budget_never_below_fair_share(pool: PoolInput) -> None:
    [without], [with_], [fair] = _both([pool])
    cost = 0.0
    for i, claim in enumerate(pool.claims):
        lost = without[i] - with_[i]
        if lost <= 0:
            continue
        assert claim.protected  # only protected amounts above fair share are the rule's to lower
        assert with_[i] >= fair[i]  # never below its fair share to serve another
        # the work Kueue reclaims for that drop: all of it admitted less than max_age ago, and known
        below = max(0.0, math.ceil(claim.in_use - EPS) - with_[i])
        for w in _preempted(pool.admitted[i], below):
            assert w.minutes is not None
            assert w.minutes < AGE
            cost += w.accelerators * w.minutes / 60
    assert cost <= BUDGET + 1e-6
    gained = [i for i in range(len(pool.claims)) if with_[i] > without[i]]
    rows = list(pool.claims)
    for i in gained:  # only to teams waiting below their fair share, never beyond it, and whole workloads
        assert rows[i].demand > rows[i].in_use
        assert with_[i] <= fair[i]
        if pool.gangs and pool.gangs[i]:
            sizes = pool.gangs[i]
            levels = {math.ceil(rows[i].in_use + sum(sizes[:k]) - EPS) for k in range(1, len(sizes) + 1)}
            assert with_[i] in levels
    assert sum(with_) <= max(math.floor(pool.capacity + EPS), sum(without))


@properties(100)
@given(pools("ml.p5.48xlarge"), pools("ml.p5e.48xlarge"))
def test_the_budget_spans_the_plan(first: PoolInput, second: PoolInput) -> None:
    without, with_, _ = _both([first, second])
    cost = 0.0
    for pool, off, on in zip(sorted([first, second], key=lambda p: p.key), without, with_, strict=True):
        for i, claim in enumerate(pool.claims):
            below = max(0.0, math.ceil(claim.in_use - EPS) - on[i])
            if off[i] > on[i]:
                cost += sum(w.accelerators * (w.minutes or 0.0) / 60 for w in _preempted(pool.admitted[i], below))
    assert cost <= BUDGET + 1e-6


@properties(200)
@given(pools())
def test_the_allocation_invariants_hold_with_reclaim(pool: PoolInput) -> None:
    [result] = allocate([pool], ON).pools
    capacity = math.floor(pool.capacity + EPS)
    without = allocate([pool], OFF).pools[0].after
    assert sum(result.after) <= max(capacity, sum(without))  # the rule never adds to what the pool holds
    for x, c, d in zip(result.after, pool.claims, result.desired, strict=True):
        assert 0 <= x <= max(c.cap, c.current)
        if sum(cl.guarantee for cl in pool.claims) <= capacity and x < c.current:
            assert x >= min(c.guarantee, d)
    assert allocate([pool], ON) == allocate([pool], ON)  # deterministic
