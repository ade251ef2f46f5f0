"""Family caps: a team's sum over several pools bounded jointly, checked against the LP reference and invariants.

Agreement bound: the continuous amounts equal the LP's (weighted max-min fairness by progressive filling over every
(team, pool) pair, pool capacities and family caps as rows) within 1e-6; each integer is within one unit of the
LP's amount for that team in that pool (strictly: |integer − continuous| < 1), as in the single-pool engine.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.lp_fairness import reference_coupled
from support.props import properties

from rebalancer.engine.allocation import (
    EPS,
    INF,
    Allocation,
    Claim,
    FamilyBound,
    PoolInput,
    Settings,
    allocate,
    fair_shares,
    scaled_floors,
    solve_families,
)
from rebalancer.engine.family_caps import Family, coupled_round

P5, P5EN = "ml.p5.48xlarge", "ml.p5en.48xlarge"
KEYS = ("pool-a", "pool-b", "pool-c")

Case = tuple[list[PoolInput], str]


@st.composite
def cases(draw: st.DrawFn, max_teams: int = 4) -> Case:
    """1-3 pools sharing 1-4 teams (a team's weight is the same everywhere); some teams with a family cap over
    some of the pools, where they have no per-pool cap (as the planner writes them), others with per-pool caps."""
    n_pools, n_teams = draw(st.integers(1, 3)), draw(st.integers(1, max_teams))
    weights = [float(draw(st.integers(0, 5))) for _ in range(n_teams)]
    families: dict[str, tuple[frozenset[int], float]] = {}
    for i in range(n_teams):
        if draw(st.booleans()):
            members = draw(st.frozensets(st.integers(0, n_pools - 1), min_size=1))
            families[f"t{i}"] = (members, float(draw(st.integers(0, 60))))
    pools = []
    for p in range(n_pools):
        claims = []
        for i in range(n_teams):
            team = f"t{i}"
            in_family = team in families and p in families[team][0]
            cap = INF if in_family else draw(st.one_of(st.just(INF), st.integers(0, 40).map(float)))
            claims.append(Claim(team, weights[i], float(min(draw(st.integers(0, 10)), cap)), cap,
                                float(draw(st.integers(0, 40))), current=float(draw(st.integers(0, 20)))))
        bounds = tuple(FamilyBound(t, "ml.fam", k) for t, (members, k) in sorted(families.items()) if p in members)
        pools.append(PoolInput.of(KEYS[p], "accelerators", float(draw(st.integers(0, 64))), claims, families=bounds))
    return pools, draw(st.sampled_from(["idle", "spread"]))


def family_rows(pools: list[PoolInput]) -> dict[str, tuple[float, list[tuple[int, int]]]]:
    """Per capped team: (cap, [(pool index, claim index)])."""
    rows: dict[str, tuple[float, list[tuple[int, int]]]] = {}
    for p, pool in enumerate(pools):
        for b in pool.families:
            rows.setdefault(b.team, (b.amount, []))[1].append((p, pool.claims.team.index(b.team)))
    return rows


def reference(pools: list[PoolInput], surplus: str) -> list[list[float]]:
    return reference_coupled([(p.capacity, p.claims.weight, p.claims.guarantee, p.claims.demand, p.claims.cap)
                              for p in pools], list(family_rows(pools).values()), surplus)


def run(pools: list[PoolInput], surplus: str) -> Allocation:
    return allocate(pools, Settings(surplus=surplus, min_step=1, max_move=None))  # type: ignore[arg-type]


@properties(60)
@given(cases())
def test_engine_matches_the_coupled_progressive_filling_lp(case: Case) -> None:
    pools, surplus = case
    ref = reference(pools, surplus)
    result = {r.key: r for r in run(pools, surplus).pools}
    for pool, expected in zip(pools, ref, strict=True):
        got = result[pool.key]
        assert list(got.fair) == pytest.approx(expected, abs=1e-6)
        for integer, r in zip(got.desired, expected, strict=True):
            assert abs(integer - r) < 1 + 1e-6


def floors_of(pool: PoolInput) -> list[float]:
    return scaled_floors(max(pool.capacity, 0.0), pool.claims.guarantee)[0]


@properties(200)
@given(cases())
def test_sums_fit_pools_and_family_caps_and_guarantees_hold(case: Case) -> None:
    pools, surplus = case
    result = run(pools, surplus).pools  # pools come back in key order, as generated
    for pool, got in zip(pools, result, strict=True):
        assert sum(got.desired) <= math.floor(pool.capacity + EPS)
        assert sum(got.after) <= math.floor(pool.capacity + EPS)
        for integer, c, f in zip(got.desired, pool.claims, floors_of(pool), strict=True):
            assert integer <= c.cap
            assert integer >= math.floor(f + EPS)  # guarantees, scaled down only when they exceed the pool
    for cap, pairs in family_rows(pools).values():
        floors = sum(floors_of(pools[p])[i] for p, i in pairs)
        total = sum(result[p].desired[i] for p, i in pairs)
        assert total <= max(cap, math.ceil(floors - EPS))
        if floors <= cap:
            assert sum(result[p].fair[i] for p, i in pairs) <= cap + 1e-9


@properties(200)
@given(cases())
def test_nothing_idles_that_a_team_could_use(case: Case) -> None:
    """Pareto: a pool with room left means each team in it is at its ceiling there or at its family cap; and the
    integers fill each pool as far as its continuous total goes."""
    pools, surplus = case
    result = run(pools, surplus).pools
    rows = family_rows(pools)
    family_sum = {t: sum(result[p].fair[i] for p, i in pairs) for t, (_, pairs) in rows.items()}
    for pool, got in zip(pools, result, strict=True):
        if sum(got.fair) < pool.capacity - 1e-6:
            for a, c, f in zip(got.fair, pool.claims, floors_of(pool), strict=True):
                ceiling = max(f, c.cap if surplus == "spread" else min(c.demand, c.cap))
                at_family_cap = c.team in rows and family_sum[c.team] >= rows[c.team][0] - 1e-6
                assert c.weight == 0 or a >= ceiling - 1e-6 or at_family_cap
    floors_fit = all(sum(floors_of(pools[p])[i] for p, i in pairs) <= cap for cap, pairs in rows.values())
    if floors_fit:
        for pool, got in zip(pools, result, strict=True):
            assert sum(got.desired) == min(math.floor(pool.capacity + EPS), math.floor(sum(got.fair) + EPS))


@properties(100)
@given(cases(), st.randoms(use_true_random=False))
def test_result_does_not_depend_on_the_order_of_pools_or_teams(case: Case, rnd: random.Random) -> None:
    pools, surplus = case
    base = {(r.key, t): (a, d) for r in run(pools, surplus).pools
            for t, a, d in zip(r.teams, r.after, r.desired, strict=True)}
    shuffled = []
    for pool in reversed(pools):
        claims = list(pool.claims)
        rnd.shuffle(claims)
        shuffled.append(PoolInput.of(pool.key, pool.resource, pool.capacity, claims, families=pool.families))
    again = {(r.key, t): (a, d) for r in run(shuffled, surplus).pools
             for t, a, d in zip(r.teams, r.after, r.desired, strict=True)}
    assert again == base


@properties(100)
@given(cases())
def test_a_family_cap_that_never_binds_changes_nothing(case: Case) -> None:
    """With every family amount infinite, the coupled solve is each pool's own water-fill, to the unit."""
    pools, surplus = case
    loose = [PoolInput(p.key, p.resource, p.capacity, p.claims, p.notes,
                       tuple(FamilyBound(b.team, b.key, INF) for b in p.families)) for p in pools]
    alone = [PoolInput(p.key, p.resource, p.capacity, p.claims, p.notes) for p in pools]
    coupled, separate = run(loose, surplus).pools, run(alone, surplus).pools
    for pool, c, s in zip(pools, coupled, separate, strict=True):
        assert list(c.fair) == pytest.approx(fair_shares(pool, surplus)[0], abs=1e-9)  # type: ignore[arg-type]
        assert c.desired == s.desired
        assert c.after == s.after


def test_a_team_capped_on_the_family_gets_the_whole_cap_where_its_work_runs() -> None:
    fam = (FamilyBound("a", "ml.p5", 24),)
    pools = [PoolInput.of(P5, "accelerators", 24, [Claim("a", 1, demand=0), Claim("b", 1, demand=4)], families=fam),
             PoolInput.of(P5EN, "accelerators", 32, [Claim("a", 1, demand=40), Claim("b", 1, demand=4)],
                          families=fam)]
    result = {r.key: dict(zip(r.teams, r.after, strict=True)) for r in run(pools, "idle").pools}
    assert result == {P5: {"a": 0, "b": 4}, P5EN: {"a": 24, "b": 4}}


def test_what_the_capped_team_cannot_take_stays_with_the_others() -> None:
    # Unbounded, a would get p5: 16 (alone there) and p5en: 20 (half of 40 against b): 36 > 24. Capped, its pairs
    # rise together to 12 + 12; b keeps rising on p5en to 28, and 4 of p5 idle (nobody else wants them).
    fam = (FamilyBound("a", "ml.p5", 24),)
    pools = [PoolInput.of(P5, "accelerators", 16, [Claim("a", 1, demand=40), Claim("b", 1, demand=0)], families=fam),
             PoolInput.of(P5EN, "accelerators", 40, [Claim("a", 1, demand=40), Claim("b", 1, demand=40)],
                          families=fam)]
    p5, p5en = run(pools, "idle").pools
    assert (p5.after, p5en.after) == ((12, 0), (12, 28))
    assert "family cap ml.p5 = 24 (sum over ml.p5.48xlarge 12, ml.p5en.48xlarge 12)" in p5en.reasons[0]
    assert "family cap" not in p5en.reasons[1]


def test_a_guarantee_above_the_family_cap_is_kept_and_the_team_rises_nowhere() -> None:
    fam = (FamilyBound("a", "ml.p5", 4),)
    pools = [PoolInput.of(P5, "accelerators", 16, [Claim("a", 1, guarantee=6, demand=16), Claim("b", 1, demand=16)],
                          families=fam),
             PoolInput.of(P5EN, "accelerators", 16, [Claim("a", 1, demand=16), Claim("b", 1, demand=16)],
                          families=fam)]
    solved = solve_families(pools, "idle")
    assert solved[P5].shares == [6, 10]
    assert solved[P5EN].shares == [0, 16]


def test_rounding_moves_a_capped_teams_unit_to_the_pool_that_needs_it() -> None:
    # a may round up once (3.1 − 2 − 0). Pool 0 rounds first and gives it to a's larger remainder there (.6). When
    # pool 1 has a unit to give too, only a wants it: the augmenting path moves a's unit to pool 1 and pool 0's to b.
    values = [[2.6, 1.4], [0.5]]
    family = Family(amount=3.1, pairs=((0, 0), (1, 0)))
    got = coupled_round(values, [4, 0], [[INF, INF], [INF]], [[1, 1], [1]], [["a", "b"], ["a"]], [family])
    assert got == [[3, 1], [0]]
    got = coupled_round(values, [4, 1], [[INF, INF], [INF]], [[1, 1], [1]], [["a", "b"], ["a"]], [family])
    assert got == [[2, 2], [1]]


def test_overlapping_families_of_one_team_are_refused() -> None:
    both = (FamilyBound("a", "ml.p5", 8), FamilyBound("a", "ml.p5e", 4))
    with pytest.raises(ValueError, match=f"a: family caps ml.p5 and ml.p5e overlap on {P5EN}"):
        solve_families([PoolInput.of(P5EN, "accelerators", 8, [Claim("a", 1, demand=8)], families=both)], "idle")
