"""Time-based fair share (`fairness.window_hours`): a team that received less than its weighted share of a pool
over the trailing window is weighted up until the window evens out, one that received more is weighted down;
guarantees and caps stay exact; off by default."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.clusters import T0, policy, snapshot
from support.props import properties

from rebalancer.domain.context import PlanningContext
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import InvalidInput
from rebalancer.parsing.validation import load_model
from rebalancer.planning import fair_share
from rebalancer.planning.fair_share import windowed_weights
from rebalancer.planning.planner import make_plan

P5 = "ml.p5.48xlarge"
WINDOWED = policy({"a": {}, "b": {}}, fairness={"window_hours": 168})


def overloaded() -> Snapshot:
    """Two teams wanting 64 GPUs each on 64."""
    return snapshot({P5: 8}, quotas={"a": {P5: 32}, "b": {P5: 32}}, pending={"a": {P5: 64}, "b": {P5: 64}})


def shares(p: Policy, received: dict[str, float], snap: Snapshot | None = None) -> dict[str, float]:
    context = PlanningContext(trailing_usage={t: {P5: h} for t, h in received.items()})
    plan = make_plan(snap or overloaded(), p, T0, context=context)
    return {t: a[P5]["accelerators"] for t, a in plan.allocations.items()}


def test_the_team_served_less_over_the_window_gets_more() -> None:
    # a received 1/4 of the week's hours against a 1/2 share: × 2^(1 − 0.5) = 1.41; b × 2^(1 − 1.5) = 0.71
    assert shares(WINDOWED, {"a": 1000, "b": 3000}) == {"a": 43, "b": 21}


def test_off_by_default_use_changes_nothing() -> None:
    assert shares(policy({"a": {}, "b": {}}), {"a": 1000, "b": 3000}) == {"a": 32, "b": 32}


def test_use_at_the_weighted_share_is_plain_weighted_fair_share() -> None:
    weighted = policy({"a": {"weight": 3}, "b": {}}, fairness={"window_hours": 168})
    assert shares(weighted, {"a": 3000, "b": 1000}) == {"a": 48, "b": 16}
    assert shares(weighted, {}) == {"a": 48, "b": 16}  # nothing used yet: weights as written


def test_guarantees_and_caps_bind_whatever_the_use() -> None:
    bounded = policy({"a": {"cap": {P5: 30}}, "b": {"guarantee": {P5: 30}}}, fairness={"window_hours": 168})
    # a favoured (× 2 against b's × 0.5): held at its cap, and b at no less than its guarantee
    assert shares(bounded, {"a": 0, "b": 10_000}) == {"a": 30, "b": 34}
    assert shares(bounded, {"a": 10_000, "b": 0}) == {"a": 13, "b": 51}  # 1 : 4 within them


def test_the_reason_names_the_factor_and_the_window() -> None:
    plan = make_plan(overloaded(), WINDOWED, T0, context=PlanningContext(trailing_usage={"a": {P5: 1000},
                                                                                         "b": {P5: 3000}}))
    reason = next(c.reason for c in plan.changes if c.team == "a")
    assert "weight 1 × 1.41: received 25% of this pool's accelerator-hours over the last 168 h against a 50% " \
           "share" in reason


def test_teams_without_weight_or_without_demand_and_use_do_not_count() -> None:
    # c (no demand, no use) and d (weight 0) change neither the shares nor the factors of a and b
    weights, notes = windowed_weights((1.0, 1.0, 1.0, 0.0), (8, 8, 0, 8), (100.0, 300.0, 0.0, 500.0), 168)
    assert weights[2:] == (1.0, 0.0)
    assert notes[2:] == (None, None)
    assert weights[:2] == windowed_weights((1.0, 1.0), (8, 8), (100.0, 300.0), 168)[0]


def test_the_factor_is_bounded() -> None:
    weights, _ = windowed_weights((1.0, 1.0), (8, 8), (0.0, 1000.0), 168)
    assert weights == (2.0, 0.5)  # the strength's own bound: 2^(1 − 0) and 2^(1 − 2)
    weights, _ = windowed_weights((1.0,) * 10, (8,) * 10, (0.0,) * 9 + (1000.0,), 168)
    assert weights[-1] == pytest.approx(1 / fair_share.BOUND)  # 2^(1 − 10) bounded to 1/8


@pytest.mark.parametrize("value", [0, -1, "week", float("inf"), 24 * 93])
def test_an_invalid_window_names_the_field_and_value(value: object) -> None:
    with pytest.raises(InvalidInput) as e:
        load_model(Policy, {"teams": {"a": {}}, "fairness": {"window_hours": value}}, "policy.yaml")
    assert e.value.field == "fairness.window_hours"
    assert "policy.yaml" in str(e.value)


# --- the invariants the water-fill keeps hold with any use over the window ---
TEAMS = ("ana", "bob", "cyd", "dee")


@st.composite
def cases(draw: st.DrawFn) -> tuple[Snapshot, Policy, PlanningContext, int]:
    nodes = draw(st.integers(0, 8))
    teams = draw(st.lists(st.sampled_from(TEAMS), min_size=1, max_size=4, unique=True))
    spec: dict[str, dict[str, object]] = {}
    for t in teams:
        spec[t] = {"weight": draw(st.integers(0, 4))}
        floor = draw(st.integers(0, 16))
        if draw(st.booleans()):
            spec[t]["guarantee"] = {P5: floor}
        if draw(st.booleans()):
            spec[t]["cap"] = {P5: draw(st.integers(floor, 64))}
    form = draw(st.sampled_from([{}, {"window_form": "kai", "window_k": draw(st.sampled_from([0.0, 1.0, 3.0]))}]))
    pol = Policy.model_validate({"teams": spec, "fairness": {"window_hours": draw(st.sampled_from([24, 168])), **form},
                                 "surplus": draw(st.sampled_from(["idle", "spread"])),
                                 "stability": {"cooldown_minutes": 0, "max_move": None}})
    snap = snapshot({P5: nodes}, quotas={t: {P5: draw(st.integers(0, 16))} for t in teams if draw(st.booleans())},
                    pending={t: {P5: draw(st.integers(0, 64))} for t in teams})
    used = {t: {P5: draw(st.floats(0, 1e4, allow_nan=False))} for t in teams if draw(st.booleans())}
    return snap, pol, PlanningContext(trailing_usage=used), nodes * 8


@properties(80)
@given(cases())
def test_guarantees_caps_and_capacity_hold_and_the_plan_is_deterministic(
        case: tuple[Snapshot, Policy, PlanningContext, int]) -> None:
    snap, pol, context, capacity = case
    plan = make_plan(snap, pol, T0, context=context)
    got = {t: plan.allocations.get(t, {}).get(P5, {}).get("accelerators", 0.0) for t in pol.teams}
    assert sum(got.values()) <= capacity + 1e-9
    guarantees = {t: tp.guarantee[P5].value if tp.guarantee and P5 in tp.guarantee else 0.0
                  for t, tp in pol.teams.items()}
    fits = sum(guarantees.values()) <= capacity
    for t, tp in pol.teams.items():
        if tp.cap and P5 in tp.cap:
            assert got[t] <= tp.cap[P5].value + 1e-9
        if fits:
            assert got[t] >= guarantees[t] - 1e-9
    assert make_plan(snap, pol, T0, context=context) == plan


@properties(80)
@given(st.lists(st.tuples(st.floats(0.1, 5), st.floats(0, 1e4, allow_nan=False)), min_size=1, max_size=6),
       st.sampled_from([{}, {"form": "kai", "k": 1.0, "capacity": 64.0}, {"form": "kai", "k": 4.0, "capacity": 8.0}]))
def test_the_factors_order_teams_by_use_against_share(rows: list[tuple[float, float]], form: dict[str, Any]) -> None:
    weights, received = [w for w, _ in rows], [r for _, r in rows]
    out, _ = windowed_weights(weights, [1.0] * len(rows), received, 168, **form)
    assert all(o > 0 for o in out)
    if sum(received) > 0:
        ratio = [r / w for w, r in zip(weights, received, strict=True)]  # use per unit of weight
        for i in range(len(rows)):
            for j in range(len(rows)):
                if ratio[i] < ratio[j]:
                    assert out[i] / weights[i] >= out[j] / weights[j] - 1e-12


def test_without_metered_use_the_window_changes_nothing() -> None:
    # `rebalancer plan` on a snapshot file has no metering table: the plan is the instantaneous share's
    snap = overloaded()
    assert make_plan(snap, WINDOWED, T0).allocations == make_plan(snap, policy({"a": {}, "b": {}}), T0).allocations


# --- KAI's form: P = max(s + k·(s − U), 0), normalised; U the hours received ÷ the pool's hours over the window ---
KAI = {"form": "kai", "capacity": 64.0}
POOL_HOURS = 64.0 * 168


def test_kai_form_a_starved_team_reaches_one_plus_k() -> None:
    # seven teams took the whole pool evenly, one received nothing: P = (1 + k)/8 for it, 1/8 − k/56 for each of
    # the others (U = 1/7), which sum to 1 already; the exponential form's reach is 2^(1 − 0) against 2^(1 − 8/7)
    received = [0.0] + [POOL_HOURS / 7] * 7
    for k in (1.0, 2.0, 3.0):
        weights, _ = windowed_weights([1.0] * 8, [8.0] * 8, received, 168, k=k, **KAI)
        assert weights[0] == pytest.approx(1 + k)
        assert weights[1] == pytest.approx(1 - k / 7)
    exponential, _ = windowed_weights([1.0] * 8, [8.0] * 8, received, 168)
    assert exponential[0] == 2.0
    assert exponential[0] / exponential[1] == pytest.approx(2 / 2 ** (1 - 8 / 7))  # 2.21


def test_kai_form_with_k_zero_or_at_the_shares_changes_nothing() -> None:
    assert windowed_weights([1.0, 3.0], [8, 8], [500.0, 9000.0], 168, k=0.0, **KAI)[0] == pytest.approx((1.0, 3.0))
    at_share = [POOL_HOURS / 4, 3 * POOL_HOURS / 4]
    assert windowed_weights([1.0, 3.0], [8, 8], at_share, 168, k=2.0, **KAI)[0] == pytest.approx((1.0, 3.0))


def test_kai_form_does_not_penalise_use_of_capacity_nobody_else_wanted() -> None:
    # a used a tenth of the pool's hours while b wanted nothing: against the hours received a had all of them
    # (the exponential form halves its weight), against the pool's hours only a tenth
    exponential, _ = windowed_weights([1.0, 1.0], [8, 8], [POOL_HOURS / 10, 0.0], 168)
    kai, _ = windowed_weights([1.0, 1.0], [8, 8], [POOL_HOURS / 10, 0.0], 168, k=1.0, **KAI)
    assert exponential == (0.5, 2.0)
    assert kai == pytest.approx((0.9 / 1.9 * 2, 1.0 / 1.9 * 2))


def test_kai_form_floors_at_the_bound_and_needs_the_pool_size() -> None:
    weights, notes = windowed_weights([1.0, 1.0], [8, 8], [0.0, POOL_HOURS], 168, k=3.0, **KAI)
    assert weights == (2.0, pytest.approx(1 / fair_share.BOUND))  # b's P is max(0.5 − 1.5, 0) = 0, floored
    assert "× 0.12" in (notes[1] or "")
    assert windowed_weights([1.0, 1.0], [8, 8], [0.0, 100.0], 168, form="kai", k=1.0)[0] == (1.0, 1.0)


def test_the_policy_picks_the_form() -> None:
    kai = policy({"a": {}, "b": {}}, fairness={"window_hours": 168, "window_form": "kai", "window_k": 2})
    # the pool is 64 GPUs over 168 h; a received 1/4 of its hours, b 3/4: P = 0.5 ± 2·0.25 → 1 : 0, so × 2 and
    # × 1/8 (the floor): 64 · 2/2.125 and 64 · 0.125/2.125
    assert shares(kai, {"a": POOL_HOURS / 4, "b": 3 * POOL_HOURS / 4}) == {"a": 60, "b": 4}
    assert shares(WINDOWED, {"a": POOL_HOURS / 4, "b": 3 * POOL_HOURS / 4}) == {"a": 43, "b": 21}


@pytest.mark.parametrize(("field", "value"), [("window_form", "slurm"), ("window_k", -1), ("window_k", 101)])
def test_an_invalid_form_or_k_names_the_field_and_value(field: str, value: object) -> None:
    with pytest.raises(InvalidInput) as e:
        load_model(Policy, {"teams": {"a": {}}, "fairness": {"window_hours": 168, field: value}}, "policy.yaml")
    assert e.value.field == f"fairness.{field}"
