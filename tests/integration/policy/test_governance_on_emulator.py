"""The task-governance policy against the HyperPod emulator over HTTP: sharing settings and explicit vCPU / memory
round-trip through Describe, the scheduler config is reconciled with TargetVersion, a removed team is
deactivated only with `remove: true`, and `rebalancer diff` sees a console edit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.emulator import EmulatorHandle, demo_emulator, http_emulator_server

from rebalancer.adapters.sagemaker.cluster import SageMakerReader
from rebalancer.adapters.sagemaker.quota_writer import Poller, QuotaWriter
from rebalancer.adapters.sagemaker.scheduler_config import SchedulerConfigClient
from rebalancer.domain.plan import CLUSTER, Plan
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import ConflictError
from rebalancer.planning.planner import make_plan
from rebalancer_tools.cli import cli
from rebalancer_tools.emulator import DEMO
from rebalancer_tools.emulator.resources import Kind
from rebalancer_tools.reports.drift import find_drift

__all__ = ["demo_emulator", "http_emulator_server"]

P5, TRN1, G5 = "ml.p5.48xlarge", "ml.trn1.32xlarge", "ml.g5.12xlarge"
# The demo's settings, as a policy: in sync with the seeded cluster. min_step keeps every amount where it is.
DEMO_TEAMS: dict[str, dict[str, Any]] = {
    t.name: {"sharing": {"strategy": "LendAndBorrow", "borrow_limit": 50}, "preempt_team_tasks": "LowerPriority",
             "fair_share_weight": t.weight} for t in DEMO.teams}
HOLD = {"stability": {"min_step": 1000, "cooldown_minutes": 0}}


def policy(teams: dict[str, dict[str, Any]], **rest: Any) -> Policy:
    return Policy.model_validate({**HOLD, "teams": teams, **rest})


def read(emu: EmulatorHandle, cluster: str = DEMO.cluster_name) -> Snapshot:
    sm = emu.client()
    reader = SageMakerReader(sm)
    c = reader.cluster(cluster)
    return Snapshot(taken_at="2026-11-30T12:00:00Z", cluster=c, nodes=reader.nodes(cluster),
                    quotas=reader.quotas(c.ClusterArn), scheduler_config=SchedulerConfigClient(sm).read(c.ClusterArn))


def apply(emu: EmulatorHandle, plan: Plan, snap: Snapshot) -> None:
    no_wait = Poller(sleep=lambda _: None, interval=0, timeout=5)
    for r in plan.scheduler_requests:
        SchedulerConfigClient(emu.client(), no_wait).apply(r)
    report = QuotaWriter(emu.client(), no_wait).apply(snap.cluster.ClusterArn, plan.requests, snap.quotas)
    assert report.succeeded, report.lines()


SHARING = {"strategy": "LendAndBorrow", "borrow_limit": 150, "absolute_borrow_limits": {P5: 8, G5: 2}}


def test_every_sharing_field_and_explicit_vcpu_memory_round_trip_through_describe(
        demo_emulator: EmulatorHandle) -> None:
    teams = {**DEMO_TEAMS,
             "research": {"sharing": SHARING, "fair_share_weight": 35, "preempt_team_tasks": "Never",
                          "vcpu": {P5: 100}, "memory_gib": {P5: "10%"}},
             "newcomers": {"sharing": {"strategy": "DontLend"}, "fair_share_weight": 5}}
    want = policy(teams)
    snap = read(demo_emulator)
    plan = make_plan(snap, want, snap.taken_at)
    assert not plan.changes  # only settings move
    apply(demo_emulator, plan, snap)

    after = read(demo_emulator)
    research = next(q for q in after.quotas if q.team == "research").to_api()
    assert research["ComputeQuotaConfig"]["ResourceSharingConfig"] == {
        "Strategy": "LendAndBorrow", "BorrowLimit": 150, "AbsoluteBorrowLimits": [
            {"InstanceType": G5, "Accelerators": 2}, {"InstanceType": P5, "Accelerators": 8}]}
    assert research["ComputeQuotaConfig"]["PreemptTeamTasks"] == "Never"
    assert research["ComputeQuotaTarget"] == {"TeamName": "research", "FairShareWeight": 35}
    p5 = next(e for e in research["ComputeQuotaConfig"]["ComputeQuotaResources"] if e["InstanceType"] == P5)
    assert p5 == {"InstanceType": P5, "Accelerators": 12, "VCpu": 100, "MemoryInGiB": 819.2}  # 10 % of 4 × 2048
    newcomers = next(q for q in after.quotas if q.team == "newcomers").to_api()
    assert newcomers["ComputeQuotaConfig"]["ResourceSharingConfig"] == {"Strategy": "DontLend"}
    assert newcomers["ComputeQuotaTarget"] == {"TeamName": "newcomers", "FairShareWeight": 5}
    # Read back, the cluster is what the policy says: no drift, nothing more to write.
    assert find_drift(after, want) == []
    assert make_plan(after, want, after.taken_at).is_empty


PRIORITIES = [{"name": "critical", "weight": 100}, {"name": "training", "weight": 60}]


def test_cluster_policy_is_reconciled_with_target_version(demo_emulator: EmulatorHandle) -> None:
    want = policy(DEMO_TEAMS, cluster={"priority_classes": PRIORITIES, "fair_share": "Disabled"})
    snap = read(demo_emulator)
    plan = make_plan(snap, want, snap.taken_at)
    (request,) = plan.scheduler_requests
    assert request.operation == "UpdateClusterSchedulerConfig"
    assert request.parameters["TargetVersion"] == 1
    apply(demo_emulator, plan, snap)

    config = read(demo_emulator).scheduler_config
    assert config is not None
    assert config.ClusterSchedulerConfigVersion == 2
    assert config.SchedulerConfig == {"PriorityClasses": [{"Name": "critical", "Weight": 100},
                                                          {"Name": "training", "Weight": 60}],
                                      "FairShare": "Disabled", "IdleResourceSharing": "Enabled"}
    assert find_drift(read(demo_emulator), want) == []

    # An admin flips FairShare in the console: drift names it as a console edit, and the stale request is refused.
    demo_emulator.emulator.external_edit(DEMO.scheduler_config_name, kind=Kind.SCHEDULER_CONFIG)
    (d,) = find_drift(read(demo_emulator), want, known_versions={CLUSTER: 2})
    assert (d.field, d.cluster, d.policy, d.console_edit) == ("SchedulerConfig.FairShare", "Enabled", "Disabled",
                                                              True)
    stale = request.model_copy(update={"parameters": {**request.parameters, "TargetVersion": 2}})
    with pytest.raises(ConflictError, match="we read version 2, it is now version 3"):
        SchedulerConfigClient(demo_emulator.client()).apply(stale)


def test_a_cluster_without_scheduler_config_gets_one_created(http_emulator_server: EmulatorHandle) -> None:
    http_emulator_server.emulator.create_cluster("bare", [("gpu", P5, 1)])
    want = policy({}, cluster={"priority_classes": PRIORITIES, "idle_resource_sharing": "Disabled"})
    snap = read(http_emulator_server, "bare")
    assert snap.scheduler_config is None
    plan = make_plan(snap, want, snap.taken_at)
    assert [r.operation for r in plan.scheduler_requests] == ["CreateClusterSchedulerConfig"]
    apply(http_emulator_server, plan, snap)
    after = read(http_emulator_server, "bare")
    assert after.scheduler_config is not None
    assert after.scheduler_config.SchedulerConfig["IdleResourceSharing"] == "Disabled"
    assert find_drift(after, want) == []


def test_removed_team_is_deactivated_only_with_remove_true(demo_emulator: EmulatorHandle) -> None:
    absent = {k: v for k, v in DEMO_TEAMS.items() if k != "platform"}
    snap = read(demo_emulator)
    left_alone = make_plan(snap, policy(absent), snap.taken_at)
    assert all(r.team != "platform" for r in left_alone.requests)

    plan = make_plan(snap, policy({**absent, "platform": {"remove": True}}), snap.taken_at)
    apply(demo_emulator, plan, snap)
    platform = next(q for q in read(demo_emulator).quotas if q.team == "platform")
    assert platform.ActivationState == "Disabled"  # still there: deactivated, never deleted
    assert platform.ComputeQuotaConfig.ComputeQuotaResources  # its entries are kept for a later re-enable
    assert not demo_emulator.emulator.monitor.violations(api_only=True)


def test_diff_command_sees_a_console_edit_over_http(demo_emulator: EmulatorHandle, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    assert demo_emulator.endpoint is not None
    monkeypatch.setenv("AWS_ENDPOINT_URL", demo_emulator.endpoint)
    policy_file = tmp_path / "policy.json"
    policy_file.write_text(json.dumps({"teams": DEMO_TEAMS}))
    args = ["diff", "--cluster", DEMO.cluster_name, "--policy", str(policy_file), "--region", "us-east-1"]
    runner = CliRunner()
    synced = runner.invoke(cli, args)
    assert synced.exit_code == 0, synced.output

    edit = {"ComputeQuotaConfig": {"ComputeQuotaResources": [{"InstanceType": P5, "Accelerators": 12},
                                                             {"InstanceType": TRN1, "Accelerators": 8}],
                                   "ResourceSharingConfig": {"Strategy": "Lend"},
                                   "PreemptTeamTasks": "LowerPriority"}}
    demo_emulator.emulator.external_edit("research-quota", edit)
    drifted = runner.invoke(cli, args)
    assert drifted.exit_code == 3, drifted.output
    assert "research: ComputeQuotaConfig.ResourceSharingConfig.Strategy: cluster Lend ≠ policy LendAndBorrow " \
           "[console edit]" in drifted.output
    assert "research: ComputeQuotaConfig.ResourceSharingConfig.BorrowLimit: cluster (absent) ≠ policy 50" \
           in drifted.output


def test_apply_command_reconciles_the_scheduler_config_then_the_quotas(
        demo_emulator: EmulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert demo_emulator.endpoint is not None
    monkeypatch.setenv("AWS_ENDPOINT_URL", demo_emulator.endpoint)
    policy_file = tmp_path / "policy.json"
    teams = {**DEMO_TEAMS, "research": {**DEMO_TEAMS["research"], "preempt_team_tasks": "Never"}}
    policy_file.write_text(json.dumps({**HOLD, "teams": teams, "cluster": {"fair_share": "Disabled"}}))
    unchanged = read(demo_emulator)
    result = CliRunner().invoke(cli, ["apply", "--cluster", DEMO.cluster_name, "--policy", str(policy_file),
                                      "--region", "us-east-1", "--no-kube", "--metrics-window", "0", "--yes",
                                      "--poll-interval", "0.1"])
    # Without the audit table every rewritten setting may be a console edit, which needs approval: --yes is not one.
    assert result.exit_code == 1, result.output
    assert "error: the plan needs approval (console edit will be replaced" in result.stderr
    assert read(demo_emulator).scheduler_config == unchanged.scheduler_config
    result = CliRunner().invoke(cli, ["apply", "--cluster", DEMO.cluster_name, "--policy", str(policy_file),
                                      "--region", "us-east-1", "--no-kube", "--metrics-window", "0", "--yes",
                                      "--poll-interval", "0.1", "--approve", "fair share off for the launch"])
    assert result.exit_code == 0, result.output
    # The workflow's outcome lines (rebalancer.app.workflow.runs): the scheduler config first, then the quota.
    lines = result.stdout.splitlines()
    scheduler = next(i for i, line in enumerate(lines) if "UpdateClusterSchedulerConfig scheduler config" in line)
    assert lines[scheduler].startswith("applied ")
    assert scheduler < next(i for i, line in enumerate(lines) if "UpdateComputeQuota research" in line)
    after = read(demo_emulator)
    assert after.scheduler_config is not None
    assert after.scheduler_config.SchedulerConfig["FairShare"] == "Disabled"
    assert next(q for q in after.quotas if q.team == "research").ComputeQuotaConfig.PreemptTeamTasks == "Never"
    rerun = CliRunner().invoke(cli, ["diff", "--cluster", DEMO.cluster_name, "--policy", str(policy_file),
                                     "--region", "us-east-1"])
    assert rerun.exit_code == 0, rerun.output


def test_capacity_freed_by_a_deactivation_is_handed_out_after_it(demo_emulator: EmulatorHandle) -> None:
    # trn1: 32 devices held research 8, training 16, platform 8. Removing platform lets research's guarantee rise
    # to 16; the deactivation is written first, so the monitor never sees the sum above capacity.
    teams = {k: v for k, v in DEMO_TEAMS.items() if k != "platform"}
    teams["research"] = {**teams["research"], "guarantee": {TRN1: 16}}
    want = Policy.model_validate({"teams": {**teams, "platform": {"remove": True}},
                                  "stability": {"cooldown_minutes": 0, "max_move": None}})
    snap = read(demo_emulator)
    plan = make_plan(snap, want, snap.taken_at)
    disable = next(i for i, r in enumerate(plan.requests) if r.parameters.get("ActivationState") == "Disabled")
    grow = next(i for i, r in enumerate(plan.requests) if r.team == "research" and r.parameters["TargetVersion"] == 2)
    assert disable < grow
    apply(demo_emulator, plan, snap)
    after = read(demo_emulator)
    research = next(q for q in after.quotas if q.team == "research")
    assert research.resource(TRN1) is not None
    assert research.resource(TRN1).Accelerators == 16  # type: ignore[union-attr]
    assert not demo_emulator.emulator.monitor.violations(api_only=True)
