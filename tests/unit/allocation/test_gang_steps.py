"""Quota in gang-sized steps (rebalancer.engine.gangs, `Settings.gang_steps`): a team's share between two of its
useful amounts moves to one of them; guarantees and caps stay exact."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from support.props import properties

from rebalancer.engine import gangs
from rebalancer.engine.allocation import EPS, INF, Claim, PoolInput, Settings, allocate, fair_shares

P5 = "ml.p5.48xlarge"
ON = Settings(gang_steps=True)


def amounts(pool: PoolInput, settings: Settings = ON) -> dict[str, int]:
    result = allocate([pool], settings).pools[0]
    return dict(zip(result.teams, result.after, strict=True))


def pool(capacity: float, claims: list[Claim], sizes: list[tuple[float, ...]]) -> PoolInput:
    return PoolInput.of(P5, "accelerators", capacity, claims, gangs=tuple(sizes))


def heavy_and_light(capacity: float, heavy: Claim | None = None) -> PoolInput:
    """`heavy` waits for one 64-GPU gang; `light` and `other` each want 64 in small jobs."""
    heavy = heavy or Claim("heavy", 1, demand=64)
    return pool(capacity, [heavy, Claim("light", 1, demand=64), Claim("other", 1, demand=64)],
                [(64,), (1,) * 64, (1,) * 64])


def test_a_share_short_of_the_next_gang_is_left_with_the_others() -> None:
    # plain: 30 each of 90, of which heavy's 30 start nothing; stepped: heavy 0 (64 is 34 away), the others 45 each
    assert amounts(heavy_and_light(90), Settings()) == {"heavy": 30, "light": 30, "other": 30}
    assert amounts(heavy_and_light(90)) == {"heavy": 0, "light": 45, "other": 45}


def test_halfway_the_gang_starts() -> None:
    assert amounts(heavy_and_light(96)) == {"heavy": 64, "light": 16, "other": 16}


def test_a_share_nearer_the_next_gang_is_raised_to_it() -> None:
    # 150 of 3: 50 each; 64 is 14 away and 0 is 50 away, and the others give the 14 above their floors
    assert amounts(heavy_and_light(150)) == {"heavy": 64, "light": 43, "other": 43}


def test_levels_start_at_what_the_team_runs() -> None:
    # heavy runs 16 and waits for 64: its levels are 16 and 80; its share of 126 is 42 → back to 16
    got = amounts(heavy_and_light(126, Claim("heavy", 1, demand=80, in_use=16, current=16)))
    assert got == {"heavy": 16, "light": 55, "other": 55}


def test_a_guarantee_is_a_floor_for_the_step_down() -> None:
    got = amounts(heavy_and_light(90, Claim("heavy", 1, demand=64, guarantee=20)))
    assert got["heavy"] == 20
    assert sum(got.values()) == 90


def test_a_cap_below_the_next_gang_is_never_passed() -> None:
    # 64 is out of reach under the cap of 40: heavy steps down, the others take all they want (64 each), and the
    # 22 nobody else wants stay with heavy
    assert amounts(heavy_and_light(150, Claim("heavy", 1, demand=64, cap=40))) == {"heavy": 22, "light": 64,
                                                                                    "other": 64}


def test_what_nobody_else_wants_stays_with_the_stepped_team() -> None:
    p = pool(96, [Claim("heavy", 1, demand=128), Claim("light", 1, demand=8)], [(64, 64), (8,)])
    assert amounts(p) == {"heavy": 88, "light": 8}  # 88 is between 64 and 128, but the others want no more


def test_off_by_default_and_without_gangs_nothing_moves() -> None:
    plain = PoolInput.of(P5, "accelerators", 90, heavy_and_light(90).claims)
    assert amounts(heavy_and_light(90), Settings()) == amounts(plain, ON) == amounts(plain, Settings())


def test_the_reason_says_why() -> None:
    result = allocate([heavy_and_light(150)], ON).pools[0]
    assert "gang steps: share 50.0 raised to 64: what it runs plus whole pending workloads" in result.reasons[0]
    down = allocate([heavy_and_light(90, Claim("heavy", 1, demand=64, current=32))], ON).pools[0]
    assert "short of its next pending workload (64 beyond 0); the rest left with the others this run" \
        in down.reasons[0]


def test_levels_skip_empty_workloads() -> None:
    assert gangs.levels(8, (16, 0, 32)) == [8, 24, 56]


# ---------------------------------------------------------------- properties


@st.composite
def gang_pools(draw: st.DrawFn) -> PoolInput:
    n = draw(st.integers(1, 6))
    claims, sizes = [], []
    for i in range(n):
        in_use = float(draw(st.integers(0, 32)))
        pending = tuple(float(draw(st.sampled_from((1, 2, 8, 16, 32, 64)))) for _ in range(draw(st.integers(0, 4))))
        cap = draw(st.one_of(st.just(INF), st.integers(0, 128).map(float)))
        guarantee = float(min(draw(st.integers(0, 16)), cap))
        claims.append(Claim(f"t{i}", float(draw(st.integers(0, 4))), guarantee=guarantee, cap=cap,
                            demand=in_use + sum(pending), current=float(draw(st.integers(0, 64))), in_use=in_use))
        sizes.append(pending)
    return pool(float(draw(st.integers(0, 256))), claims, sizes)


@properties(200)
@given(gang_pools(), st.sampled_from(["idle", "spread"]))
def test_stepped_amounts_fit_and_keep_guarantees_and_caps(p: PoolInput, surplus: str) -> None:
    got = allocate([p], Settings(surplus=surplus, gang_steps=True)).pools[0]  # type: ignore[arg-type]
    assert sum(got.after) <= math.floor(p.capacity + EPS)
    fits = sum(c.guarantee for c in p.claims) <= p.capacity
    for after, c in zip(got.after, p.claims, strict=True):
        assert 0 <= after <= c.cap
        if fits:
            assert after >= c.guarantee


def _ceiling(c: Claim) -> float:
    return max(c.guarantee, min(c.demand, c.cap)) if c.weight > 0 else c.guarantee


@properties(200)
@given(gang_pools())
def test_a_stepped_team_sits_on_a_level_or_its_floor_unless_nobody_else_wants_more(p: PoolInput) -> None:
    if sum(c.guarantee for c in p.claims) > p.capacity:
        return
    shares, _ = fair_shares(p, "idle")
    stepped = allocate([p], ON).pools[0].fair
    others_full = all(abs(a - _ceiling(c)) <= EPS
                      for a, c, sizes in zip(stepped, p.claims, p.gangs, strict=True) if not sizes)
    for share, a, c, sizes in zip(shares, stepped, p.claims, p.gangs, strict=True):
        assert c.guarantee - EPS <= a <= _ceiling(c) + EPS
        if abs(a - share) > EPS and sizes and c.in_use + EPS < a:
            ladder = gangs.levels(c.in_use, sizes)
            at_level = any(abs(a - level) <= EPS for level in ladder)
            assert at_level or abs(a - c.guarantee) <= EPS or others_full, (a, share, ladder)


@properties(200)
@given(gang_pools())
def test_gang_steps_are_deterministic_and_settle(p: PoolInput) -> None:
    first = allocate([p], ON).pools[0]
    assert allocate([p], ON).pools[0] == first
    again = PoolInput(p.key, p.resource, p.capacity, p.claims.__class__.of(
        Claim(c.team, c.weight, c.guarantee, c.cap, c.demand, float(a), c.in_use)
        for c, a in zip(p.claims, first.after, strict=True)), gangs=p.gangs)
    assert allocate([again], ON).pools[0].after == first.after


@properties(200)
@given(gang_pools())
def test_no_capacity_idle_while_a_team_wants_it_and_can_use_it(p: PoolInput) -> None:
    got = allocate([p], ON).pools[0]
    hungry = [c for a, c in zip(got.after, p.claims, strict=True) if a < min(c.demand, c.cap) and c.weight > 0]
    if hungry:
        assert sum(got.after) == math.floor(p.capacity)
