"""When capacity falls below the quotas (failed nodes): the loss comes from quota nobody runs on first, and admitted
work becomes reclaimable borrowing only when that quota cannot absorb it."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from support.clusters import COOLING
from support.props import properties

from rebalancer.engine.allocation import EPS, INF, Claim, PoolInput, Settings, allocate, fair_shares

OLD = Settings(shrink_idle_first=False)


def after(pool: PoolInput, settings: Settings | None = None) -> dict[str, int]:
    result = allocate([pool], settings or Settings())
    return {o.team: o.after for o in result.pools[0].outcomes}


def lost_a_node(*claims: Claim, capacity: float = 96) -> PoolInput:
    return PoolInput.of("ml.p5.48xlarge", "accelerators", capacity, claims)


def busy(protected: bool = True) -> Claim:
    # Runs 64, wants 96 in all: its fair share at 96 GPUs is 56.
    return Claim("a", 1, demand=96, current=64, in_use=64, protected=protected)


def waiting() -> Claim:
    # Holds 40, runs 8: a 32-GPU gang job waits for the rest.
    return Claim("b", 1, demand=40, current=40, in_use=8)


def test_a_busy_teams_running_work_is_kept_and_the_idle_quota_absorbs_the_loss() -> None:
    pool = lost_a_node(busy(), waiting())
    assert after(pool) == {"a": 64, "b": 32}
    assert after(pool, OLD) == {"a": 56, "b": 40}  # before: a's running 8 GPUs became reclaimable borrowing


def test_an_unprotected_teams_running_work_is_not_held_on_a_shrink_so_the_next_run_changes_nothing() -> None:
    # Holding a's 64 for this run only would put it to 56 at the next run: planning twice would change twice.
    assert after(lost_a_node(busy(protected=False), waiting())) == {"a": 56, "b": 40}
    assert after(lost_a_node(busy(protected=False), waiting()), OLD) == {"a": 56, "b": 40}


def test_quota_nobody_waits_for_goes_before_quota_pending_work_waits_for() -> None:
    idle = Claim("c", 1, demand=0, current=8, in_use=0, cooldown=COOLING)
    result = allocate([lost_a_node(busy(), waiting(), idle, capacity=104)], Settings())
    assert {o.team: o.after for o in result.pools[0].outcomes} == {"a": 64, "b": 40, "c": 0}
    assert any("took 8 from held quota nobody runs on" in w for w in result.warnings)


def test_a_guarantee_is_not_cut_to_save_another_teams_running_work() -> None:
    guaranteed = Claim("b", 1, guarantee=40, demand=40, current=40, in_use=8)
    assert after(lost_a_node(busy(), guaranteed)) == {"a": 56, "b": 40}


def test_running_work_is_cut_only_when_no_idle_quota_is_left_and_the_warning_says_so() -> None:
    full = Claim("b", 1, demand=40, current=40, in_use=40, protected=True)
    result = allocate([lost_a_node(busy(), full)], Settings())
    assert sum(o.after for o in result.pools[0].outcomes) == 96
    assert any("protected in-use amounts; overrode them by 8" in w for w in result.warnings)


def test_the_reason_says_unused_quota_was_taken_first() -> None:
    result = allocate([lost_a_node(busy(), waiting())], Settings())
    reasons = {o.team: o.reason for o in result.pools[0].outcomes}
    assert reasons["b"] == ("wants 40 because demand 40 (8 running); gets 32 because capacity 96 is below the quotas "
                            "held: quota nobody runs on (pending work waits for it) cut first")
    # a keeps its quota, but the policy wants less: the reason says what holds it
    assert reasons["a"] == ("wants 56 because share 56 of 96 by weight 1 of 2 (demand 96, 64 running); gets 64 "
                            "because what it runs is protected (64 running)")


def test_without_a_shrink_nothing_changes() -> None:
    grown = lost_a_node(busy(), waiting(), capacity=104)
    assert after(grown) == after(grown, OLD)


@st.composite
def shrunk_pools(draw: st.DrawFn) -> PoolInput:
    n = draw(st.integers(1, 6))
    claims = []
    for i in range(n):
        current = draw(st.integers(0, 40))
        cap = draw(st.one_of(st.just(INF), st.integers(0, 48).map(float)))
        guarantee = float(min(draw(st.integers(0, 12)), cap))
        claims.append(Claim(f"t{i}", float(draw(st.integers(0, 4))), guarantee=guarantee, cap=cap,
                            demand=float(draw(st.integers(0, 60))), current=float(current),
                            in_use=float(draw(st.integers(0, current))), protected=draw(st.booleans()),
                            cooldown=COOLING if draw(st.booleans()) else None))
    total = sum(int(c.current) for c in claims)
    return PoolInput.of("ml.p5.48xlarge", "accelerators", float(draw(st.integers(0, max(0, total - 1)))), claims)


@properties()
@given(shrunk_pools(), st.sampled_from([None, 0, 8, 64]))
def test_after_a_shrink_quotas_fit_and_protected_running_work_is_cut_only_when_no_idle_quota_is_left(
        pool: PoolInput, max_move: int | None) -> None:
    outs = allocate([pool], Settings(max_move=max_move)).pools[0].outcomes
    assert sum(o.after for o in outs) <= pool.capacity
    assert all(o.after >= 0 for o in outs)
    if max_move is not None:
        return  # max_move may give back decreases, so the tier order below is checked without it
    # A protected team's running work (an unprotected one's is cut to its share, shrink or not)
    cut_in_use = [c for c, o in zip(pool.claims, outs, strict=True)
                  if c.protected and o.after < min(c.current, c.in_use)]
    if cut_in_use:
        _, factor = fair_shares(pool, "idle")
        for c, o in zip(pool.claims, outs, strict=True):
            # no quota above in-use is left anywhere, except what a guarantee keeps
            assert o.after <= max(math.ceil(c.in_use - EPS), min(o.desired, math.floor(c.guarantee * factor + EPS)))

@properties()
@given(shrunk_pools())
def test_after_a_shrink_guarantees_and_caps_still_hold_as_far_as_capacity_allows(pool: PoolInput) -> None:
    outs = allocate([pool], Settings()).pools[0].outcomes
    _, factor = fair_shares(pool, "idle")
    for c, o in zip(pool.claims, outs, strict=True):
        assert o.after >= min(o.desired, math.floor(c.guarantee * factor + EPS), c.current)
        assert o.after <= max(c.cap, c.current)  # a cap is never exceeded by more than the quota already held


@properties()
@given(shrunk_pools())
def test_after_a_shrink_planning_on_the_applied_result_changes_nothing(shrunk: PoolInput) -> None:
    # Cooldowns left out: one that ends between the two runs rightly lets the second change what it held.
    claims = [Claim(c.team, c.weight, c.guarantee, c.cap, c.demand, c.current, c.in_use, c.protected, notes=c.notes)
              for c in shrunk.claims]
    pool = PoolInput.of(shrunk.key, "accelerators", shrunk.capacity, claims)
    outs = allocate([pool], Settings()).pools[0].outcomes
    applied = [Claim(c.team, c.weight, c.guarantee, c.cap, c.demand, float(o.after), c.in_use, c.protected,
                     notes=c.notes) for c, o in zip(claims, outs, strict=True)]
    again = allocate([PoolInput.of(pool.key, "accelerators", pool.capacity, applied)], Settings()).pools[0].outcomes
    assert [o.after for o in again] == [o.after for o in outs]
