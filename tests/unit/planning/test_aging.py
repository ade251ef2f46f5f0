"""Time-aware fairness (`fairness.age_doubling_hours`): the teams whose pending work waited longest are served
first; off by default."""

from __future__ import annotations

from datetime import timedelta

import pytest
from support.clusters import T0, policy, snapshot

from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Demand, Resources, Snapshot
from rebalancer.errors import InvalidInput
from rebalancer.parsing.validation import load_model
from rebalancer.planning.aging import aged_weights
from rebalancer.planning.planner import make_plan

P5 = "ml.p5.48xlarge"


def overloaded(waited: dict[str, float]) -> Snapshot:
    """Two teams wanting 64 GPUs each on 64; `waited`: hours their oldest pending work has waited."""
    snap = snapshot({P5: 8}, quotas={"a": {P5: 32}, "b": {P5: 32}},
                    pending={"a": {P5: 64}, "b": {P5: 64}}, taken_at=T0)
    demand = {t: {P5: Demand(pending=Resources(accelerators=64),
                             oldest_pending=T0 - timedelta(hours=h) if h else None)} for t, h in waited.items()}
    return snap.model_copy(update={"demand": demand})


def shares(snap: Snapshot, p: Policy) -> dict[str, float]:
    plan = make_plan(snap, p, T0)
    return {t: a[P5]["accelerators"] for t, a in plan.allocations.items()}


def test_the_team_whose_work_waited_longest_gets_more() -> None:
    aged = policy({"a": {}, "b": {}}, fairness={"age_doubling_hours": 24})
    # a's work waited 72 h (weight × 4), b's 0 h (× 1): 64 GPUs split 4 : 1
    assert shares(overloaded({"a": 72, "b": 0}), aged) == {"a": 51, "b": 13}


def test_off_by_default_ages_change_nothing() -> None:
    assert shares(overloaded({"a": 72, "b": 0}), policy({"a": {}, "b": {}})) == {"a": 32, "b": 32}


def test_equal_ages_are_plain_weighted_fair_share() -> None:
    aged = policy({"a": {"weight": 3}, "b": {}}, fairness={"age_doubling_hours": 24})
    assert shares(overloaded({"a": 10, "b": 10}), aged) == {"a": 48, "b": 16}


def test_the_reason_names_the_age_factor() -> None:
    aged = policy({"a": {}, "b": {}}, fairness={"age_doubling_hours": 24})
    plan = make_plan(overloaded({"a": 72, "b": 0}), aged, T0)
    reason = next(c.reason for c in plan.changes if c.team == "a")
    assert "weight 1 × 4.00: oldest pending work waited 72.0 h (doubles every 24 h)" in reason


def test_an_age_in_the_future_counts_as_zero() -> None:
    assert aged_weights((2.0, 1.0), (T0 + timedelta(hours=1), None), T0, 24) == ((2.0, 1.0), (None, None))


@pytest.mark.parametrize("value", [0, -1, "soon", float("inf")])
def test_an_invalid_doubling_time_names_the_field_and_value(value: object) -> None:
    with pytest.raises(InvalidInput) as e:
        load_model(Policy, {"teams": {"a": {}}, "fairness": {"age_doubling_hours": value}}, "policy.yaml")
    assert e.value.field == "fairness.age_doubling_hours"
    assert "policy.yaml" in str(e.value)


def test_an_unknown_fairness_field_is_refused() -> None:
    with pytest.raises(InvalidInput) as e:
        load_model(Policy, {"teams": {"a": {}}, "fairness": {"half_life_hours": 24}}, "policy.yaml")
    assert e.value.field == "fairness.half_life_hours"
