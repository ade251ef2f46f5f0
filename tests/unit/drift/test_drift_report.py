"""Drift between a policy and a snapshot, field by field, and the `rebalancer diff` exit status."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from support.clusters import quota, snapshot

from rebalancer.domain.policy import Policy
from rebalancer.domain.quotas import ClusterSchedulerConfig
from rebalancer_tools.cli import cli
from rebalancer_tools.reports.drift import find_drift

P5 = "ml.p5.48xlarge"
SYNCED = {"sharing": {"strategy": "LendAndBorrow", "borrow_limit": 50}, "preempt_team_tasks": "LowerPriority",
          "fair_share_weight": 10}


def policy(teams: dict[str, dict[str, object]], **rest: object) -> Policy:
    return Policy.model_validate({"teams": teams, **rest})


def test_in_sync_has_no_drift() -> None:
    snap = snapshot({P5: 2}, quotas={"a": {P5: 8}, "b": {P5: 8}})
    assert find_drift(snap, policy({"a": SYNCED, "b": {"guarantee": {P5: 8}}})) == []


def test_a_console_edit_of_borrow_limit_is_reported_field_by_field() -> None:
    edited = quota("a", {P5: 8}, version=4)
    edited["ComputeQuotaConfig"]["ResourceSharingConfig"]["BorrowLimit"] = 200
    snap = snapshot({P5: 1}, raw_quotas=[edited])
    (d,) = find_drift(snap, policy({"a": SYNCED}), known_versions={"a": 3})
    assert (d.subject, d.field, d.cluster, d.policy, d.console_edit) == (
        "a", "ComputeQuotaConfig.ResourceSharingConfig.BorrowLimit", 200, 50, True)
    assert "console edit" in d.line()
    (ours,) = find_drift(snap, policy({"a": SYNCED}), known_versions={"a": 4})
    assert not ours.console_edit


def test_lifecycle_cap_and_capacity_breaches_are_drift() -> None:
    snap = snapshot({P5: 2}, quotas={"a": {P5: 12}, "old": {P5: 8}})
    drift = find_drift(snap, policy({"a": {"cap": {P5: 8}}, "old": {"remove": True}, "new": {}}))
    found = {(d.subject, d.field) for d in drift}
    assert found == {("a", f"allocation of {P5}"), ("old", "ActivationState"), ("new", "ComputeQuota")}


def test_a_sum_above_a_family_cap_is_drift_and_one_type_above_its_share_is_not() -> None:
    p5en = "ml.p5en.48xlarge"
    snap = snapshot({P5: 2, p5en: 3}, quotas={"a": {P5: 0, p5en: 16}, "b": {P5: 8, p5en: 8}})
    pol = policy({"a": {**SYNCED, "cap": {"ml.p5": 16}}, "b": {**SYNCED, "cap": {"ml.p5": 12}}})
    (d,) = find_drift(snap, pol)
    assert (d.subject, d.field, d.cluster, d.policy) == ("b", "allocation of ml.p5", 16, "≤ family cap 12")
    assert f"the sum over {P5} 8, {p5en} 8" in d.note


def test_quotas_above_healthy_capacity_are_drift() -> None:
    snap = snapshot({P5: (1, 1)}, quotas={"a": {P5: 8}, "b": {P5: 8}})
    (d,) = find_drift(snap, policy({"a": {}, "b": {}}))
    assert (d.field, d.cluster) == (f"quotas of {P5}", 16)


def test_scheduler_config_drift() -> None:
    snap = snapshot({P5: 1}).model_copy(update={"scheduler_config": ClusterSchedulerConfig.model_validate({
        "ClusterSchedulerConfigId": "sc1", "Name": "s", "ClusterSchedulerConfigVersion": 2, "Status": "Created",
        "SchedulerConfig": {"PriorityClasses": [{"Name": "x", "Weight": 5}], "FairShare": "Enabled"}})})
    drift = find_drift(snap, policy({}, cluster={"fair_share": "Disabled", "idle_resource_sharing": "Enabled"}))
    assert {(d.subject, d.field, d.cluster, d.policy) for d in drift} == {
        ("(cluster)", "SchedulerConfig.FairShare", "Enabled", "Disabled"),
        ("(cluster)", "SchedulerConfig.IdleResourceSharing", None, "Enabled")}


def test_diff_command_exits_0_in_sync_and_3_drifted(tmp_path: Path) -> None:
    snap = snapshot({P5: 1}, quotas={"a": {P5: 8}})
    snap_file = tmp_path / "snap.json"
    snap_file.write_text(snap.model_dump_json())
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(json.dumps({"teams": {"a": SYNCED}}))
    bad.write_text(json.dumps({"teams": {"a": {**SYNCED, "preempt_team_tasks": "Never"}}}))
    runner = CliRunner()
    ok = runner.invoke(cli, ["diff", "--snapshot", str(snap_file), "--policy", str(good)])
    assert ok.exit_code == 0, ok.output
    assert "in sync" in ok.output
    drifted = runner.invoke(cli, ["diff", "--snapshot", str(snap_file), "--policy", str(bad), "--format", "json"])
    assert drifted.exit_code == 3, drifted.output
    out = json.loads(drifted.output)
    assert out["drift"] == [{"subject": "a", "field": "ComputeQuotaConfig.PreemptTeamTasks",
                             "cluster": "LowerPriority", "policy": "Never", "console_edit": True, "note": ""}]
    both = runner.invoke(cli, ["diff", "--policy", str(good)])
    assert both.exit_code == 2
    assert "--cluster" in both.output


def test_diff_known_versions_tell_a_policy_change_from_a_console_edit(tmp_path: Path) -> None:
    snap_file = tmp_path / "snap.json"
    snap_file.write_text(snapshot({P5: 1}, quotas={"a": {P5: 8}}).model_dump_json())
    policy_file = tmp_path / "p.json"
    policy_file.write_text(json.dumps({"teams": {"a": {**SYNCED, "preempt_team_tasks": "Never"}}}))
    versions = tmp_path / "v.json"
    versions.write_text(json.dumps({"a": 1}))
    base = ["diff", "--snapshot", str(snap_file), "--policy", str(policy_file)]
    ours = CliRunner().invoke(cli, [*base, "--known-versions", str(versions)])
    assert ours.exit_code == 3
    assert "[console edit]" not in ours.output
    assert "policy changed" in ours.output
    versions.write_text('{"a": "one"}')
    bad = CliRunner().invoke(cli, [*base, "--known-versions", str(versions)])
    assert bad.exit_code == 2
    assert "v.json" in bad.output
