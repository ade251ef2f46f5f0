"""Instance families in guarantees and caps: divided across the family's types by healthy capacity."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from support.clusters import T0, policy, snapshot
from support.props import properties

from rebalancer.planning import build_pools, make_plan, split_family

P5, P5E, P5_SMALL = "ml.p5.48xlarge", "ml.p5e.48xlarge", "ml.p5.4xlarge"


def test_family_guarantee_is_split_by_healthy_capacity_and_explained() -> None:
    # p5: 3 healthy nodes (24 GPUs, one failed node ignored); p5e: 1 node (8). 16 over 24:8 → 12 + 4.
    snap = snapshot({P5: (3, 1), P5E: 1}, pending={"a": {P5: 30, P5E: 30}, "b": {P5: 30, P5E: 30}})
    pools, _ = build_pools(snap, policy({"a": {"guarantee": {"ml.p5": 16}}, "b": {}}), T0)
    guarantees = {p.key: next(c.guarantee for c in p.claims if c.team == "a") for p in pools}
    assert guarantees == {P5: 12, P5E: 4}
    plan = make_plan(snap, policy({"a": {"guarantee": {"ml.p5": 16}, "weight": 0}, "b": {}}), T0)
    reason = next(c.reason for c in plan.changes if c.team == "a" and c.instance_type == P5)
    assert f"guarantee ml.p5 16 split by healthy capacity: {P5} 12 of 24, {P5E} 4 of 8" in reason


def test_family_percent_is_of_the_family_total_and_caps_split_too() -> None:
    snap = snapshot({P5: 2, P5E: 2}, pending={"a": {P5: 32, P5E: 32}})
    plan = make_plan(snap, policy({"a": {"cap": {"ml.p5": "50%"}}}), T0)
    assert plan.allocations["a"] == {P5: {"accelerators": 8.0}, P5E: {"accelerators": 8.0}}


def test_family_amount_above_its_capacity_is_limited_with_a_warning() -> None:
    snap = snapshot({P5: 1})
    pools, warnings = build_pools(snap, policy({"a": {"guarantee": {"ml.p5": 20}}}), T0)
    assert [c.guarantee for p in pools for c in p.claims] == [8]
    assert any("ml.p5 = 20 is above the family's healthy 8" in w for w in warnings)


def test_largest_remainder_gives_the_leftover_unit_to_the_largest_fraction() -> None:
    # 10 over 8:8:1 → 4.71, 4.71, 0.59: floors 4+4+0, two units left go to the two .71s.
    assert split_family(10, {P5: 8, P5E: 8, P5_SMALL: 1}) == {P5: 5, P5E: 5, P5_SMALL: 0}
    assert split_family(3, {P5: 8, P5E: 8, P5_SMALL: 1}) == {P5: 2, P5E: 1, P5_SMALL: 0}


capacities = st.dictionaries(st.sampled_from([P5, P5E, P5_SMALL, "ml.p5en.48xlarge"]),
                             st.integers(0, 64).map(float), min_size=1)


@properties(300)
@given(capacities, st.integers(0, 300))
def test_family_split_meets_the_total_exactly_and_never_exceeds_a_type(caps: dict[str, float], amount: int) -> None:
    split = split_family(amount, caps)
    assert sum(split.values()) == min(amount, int(sum(caps.values())))
    for t, n in split.items():
        assert 0 <= n <= caps[t]
        # proportional within one unit
        if sum(caps.values()):
            share = min(amount, sum(caps.values())) * caps[t] / sum(caps.values())
            assert abs(n - share) < 1


@properties(60)
@given(st.integers(0, 4), st.integers(0, 4), st.integers(0, 2), st.integers(0, 80))
def test_planned_family_guarantee_is_met_exactly(p5: int, p5e: int, small: int, amount: int) -> None:
    nodes = {t: n for t, n in ((P5, p5), (P5E, p5e), (P5_SMALL, small)) if n}
    if not nodes:
        return
    snap = snapshot(nodes)
    plan = make_plan(snap, policy({"a": {"guarantee": {"ml.p5": amount}}}), T0)
    held = {t: a["accelerators"] for t, a in plan.allocations.get("a", {}).items()}
    total = 8 * (p5 + p5e) + small
    assert sum(held.values()) == min(amount, total)
    for t, n in held.items():
        assert n <= nodes[t] * (1 if t == P5_SMALL else 8)
