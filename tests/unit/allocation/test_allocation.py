"""The engine's steps on small cases worked by hand, and the issue's worked examples end to end."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from support.clusters import COOLING, T0, allocation, apply_plan, snapshot

from rebalancer.domain.policy import Policy
from rebalancer.engine.allocation import (
    Claim,
    PoolInput,
    Settings,
    allocate,
    fair_shares,
    largest_remainder,
    water_fill,
)
from rebalancer.planning.planner import make_plan

P5, G5 = "ml.p5.48xlarge", "ml.g5.12xlarge"


def policy(teams: dict[str, dict[str, object]], **rest: object) -> Policy:
    return Policy.model_validate({"teams": teams, **rest})


def after(pool: PoolInput, settings: Settings | None = None) -> dict[str, int]:
    result = allocate([pool], settings or Settings())
    return {o.team: o.after for o in result.pools[0].outcomes}


def test_water_fill_stops_teams_at_their_ceiling_and_shares_the_rest_by_weight() -> None:
    assert water_fill(12, [1, 1, 2], [0, 0, 0], [2, 10, 10]) == pytest.approx([2, 10 / 3, 20 / 3])


def test_water_fill_keeps_floors_as_floors_not_head_starts() -> None:
    # A guarantee of 6 is reached by the level before it matters: team a is not given 6 + its share.
    assert water_fill(20, [1, 1], [6, 0], [20, 20]) == pytest.approx([10, 10])
    assert water_fill(20, [1, 1], [14, 0], [20, 20]) == pytest.approx([14, 6])


def test_water_fill_gives_weight_zero_its_floor_only() -> None:
    assert water_fill(10, [0, 1], [3, 0], [10, 10]) == pytest.approx([3, 7])


def test_guarantees_above_capacity_are_scaled_proportionally() -> None:
    pool = PoolInput.of("p", "accelerators", 24, (Claim("a", 1, guarantee=8, demand=30),
                                               Claim("b", 1, guarantee=8), Claim("c", 1, guarantee=16)))
    shares, factor = fair_shares(pool, "idle")
    assert factor == pytest.approx(0.75)
    assert shares == pytest.approx([6, 6, 12])


def test_largest_remainder_breaks_ties_by_weight_then_name_whatever_the_order() -> None:
    assert largest_remainder([1.5, 1.5, 1.0], 4, [9, 9, 9], [1, 1, 1], ["b", "a", "c"]) == [1, 2, 1]
    assert largest_remainder([1.5, 1.5, 1.0], 4, [9, 9, 9], [1, 2, 1], ["b", "a", "c"]) == [1, 2, 1]
    assert largest_remainder([1.5, 1.5, 1.0], 4, [9, 9, 9], [2, 1, 1], ["b", "a", "c"]) == [2, 1, 1]


def test_largest_remainder_never_rounds_above_a_cap() -> None:
    assert largest_remainder([2.5, 1.5], 4, [2.5, 9], [1, 1], ["a", "b"]) == [2, 2]


def test_surplus_idle_leaves_undemanded_capacity_unallocated() -> None:
    pool = PoolInput.of("p", "accelerators", 16, (Claim("a", 1, demand=4), Claim("b", 3, demand=2)))
    assert after(pool) == {"a": 4, "b": 2}


def test_surplus_spread_raises_by_weight_up_to_caps() -> None:
    pool = PoolInput.of("p", "accelerators", 16, (Claim("a", 1, demand=4), Claim("b", 3, demand=2, cap=8),
                                               Claim("c", 1)))
    # Level rises from the demands: b stops at its cap of 8, a and c share the other 8 equally-by-weight.
    assert after(pool, Settings(surplus="spread")) == {"a": 4, "b": 8, "c": 4}


def test_cooldown_holds_a_team_and_others_fit_around_it() -> None:
    pool = PoolInput.of("p", "accelerators", 16, (Claim("a", 1, demand=16, current=12, cooldown=COOLING),
                                               Claim("b", 1, demand=16, current=4)))
    assert after(pool) == {"a": 12, "b": 4}


def test_min_step_suppresses_small_changes() -> None:
    pool = PoolInput.of("p", "accelerators", 16, (Claim("a", 1, demand=9, current=8), Claim("b", 1, demand=7,
                                                                                         current=8)))
    assert after(pool, Settings(min_step=2)) == {"a": 8, "b": 8}
    assert after(pool, Settings(min_step=1)) == {"a": 9, "b": 7}


def test_protected_in_use_is_never_planned_away() -> None:
    pool = PoolInput.of("p", "accelerators", 16, (Claim("a", 1, demand=10, current=10, in_use=10, protected=True),
                                               Claim("b", 3, demand=16, current=6)))
    assert after(pool) == {"a": 10, "b": 6}


def test_holds_give_way_when_capacity_is_lost() -> None:
    # Both cooling down, but only 8 are left: quotas must still fit, with a warning.
    pool = PoolInput.of("p", "accelerators", 8, (Claim("a", 1, demand=8, current=8, cooldown=COOLING),
                                              Claim("b", 1, demand=8, current=8, cooldown=COOLING)))
    result = allocate([pool], Settings())
    assert sum(o.after for o in result.pools[0].outcomes) == 8
    assert any("capacity 8 is below the quotas" in w for w in result.warnings)


def test_max_move_bounds_voluntary_decreases_across_pools_but_not_forced_ones() -> None:
    pools = [PoolInput.of(k, "accelerators", 32, (Claim("a", 1, demand=0, current=16), Claim("b", 1, demand=32,
                                                                                        current=16)))
             for k in ("p1", "p2")]
    result = allocate(pools, Settings(max_move=10))
    moved = sum(o.before - o.after for p in result.pools for o in p.outcomes if o.after < o.before)
    assert moved == 10
    assert all(sum(o.after for o in p.outcomes) <= 32 for p in result.pools)
    lost = PoolInput.of("p", "accelerators", 16, (Claim("a", 1, demand=16, current=16),
                                               Claim("b", 1, demand=16, current=16)))
    assert sum(after(lost, Settings(max_move=0)).values()) == 16


def test_worked_example_three_g5_weights_1_1_2() -> None:
    snap = snapshot({G5: 3}, pending={"a": {G5: 2}, "b": {G5: 10}, "c": {G5: 10}})
    plan = make_plan(snap, policy({"a": {"weight": 1}, "b": {"weight": 1}, "c": {"weight": 2}}), T0)
    assert {t: plan.allocations[t][G5]["accelerators"] for t in "abc"} == {"a": 2, "b": 3, "c": 7}


def test_worked_example_four_p5_one_failed_guarantees_scaled() -> None:
    snap = snapshot({P5: (3, 1)}, quotas={"a": {P5: 8}, "b": {P5: 8}, "c": {P5: 16}},
                    in_use={"a": {P5: 8}, "b": {P5: 8}, "c": {P5: 16}})
    pol = policy({"a": {"guarantee": {P5: 8}}, "b": {"guarantee": {P5: 8}}, "c": {"guarantee": {P5: 16}}})
    plan = make_plan(snap, pol, T0)
    assert {t: plan.allocations[t][P5]["accelerators"] for t in "abc"} == {"a": 6, "b": 6, "c": 12}
    assert any("scaled" in w and "24" in w for w in plan.warnings)
    assert all("1 node of ml.p5.48xlarge unhealthy" in c.reason for c in plan.changes)


def test_reason_names_demand_weight_and_unhealthy_nodes() -> None:
    snap = snapshot({P5: (3, 1)}, quotas={"research": {P5: 8}, "infer": {P5: 16}},
                    pending={"research": {P5: 24}}, in_use={"infer": {P5: 2}})
    plan = make_plan(snap, policy({"research": {"weight": 3}, "infer": {"weight": 3}}), T0)
    up = next(c for c in plan.changes if c.team == "research")
    assert up.reason.startswith("wants 22 because share 22 of 24 by weight 3 of 6 (demand 24, 0 running)")
    assert "1 node of ml.p5.48xlarge unhealthy" in up.reason


def test_cooldown_comes_from_last_modified_time() -> None:
    snap = snapshot({G5: 2}, quotas={"a": {G5: 8}}, pending={"b": {G5: 8}},
                    modified={"a": T0 - timedelta(minutes=10)})
    pol = policy({"a": {}, "b": {}}, stability={"cooldown_minutes": 30})
    assert make_plan(snap, pol, T0).allocations["a"][G5]["accelerators"] == 8
    assert make_plan(snap, pol, T0 + timedelta(minutes=25)).allocations["a"][G5]["accelerators"] == 0


def test_a_run_then_a_second_run_on_the_result_changes_nothing() -> None:
    snap = snapshot({P5: (3, 1), G5: 3}, quotas={"a": {P5: 16}, "b": {G5: 12}},
                    pending={"a": {P5: 4, G5: 10}, "b": {P5: 24, G5: 1}, "c": {G5: 6}})
    pol = policy({"a": {"weight": 2}, "b": {"weight": 1}, "c": {"weight": 1, "guarantee": {P5: 4}}},
                 stability={"cooldown_minutes": 0, "max_move": None})
    first = make_plan(snap, pol, T0)
    assert first.changes
    applied = apply_plan(snap, first, T0)
    assert make_plan(applied, pol, T0).requests == ()
    assert allocation(applied, "b", P5) == first.allocations["b"][P5]["accelerators"]


def test_capacity_of_cpu_types_is_in_vcpu() -> None:
    snap = snapshot({"ml.c5.4xlarge": 2}, pending={"a": {"ml.c5.4xlarge": 40}})
    plan = make_plan(snap, policy({"a": {}}), T0)
    assert plan.allocations["a"]["ml.c5.4xlarge"] == {"vcpu": 32}
    assert math.isclose(plan.requests[0].parameters["ComputeQuotaConfig"]["ComputeQuotaResources"][0]["VCpu"], 32)
