"""Invariants of the ordered change set, on random clusters."""

from __future__ import annotations

import random

from botocore.validate import ParamValidator
from hypothesis import given
from hypothesis import strategies as st
from support.clusters import T0, apply_plan, apply_request, quota_sum, snapshot
from support.props import properties

from rebalancer.catalog import specs as catalog
from rebalancer.domain.plan import Plan
from rebalancer.domain.policy import Policy
from rebalancer.domain.pools import PoolKey, held
from rebalancer.domain.snapshot import Snapshot
from rebalancer.planning.planner import make_plan
from rebalancer_tools.packaging.sdk_model import sagemaker_model

TYPES = ["ml.g5.12xlarge", "ml.p5.48xlarge", "ml.c5.4xlarge"]
TEAMS = ["ana", "bob", "cyd", "dee"]
SDK = sagemaker_model()


@st.composite
def cases(draw: st.DrawFn) -> tuple[Snapshot, Policy]:
    types = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True))
    nodes = {t: (draw(st.integers(0, 4)), draw(st.integers(0, 2))) for t in types}
    teams = draw(st.lists(st.sampled_from(TEAMS), min_size=1, max_size=4, unique=True))
    outsider = draw(st.booleans())
    per = {t: catalog.spec(t).primary_per_instance for t in types}
    amount = {t: st.integers(0, 3 * per[t]) for t in types}
    quotas = {team: {t: draw(amount[t]) for t in types if draw(st.booleans())}
              for team in [*teams, *(["legacy"] if outsider else [])] if draw(st.booleans())}
    pending = {team: {t: draw(amount[t]) for t in types} for team in teams}
    in_use = {team: {t: draw(st.integers(0, per[t])) for t in types} for team in teams}
    team_policy = {}
    for team in teams:
        tp: dict[str, object] = {"weight": draw(st.integers(0, 4)), "protected_in_use": draw(st.booleans())}
        if draw(st.booleans()):
            tp["guarantee"] = {t: draw(st.integers(0, per[t])) for t in types}
        if draw(st.booleans()):
            tp["cap"] = {t: draw(st.integers(per[t], 4 * per[t])) for t in types}
        team_policy[team] = tp
    pol = Policy.model_validate({
        "teams": team_policy, "surplus": draw(st.sampled_from(["idle", "spread"])),
        "stability": {"min_step": draw(st.integers(1, 3)), "cooldown_minutes": 0, "max_move": None},
    })
    return snapshot(nodes, quotas=quotas, pending=pending, in_use=in_use), pol


def capacity(snap: Snapshot, pool: str) -> float:
    key = PoolKey.parse(pool)
    return snap.healthy_nodes()[key.instance_type] * catalog.spec(key.instance_type).primary_per_instance


def outsiders_hold(snap: Snapshot, pol: Policy, pool: str) -> float:
    key = PoolKey.parse(pool)
    return sum(held(q, key) for q in snap.quotas if q.team not in pol.teams)


@properties(60)
@given(cases())
def test_a_pool_never_goes_above_capacity_at_any_step(case: tuple[Snapshot, Policy]) -> None:
    snap, pol = case
    plan = make_plan(snap, pol, T0)
    pools = sorted({str(PoolKey(instance_type=t)) for t in snap.instance_types()})
    limit = {p: max(capacity(snap, p), outsiders_hold(snap, pol, p)) for p in pools}
    s = snap
    for r in plan.requests:
        before = {p: quota_sum(s, p) for p in pools}
        s = apply_request(s, r, T0)
        for p in pools:
            # A step may lower a pool that is over capacity, and may raise one only within capacity.
            assert quota_sum(s, p) <= max(before[p], limit[p]) + 1e-9, (p, r)
    for p in pools:
        assert quota_sum(s, p) <= limit[p] + 1e-9


@properties(60)
@given(cases())
def test_every_request_validates_against_the_sdk_model(case: tuple[Snapshot, Policy]) -> None:
    snap, pol = case
    for r in make_plan(snap, pol, T0).requests:
        report = ParamValidator().validate(r.parameters, SDK.operation_model(r.operation).input_shape)
        assert not report.has_errors(), report.generate_report()


@properties(60)
@given(cases())
def test_planning_on_the_applied_result_changes_nothing(case: tuple[Snapshot, Policy]) -> None:
    snap, pol = case
    applied = apply_plan(snap, make_plan(snap, pol, T0), T0)
    assert make_plan(applied, pol, T0).requests == ()


@properties(40)
@given(cases(), st.randoms(use_true_random=False))
def test_plan_is_deterministic_whatever_the_order_of_quotas(case: tuple[Snapshot, Policy],
                                                              rnd: random.Random) -> None:
    snap, pol = case
    shuffled = list(snap.quotas)
    rnd.shuffle(shuffled)
    other = snap.model_copy(update={"quotas": tuple(shuffled)})
    assert make_plan(other, pol, T0) == make_plan(snap, pol, T0)


@properties(40)
@given(cases())
def test_a_plan_reads_back_from_its_json_as_the_same_plan(case: tuple[Snapshot, Policy]) -> None:
    # What is stored (DynamoDB, the approval link) is validated on the way back: it must be the plan that was made,
    # down to the types (an int where a float is declared compares equal, but comes back a float: see the repr).
    snap, pol = case
    plan = make_plan(snap, pol, T0)
    again = Plan.model_validate_json(plan.model_dump_json())
    assert again == plan
    assert repr(again) == repr(plan)
    # make_plan builds the plan without validating it again (Plan.model_construct): validating it gives it back.
    assert repr(Plan.model_validate(plan.model_dump())) == repr(plan)
