"""When an approved plan can no longer be written as it was made (rebalancer.planning.staleness), and when a plan
made again stays within the approval. Plans and bases come from the planner on small clusters."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from support.clusters import T0, policy, snapshot

from rebalancer.domain.basis import PlanBasis
from rebalancer.domain.plan import Change, FieldChange, Plan, QuotaRequest
from rebalancer.domain.snapshot import Snapshot
from rebalancer.planning.basis import basis_of
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan
from rebalancer.planning.staleness import beyond_approval, stale_reasons

P5 = "ml.p5.48xlarge"
HOUR = timedelta(hours=1)
POLICY = policy({"a": {"weight": 1}, "b": {"weight": 1}})


def cluster(healthy: int = 4, failed: int = 0, **changes: Any) -> Snapshot:
    """4 p5 nodes; a holds 24 and runs 8; b holds 8 and waits for 24 more."""
    args: dict[str, Any] = {"quotas": {"a": {P5: 24}, "b": {P5: 8}}, "in_use": {"a": {P5: 8}, "b": {P5: 8}},
                            "pending": {"b": {P5: 24}}}
    return snapshot({P5: (healthy, failed)}, **{**args, **changes})


def planned(snap: Snapshot) -> tuple[Plan, PlanBasis]:
    context = planning_context(snap, POLICY)
    return make_plan(snap, POLICY, T0, context=context), basis_of(snap, POLICY, context)


def test_a_plan_whose_cluster_did_not_move_holds_until_it_is_too_old() -> None:
    plan, then = planned(cluster())
    assert [(c.team, c.before, c.after) for c in plan.changes] == [("a", 24, 8), ("b", 8, 24)]
    _, now = planned(cluster())
    assert stale_reasons(then, now, plan, T0 + 59 * timedelta(minutes=1), HOUR) == ()
    assert stale_reasons(then, now, plan, T0 + 61 * timedelta(minutes=1), HOUR) == (
        "the plan is 61 min old, more than approval.max_plan_age_minutes (60)",)


def test_a_node_that_failed_makes_the_plan_stale_and_its_increase_no_longer_fit() -> None:
    plan, then = planned(cluster())
    _, now = planned(cluster(healthy=2, failed=2))  # 16 GPUs left
    assert stale_reasons(then, now, plan, T0, HOUR) == (
        f"the healthy capacity of {P5} fell from 32 to 16",
        f"the increases on {P5} no longer fit: its quotas would hold 32, it has 16 healthy")


def test_more_capacity_alone_does_not_make_a_plan_stale() -> None:
    plan, then = planned(cluster())
    _, now = planned(cluster(healthy=6))
    assert stale_reasons(then, now, plan, T0, HOUR) == ()


def test_a_quota_that_moved_appeared_or_went_is_named() -> None:
    plan, then = planned(cluster())
    moved = cluster(quotas={"a": {P5: 24}, "c": {P5: 0}})
    quotas = tuple(q.model_copy(update={"ComputeQuotaVersion": 3}) if q.team == "a" else q for q in moved.quotas)
    _, now = planned(moved.model_copy(update={"quotas": quotas}))
    reasons = stale_reasons(then, now, plan, T0, HOUR)
    assert "the quota of team a moved (version 1 → 3)" in reasons
    assert "the quota of team b is gone" in reasons
    assert "team c has a quota now (version 1) that the plan did not see" in reasons


def test_demand_that_fell_below_the_raise_makes_it_stale() -> None:
    plan, then = planned(cluster())
    _, now = planned(cluster(pending={"b": {P5: 4}}))
    assert stale_reasons(then, now, plan, T0, HOUR) == (
        f"b on {P5}: its demand fell from 32 to 12, below the 24 the plan raises it to",)


def test_a_scheduler_config_that_moved_is_named() -> None:
    plan, then = planned(cluster())
    now = then.model_copy(update={"scheduler_version": 4})
    assert stale_reasons(then, now, plan, T0, HOUR) == ("the scheduler config moved (version None → 4)",)


def change(team: str, before: float, after: float) -> Change:
    return Change(team=team, instance_type=P5, resource="accelerators", before=before, after=after, reason="r")


def plan_of(*changes: Change, **more: Any) -> Plan:
    return Plan(cluster_name="test", cluster_arn="arn", taken_at=T0, mode="approve", changes=changes,
                requires_approval=True, **more)


def test_a_plan_made_again_is_within_the_approval_only_when_nothing_is_new_larger_or_reversed() -> None:
    approved = plan_of(change("a", 24, 8), change("b", 8, 24))
    assert beyond_approval(approved, approved) == ()
    assert beyond_approval(approved, plan_of(change("a", 24, 16), change("b", 8, 16))) == ()
    assert beyond_approval(approved, plan_of(change("a", 20, 8))) == ()  # a console edit took 4 of the cut
    assert beyond_approval(approved, plan_of(change("a", 24, 4), change("b", 8, 28), change("c", 0, 4))) == (
        f"a {P5} accelerators 24→4: larger than the approved 24→8",
        f"b {P5} accelerators 8→28: larger than the approved 8→24",
        f"c {P5} accelerators 0→4: not in the approved plan")
    assert beyond_approval(approved, plan_of(change("b", 8, 4))) == (
        f"b {P5} accelerators 8→4: the other way from the approved 8→24",)


def test_a_new_setting_quota_or_scheduler_config_is_beyond_the_approval() -> None:
    approved = plan_of(change("a", 24, 8))
    edit = FieldChange(team="a", field="ComputeQuotaConfig.PreemptTeamTasks", before="Never",
                       after="LowerPriority", console_edit=True)
    create = QuotaRequest(operation="CreateComputeQuota", team="c", parameters={})
    assert beyond_approval(approved, plan_of(change("a", 24, 8), field_changes=(edit,), requests=(create,))) == (
        "a ComputeQuotaConfig.PreemptTeamTasks → 'LowerPriority': a setting not in the approved plan (it replaces a "
        "console edit)",
        "a new quota for team c: not in the approved plan")
    assert beyond_approval(plan_of(change("a", 24, 8), field_changes=(edit,)),
                           plan_of(field_changes=(edit,))) == ()
