"""What the planner writes besides amounts: explicit vCPU / memory, sharing, fair-share weight, preemption, team
lifecycle (create, deactivate, re-enable), and console edits marked for approval."""

from __future__ import annotations

from typing import Any

import pytest
from support.clusters import T0, policy, quota, snapshot, validate

from rebalancer.errors import InvalidInput
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan

P5, TRN, C5 = "ml.p5.48xlarge", "ml.trn1.32xlarge", "ml.c5.xlarge"


def entry(params: dict[str, Any], instance_type: str) -> dict[str, Any]:
    return next(e for e in params["ComputeQuotaConfig"]["ComputeQuotaResources"] if e["InstanceType"] == instance_type)


def test_ratio_rule_by_default_leaves_vcpu_and_memory_out() -> None:
    snap = snapshot({P5: 2}, quotas={"a": {P5: 4}}, pending={"a": {P5: 12}})
    plan = make_plan(snap, policy({"a": {}}), T0)
    (req,) = plan.requests
    assert entry(req.parameters, P5) == {"InstanceType": P5, "Accelerators": 12}


def test_explicit_vcpu_absolute_and_memory_percent_are_written_with_the_accelerators() -> None:
    # 2 healthy p5 nodes: 384 vCPU and 4096 GiB in all; 25 % of the memory is 1024 GiB.
    snap = snapshot({P5: 2}, quotas={"a": {P5: 4}}, pending={"a": {P5: 12}})
    plan = make_plan(snap, policy({"a": {"vcpu": {P5: 100}, "memory_gib": {P5: "25%"}}}), T0)
    validate(plan)
    (req,) = plan.requests
    assert entry(req.parameters, P5) == {"InstanceType": P5, "Accelerators": 12, "VCpu": 100, "MemoryInGiB": 1024}


def test_explicit_vcpu_alone_is_a_setting_change_without_moving_accelerators() -> None:
    snap = snapshot({P5: 2}, quotas={"a": {P5: 8}}, in_use={"a": {P5: 8}})
    plan = make_plan(snap, policy({"a": {"vcpu": {P5: 96}}}), T0)
    assert not plan.changes
    (req,) = plan.requests
    assert entry(req.parameters, P5) == {"InstanceType": P5, "Accelerators": 8, "VCpu": 96}
    assert [(f.field, f.before, f.after) for f in plan.field_changes] == [
        (f"ComputeQuotaResources[{P5}].VCpu", None, 96)]


def test_cpu_only_types_are_allocated_in_vcpu_with_memory_following() -> None:
    snap = snapshot({C5: 4}, pending={"a": {C5: 6}})  # 16 vCPU, 2 GiB per vCPU
    plan = make_plan(snap, policy({"a": {}}), T0)
    (req,) = plan.requests
    assert entry(req.parameters, C5) == {"InstanceType": C5, "VCpu": 6.0, "MemoryInGiB": 12.0}


def test_explicit_amount_that_cannot_fit_on_the_type_is_refused() -> None:
    snap = snapshot({TRN: 1}, quotas={"a": {TRN: 8}}, pending={"a": {TRN: 16}})
    with pytest.raises(InvalidInput) as e:
        make_plan(snap, policy({"a": {"vcpu": {TRN: 200}}}), T0)
    assert "teams.a.vcpu.ml.trn1.32xlarge" in str(e.value)
    assert "200" in str(e.value)
    assert "128" in str(e.value)


SHARING = {"strategy": "LendAndBorrow", "borrow_limit": 120, "absolute_borrow_limits": {P5: 4, C5: 8}}


def test_sharing_fields_go_into_a_new_quota_exactly_as_the_api_takes_them() -> None:
    snap = snapshot({P5: 1, C5: 1})
    plan = make_plan(snap, policy({"a": {"sharing": SHARING, "fair_share_weight": 40,
                                         "preempt_team_tasks": "Never"}}), T0)
    validate(plan)
    (req,) = plan.requests
    assert req.operation == "CreateComputeQuota"
    assert req.parameters["ComputeQuotaConfig"] == {
        "ComputeQuotaResources": [],
        "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 120, "AbsoluteBorrowLimits": [
            {"InstanceType": C5, "VCpu": 8.0}, {"InstanceType": P5, "Accelerators": 4}]},
        "PreemptTeamTasks": "Never"}
    assert req.parameters["ComputeQuotaTarget"] == {"TeamName": "a", "FairShareWeight": 40}


def test_changed_sharing_is_rewritten_and_marked_as_a_possible_console_edit_needing_approval() -> None:
    snap = snapshot({P5: 1}, quotas={"a": {P5: 8}}, in_use={"a": {P5: 8}})
    plan = make_plan(snap, policy({"a": {"sharing": {"strategy": "Lend"}}}), T0)
    validate(plan)
    (req,) = plan.requests
    assert req.parameters["ComputeQuotaConfig"]["ResourceSharingConfig"] == {"Strategy": "Lend"}
    assert {(f.field, f.before, f.after) for f in plan.field_changes} == {
        ("ComputeQuotaConfig.ResourceSharingConfig.Strategy", "LendAndBorrow", "Lend"),
        ("ComputeQuotaConfig.ResourceSharingConfig.BorrowLimit", 50, None)}
    assert all(f.console_edit and f.reason == "console edit will be replaced" for f in plan.field_changes)
    assert plan.requires_approval
    assert any("console edit will be replaced: a" in r for r in plan.approval_reasons)


def test_known_version_tells_a_policy_change_from_a_console_edit() -> None:
    snap = snapshot({P5: 1}, quotas={"a": {P5: 8}}, in_use={"a": {P5: 8}})
    lend = policy({"a": {"sharing": {"strategy": "Lend"}}})
    # The quota is as we left it: the policy changed.
    ours = make_plan(snap, lend, T0, context=planning_context(snap, lend, known_versions={"a": 1}))
    assert ours.requests
    assert not ours.console_edits
    assert not ours.requires_approval
    # Someone wrote version 1 after us.
    edited = make_plan(snap, lend, T0, context=planning_context(snap, lend, known_versions={"a": 0}))
    assert edited.console_edits
    assert edited.requires_approval
    assert ("ComputeQuotaVersion", 0, 1) in {(f.field, f.before, f.after) for f in edited.field_changes}


def test_console_edit_approval_can_be_switched_off() -> None:
    snap = snapshot({P5: 1}, quotas={"a": {P5: 8}}, in_use={"a": {P5: 8}})
    plan = make_plan(snap, policy({"a": {"sharing": {"strategy": "Lend"}}}, approval={"console_edits": False}),
                     T0)
    assert plan.console_edits
    assert not plan.requires_approval


def test_in_sync_settings_write_nothing() -> None:
    snap = snapshot({P5: 1}, quotas={"a": {P5: 8}}, in_use={"a": {P5: 8}})
    same = {"sharing": {"strategy": "LendAndBorrow", "borrow_limit": 50}, "preempt_team_tasks": "LowerPriority",
            "fair_share_weight": 10}
    plan = make_plan(snap, policy({"a": same}), T0)
    assert plan.is_empty
    assert not plan.field_changes


def test_a_team_added_to_the_policy_gets_a_quota_even_without_demand() -> None:
    snap = snapshot({P5: 1}, quotas={"a": {P5: 8}}, in_use={"a": {P5: 8}})
    plan = make_plan(snap, policy({"a": {}, "new-team": {"weight": 2}}), T0)
    validate(plan)
    (req,) = plan.requests
    assert (req.operation, req.team) == ("CreateComputeQuota", "new-team")
    assert req.parameters["ComputeQuotaTarget"] == {"TeamName": "new-team", "FairShareWeight": 2}
    # Its name is permanent once created: an admin approves it (approval.new_teams, on by default).
    assert plan.approval_reasons == ("new team new-team: the plan creates its quota, and a quota's team name can "
                                     "never be changed; approval.new_teams is on",)
    off = make_plan(snap, policy({"a": {}, "new-team": {"weight": 2}}, approval={"new_teams": False}), T0)
    assert off.requests == plan.requests
    assert not off.requires_approval


def test_removed_team_is_deactivated_only_with_remove_true_and_its_share_freed() -> None:
    snap = snapshot({P5: 2}, quotas={"a": {P5: 8}, "gone": {P5: 8}}, pending={"a": {P5: 16}})
    kept = make_plan(snap, policy({"a": {}}), T0)
    assert all(r.team != "gone" for r in kept.requests)  # absent from the policy: left alone
    assert kept.allocations["a"][P5]["accelerators"] == 8
    removed = make_plan(snap, policy({"a": {}, "gone": {"remove": True}}), T0)
    validate(removed)
    first, second = removed.requests
    assert (first.team, first.parameters) == ("gone", {"ComputeQuotaId": "cq-gone", "TargetVersion": 1,
                                                        "ActivationState": "Disabled"})
    assert second.team == "a"
    assert entry(second.parameters, P5)["Accelerators"] == 16
    assert ("gone", "ActivationState", "Enabled", "Disabled") in {
        (f.team, f.field, f.before, f.after) for f in removed.field_changes}
    # Never a delete; and once disabled, nothing more is planned.
    assert all(r.operation != "DeleteComputeQuota" for r in removed.requests)


def test_a_deactivated_quota_holds_nothing_and_a_policy_team_gets_it_enabled_again() -> None:
    raw = quota("a", {P5: 8}, ActivationState="Disabled")
    snap = snapshot({P5: 1}, raw_quotas=[raw], pending={"a": {P5: 4}})
    plan = make_plan(snap, policy({"a": {}}), T0)
    validate(plan)
    (req,) = plan.requests
    assert req.parameters["ActivationState"] == "Enabled"
    assert req.parameters["ComputeQuotaConfig"]["ComputeQuotaResources"] == [{"InstanceType": P5, "Accelerators": 4}]
    disabled_and_removed = make_plan(snap, policy({"a": {"remove": True}}), T0)
    assert disabled_and_removed.is_empty


def test_the_rendered_plan_shows_a_console_edit_and_why_it_needs_approval() -> None:
    from rich.console import Console

    from rebalancer_tools.reports.render import render_plan

    snap = snapshot({P5: 1}, quotas={"a": {P5: 8}}, in_use={"a": {P5: 8}})
    console = Console(width=200, record=True)
    render_plan(make_plan(snap, policy({"a": {"preempt_team_tasks": "Never"}}), T0), console)
    text = console.export_text()
    assert "a: ComputeQuotaConfig.PreemptTeamTasks: LowerPriority → Never  (console edit will be replaced)" in text
    assert "needs approval" in text
