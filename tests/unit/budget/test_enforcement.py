"""Budgets in the plan: an exhausted team is held at its guarantee or stops borrowing, every change of a team past
its first threshold says how much is used, and approval rules still apply."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from support.clock import T0
from support.clusters import policy, snapshot

from rebalancer.budgets.metering import Fact, Ledger, budgets_of
from rebalancer.domain.plan import Plan
from rebalancer.domain.policy import Policy
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan

P5 = "ml.p5.48xlarge"


# 32 GPUs; research holds 24 and wants 32, training holds 8 and wants 8.
WORLD = snapshot({P5: 4}, quotas={"research": {P5: 24}, "training": {P5: 8}},
                 in_use={"research": {P5: 24}, "training": {P5: 8}}, pending={"research": {P5: 8}})


def _plan(used_hours: float, pol: Policy) -> Plan:
    """The plan when research has used `used_hours` this period: one metered hour at that many accelerators."""
    hour = Fact(start=T0 - timedelta(hours=1), end=T0, at_start={"research": {P5: (used_hours, 0.0)}},
                at_end={"research": {P5: (used_hours, 0.0)}})
    context = planning_context(WORLD, pol, metered=Ledger.of([hour], budgets_of(pol), T0))
    return make_plan(WORLD, pol, T0, context=context)


def _policy(on_exhausted: str, **research: Any) -> Policy:
    sharing = {"sharing": {"strategy": "LendAndBorrow", "borrow_limit": 50}}
    return policy({"research": {"weight": 3, "guarantee": {P5: 8}, **sharing,
                                "budget": {"accelerator_hours": 1000, "on_exhausted": on_exhausted}, **research},
                   "training": {"weight": 1}})


def test_an_exhausted_team_is_held_at_its_guarantee_and_the_reason_says_so() -> None:
    plan = _plan(1040, _policy("guarantee_only"))
    [change] = [c for c in plan.changes if c.team == "research"]
    assert (change.before, change.after) == (24, 8)
    assert "budget 104 % used (1,040 of 1,000 accelerator-hours, 2026-11): quota held at its guarantee" in change.reason
    assert any("research: budget 104 %" in w for w in plan.warnings)


def test_below_the_budget_the_team_is_planned_as_usual_with_the_use_in_its_reasons() -> None:
    plan = _plan(920, _policy("guarantee_only"))
    research = {c.after for c in plan.changes if c.team == "research"}
    assert research != {8}
    assert all("budget 92 % used" in c.reason for c in plan.changes if c.team == "research")


def test_below_the_first_threshold_nothing_is_said() -> None:
    plan = _plan(100, _policy("guarantee_only"))
    assert not any("budget" in c.reason for c in plan.changes)
    assert not any("budget" in w for w in plan.warnings)


def test_no_borrowing_sets_lend_only_and_comes_back_with_the_policy_s_sharing() -> None:
    exhausted = _plan(1500, _policy("no_borrowing"))
    strategy = {f.field.rsplit(".", 1)[-1]: f for f in exhausted.field_changes if f.team == "research"}
    assert (strategy["Strategy"].before, strategy["Strategy"].after) == ("LendAndBorrow", "Lend")
    assert strategy["BorrowLimit"].after is None
    assert "no borrowing until the period ends" in strategy["Strategy"].reason
    fresh = _plan(0, _policy("no_borrowing"))
    assert not [f for f in fresh.field_changes if f.team == "research" and "ResourceSharingConfig" in f.field]


def test_notify_only_changes_nothing_but_the_reasons() -> None:
    quiet = _plan(0, _policy("notify"))
    loud = _plan(5000, _policy("notify"))
    assert [(c.team, c.after) for c in quiet.changes] == [(c.team, c.after) for c in loud.changes]
    assert quiet.requests == loud.requests


def test_approval_thresholds_still_apply_to_a_budget_cut() -> None:
    p = _policy("guarantee_only")
    p = p.model_copy(update={"approval": p.approval.model_copy(update={"moved_accelerators": 8})})
    plan = _plan(1040, p)
    assert plan.requires_approval
    assert any("moved" in r or "accelerators" in r for r in plan.approval_reasons)
