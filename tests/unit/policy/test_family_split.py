"""Instance families in guarantees and caps: a family guarantee goes where the team's demand is, then by healthy
capacity; a family cap bounds the team's sum over the family's types (the engine: allocation/test_family_caps)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from support.clusters import T0, apply_plan, policy, snapshot
from support.props import properties

from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.engine.allocation import PoolInput
from rebalancer.planning.planner import make_plan
from rebalancer.planning.pools import build_pools, split_by_demand, split_family

P5, P5E, P5EN, P5_SMALL = "ml.p5.48xlarge", "ml.p5e.48xlarge", "ml.p5en.48xlarge", "ml.p5.4xlarge"


def guarantees_of(team: str, pools: list[PoolInput]) -> dict[str, float]:
    return {p.key: next(c.guarantee for c in p.claims if c.team == team) for p in pools}


def test_family_guarantee_without_demand_is_split_by_healthy_capacity_and_explained() -> None:
    # p5: 3 healthy nodes (24 GPUs, one failed node ignored); p5e: 1 node (8). 16 over 24:8 → 12 + 4.
    snap = snapshot({P5: (3, 1), P5E: 1}, pending={"b": {P5: 30, P5E: 30}})
    pools, _ = build_pools(snap, policy({"a": {"guarantee": {"ml.p5": 16}}, "b": {}}), T0)
    assert guarantees_of("a", pools) == {P5: 12, P5E: 4}
    plan = make_plan(snap, policy({"a": {"guarantee": {"ml.p5": 16}, "weight": 0}, "b": {}}), T0)
    reason = next(c.reason for c in plan.changes if c.team == "a" and c.instance_type == P5)
    assert f"guarantee ml.p5 16 split by healthy capacity: {P5} 12 of 24, {P5E} 4 of 8" in reason


def test_family_guarantee_lands_where_the_teams_demand_is() -> None:
    snap = snapshot({P5: 3, P5EN: 2}, pending={"a": {P5EN: 40}, "b": {P5: 40, P5EN: 40}})
    pools, _ = build_pools(snap, policy({"a": {"guarantee": {"ml.p5": 16}}, "b": {}}), T0)
    assert guarantees_of("a", pools) == {P5: 0, P5EN: 16}
    plan = make_plan(snap, policy({"a": {"guarantee": {"ml.p5": 16}, "weight": 0}, "b": {}}), T0)
    assert plan.allocations["a"] == {P5EN: {"accelerators": 16.0}}
    reason = next(c.reason for c in plan.changes if c.team == "a")
    assert f"guarantee ml.p5 16 split by the team's demand: {P5} 0 of 24, {P5EN} 16 of 16" in reason


def test_family_guarantee_beyond_the_demand_goes_by_the_capacity_left() -> None:
    # Demand 10 on p5en takes 10; the 6 left over 24 : 6 free → 4.8 + 1.2 → 5 + 1.
    snap = snapshot({P5: 3, P5EN: 2}, pending={"a": {P5EN: 10}})
    pools, _ = build_pools(snap, policy({"a": {"guarantee": {"ml.p5": 16}}}), T0)
    assert guarantees_of("a", pools) == {P5: 5, P5EN: 11}
    plan = make_plan(snap, policy({"a": {"guarantee": {"ml.p5": 16}}}), T0)
    reason = next(c.reason for c in plan.changes if c.team == "a" and c.instance_type == P5)
    assert "split by the team's demand, then healthy capacity" in reason


def test_family_percent_is_of_the_family_total_and_a_cap_bounds_the_sum() -> None:
    snap = snapshot({P5: 2, P5E: 2}, pending={"a": {P5: 32, P5E: 32}})
    plan = make_plan(snap, policy({"a": {"cap": {"ml.p5": "50%"}}}), T0)
    assert plan.allocations["a"] == {P5: {"accelerators": 8.0}, P5E: {"accelerators": 8.0}}


def test_a_family_cap_goes_to_the_type_the_team_runs_on_and_says_so() -> None:
    # Weight 4 of 5 on p5en's 32 would give a 25.6; the cap holds it to 24 and b takes the rest. Split by capacity
    # (the old reading) a could hold only p5en's 32/56 of 24 there: 14.
    snap = snapshot({P5: 3, P5EN: 4}, pending={"a": {P5EN: 40}, "b": {P5: 40, P5EN: 40}})
    plan = make_plan(snap, policy({"a": {"cap": {"ml.p5": 24}, "weight": 4}, "b": {}}), T0)
    assert plan.allocations["a"] == {P5EN: {"accelerators": 24.0}}
    assert plan.allocations["b"] == {P5: {"accelerators": 24.0}, P5EN: {"accelerators": 8.0}}
    reason = next(c.reason for c in plan.changes if c.team == "a")
    assert f"family cap ml.p5 = 24 (sum over {P5} 0, {P5EN} 24)" in reason
    assert all("family cap" not in c.reason for c in plan.changes if c.team == "b")


def test_a_family_cap_above_the_familys_capacity_never_binds_and_warns_nothing() -> None:
    snap = snapshot({P5: 1}, pending={"a": {P5: 8}})
    plan = make_plan(snap, policy({"a": {"cap": {"ml.p5": 100}}}), T0)
    assert plan.allocations["a"] == {P5: {"accelerators": 8.0}}
    assert not [w for w in plan.warnings if "ml.p5" in w]


def test_family_guarantee_above_its_capacity_is_limited_with_a_warning() -> None:
    snap = snapshot({P5: 1}, pending={"a": {P5: 30}})
    pools, warnings = build_pools(snap, policy({"a": {"guarantee": {"ml.p5": 20}}}), T0)
    assert [c.guarantee for p in pools for c in p.claims] == [8]
    assert "a: guarantee.ml.p5 = 20 is above the family's healthy 8; limited to 8" in warnings


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


demands = st.dictionaries(st.sampled_from([P5, P5E, P5_SMALL, "ml.p5en.48xlarge"]), st.integers(0, 80).map(float))


@properties(300)
@given(capacities, demands, st.integers(0, 300))
def test_a_split_by_demand_meets_the_total_fills_demand_first_and_never_exceeds_a_type(
        caps: dict[str, float], demand: dict[str, float], amount: int) -> None:
    split = split_by_demand(amount, caps, demand)
    assert sum(split.values()) == min(amount, int(sum(caps.values())))
    wanted = {t: min(demand.get(t, 0.0), caps[t]) for t in caps}
    for t, n in split.items():
        assert 0 <= n <= caps[t]
    if amount >= sum(wanted.values()):
        assert all(split[t] >= wanted[t] for t in caps)  # every demanded unit is covered before any other
    else:
        assert all(split[t] <= wanted[t] for t in caps)  # nothing lands where there is no demand


@st.composite
def family_cases(draw: st.DrawFn) -> tuple[Snapshot, Policy]:
    """A cluster of p5-family types and teams with family caps and/or family guarantees (absolute or percent)."""
    nodes = {t: draw(st.integers(0, 3)) for t in (P5, P5E, P5EN)}
    nodes = {t: n for t, n in nodes.items() if n} or {P5: 1}
    teams = draw(st.lists(st.sampled_from(["ana", "bob", "cyd"]), min_size=1, max_size=3, unique=True))
    amounts = st.one_of(st.integers(0, 60), st.integers(0, 100).map(lambda p: f"{p}%"))
    team_policy: dict[str, dict[str, object]] = {}
    for team in teams:
        tp: dict[str, object] = {"weight": draw(st.integers(0, 3))}
        if draw(st.booleans()):
            tp["cap"] = {"ml.p5": draw(amounts)}
        if draw(st.booleans()):
            tp["guarantee"] = {"ml.p5": draw(st.integers(0, 16))}
        team_policy[team] = tp
    pending = {team: {t: draw(st.integers(0, 30)) for t in nodes} for team in teams}
    quotas = {team: {t: draw(st.integers(0, 8)) for t in nodes} for team in teams if draw(st.booleans())}
    try:
        pol = policy(team_policy)
    except ValueError:  # a guarantee above its cap: refused by the policy, not the planner's case
        pol = policy({t: {k: v for k, v in tp.items() if k != "guarantee"} for t, tp in team_policy.items()})
    return snapshot(nodes, pending=pending, quotas=quotas), pol


@properties(60)
@given(family_cases())
def test_planned_family_sums_stay_within_caps_and_capacity_and_replanning_changes_nothing(
        case: tuple[Snapshot, Policy]) -> None:
    snap, pol = case
    plan = make_plan(snap, pol, T0)
    healthy = snap.healthy_nodes()
    total = sum(8 * healthy[t] for t in (P5, P5E, P5EN))
    for t in (P5, P5E, P5EN):
        assert sum(a.get(t, {}).get("accelerators", 0) for a in plan.allocations.values()) <= 8 * healthy[t]
    for team, tp in pol.teams.items():
        cap = tp.cap.get("ml.p5")
        if cap is None:
            continue
        bound = math.floor(cap.resolve(total) + 1e-9)
        guarantee = tp.guarantee.get("ml.p5")
        floors = min(guarantee.resolve(total), total) if guarantee else 0
        held = sum(a["accelerators"] for a in plan.allocations.get(team, {}).values())
        assert held <= max(bound, floors)
    applied = apply_plan(snap, plan, T0)
    assert make_plan(applied, pol, T0).requests == ()
