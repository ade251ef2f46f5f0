"""End to end, issue 7 through the deployed workflow: the real state machine on moto's interpreter, the project's
handlers in process, the HyperPod emulator. A console edit is planned as "console edit will be replaced" and waits
for approval; a policy change to a quota we wrote last is an ordinary change; the policy's `cluster:` section is
reconciled through Create/UpdateClusterSchedulerConfig (TargetVersion) and audited; a failed quota apply after the
scheduler config was written rolls the config back too."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin

import pytest
from support.approval_page import review_form
from support.clock import ticking
from support.emulator import EmulatorHandle, in_process_emulator
from support.events import load_event
from support.kube_api import pod_set, serve, workload

from rebalancer.app.notifications.messages import email_links
from rebalancer_tools.emulator import DEMO
from rebalancer_tools.emulator.resources import Kind
from rebalancer_tools.fakes.ticking_clock import TickingClock
from rebalancer_tools.local.stack import LocalStack, SlackReceiver

pytestmark = pytest.mark.slow  # each test deploys the stack and runs several executions on moto's interpreter

CLUSTER = DEMO.cluster_name
P5 = "ml.p5.48xlarge"
CONSOLE = "console edit will be replaced"

# Amounts held still (min_step above any move): these runs are about settings only.
SETTINGS = """
mode: auto
stability: {cooldown_minutes: 0, min_step: 1000}
teams:
  research: {weight: 3}
  training: {weight: 3, sharing: {strategy: LendAndBorrow, borrow_limit: BORROW}}
  inference: {weight: 2}
  data-science: {weight: 1}
  platform: {weight: 1}
"""
SCHEDULER = SETTINGS + """
cluster:
  priority_classes: [{name: inference, weight: 90}, {name: training, weight: 70}, {name: batch, weight: 20}]
  fair_share: Enabled
  idle_resource_sharing: IDLE
"""
# Amounts move (research waits for H100s), the scheduler config changes too, console edits need no approval.
MOVING = """
mode: auto
stability: {cooldown_minutes: 0, max_move: 64}
approval: {moved_accelerators: 1000, max_decrease_percent: 100, console_edits: false}
teams:
  research: {weight: 3, guarantee: {ml.p5.48xlarge: 4}}
  training: {weight: 3, guarantee: {ml.p5.48xlarge: 4}}
  inference: {weight: 2, guarantee: {ml.p5.48xlarge: 4}}
  data-science: {weight: 1}
  platform: {weight: 1}
cluster: {idle_resource_sharing: Disabled}
"""


@pytest.fixture
def clock() -> TickingClock:
    """The emulator's and the functions' clock, from the fixed start T0."""
    return ticking()


@pytest.fixture
def emu(clock: TickingClock) -> Iterator[EmulatorHandle]:
    with in_process_emulator(seed_demo=True, clock=clock) as handle:
        yield handle


@pytest.fixture
def stack(emu: EmulatorHandle, clock: TickingClock) -> Iterator[tuple[LocalStack, SlackReceiver, TickingClock]]:
    with serve() as (url, kube), SlackReceiver() as slack:
        kube.add(workload("research", "pretrain", [pod_set(3, {"nvidia.com/gpu": 8}, P5)]),
                 workload("training", "finetune", [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5))
        with LocalStack(clusters={CLUSTER: settings(50)}, kube_url=url, slack_webhook_url=slack.url,
                        now=clock) as s:
            yield s, slack, clock


def settings(borrow: int) -> str:
    return SETTINGS.replace("BORROW", str(borrow))


def scheduler_policy(idle: str) -> str:
    return SCHEDULER.replace("BORROW", "50").replace("IDLE", idle)


def run(stack: LocalStack, clock: TickingClock) -> tuple[str, dict[str, Any]]:
    """One run from a node event, in a fresh debounce window; waits unless it stops for an approval."""
    clock.advance(minutes=10)
    event = load_event("hyperpod-node-health")
    event["detail"]["ClusterName"] = CLUSTER
    assert stack.trigger(event)["status"] == "started"
    arn = stack.executions()[-1]
    return arn, stack.wait(arn)


def quota(emu: EmulatorHandle, team: str) -> dict[str, Any]:
    q: dict[str, Any] = emu.emulator.quota(f"{team}-quota", CLUSTER)
    return q


def scheduler_config(emu: EmulatorHandle) -> dict[str, Any] | None:
    sm = emu.sagemaker
    live = [s for s in sm.list_cluster_scheduler_configs(
        ClusterArn=emu.emulator.cluster_arn(CLUSTER))["ClusterSchedulerConfigSummaries"]
        if s["Status"] not in ("Deleting", "Deleted")]
    if not live:
        return None
    [summary] = live
    out: dict[str, Any] = sm.describe_cluster_scheduler_config(
        ClusterSchedulerConfigId=summary["ClusterSchedulerConfigId"])
    return out


def records(stack: LocalStack, execution_arn: str, kind: str) -> list[dict[str, Any]]:
    name = execution_arn.rsplit(":", 1)[-1]
    return [a for a in stack.audit(CLUSTER) if a["execution"] == name and a["kind"] == kind]


def console_edit_of_training(emu: EmulatorHandle) -> int:
    """An admin sets training to DontLend in the console (the whole quota config is sent, as the console does)."""
    config = dict(quota(emu, "training")["ComputeQuotaConfig"])
    config["ResourceSharingConfig"] = {"Strategy": "DontLend"}
    return int(emu.emulator.external_edit("training-quota", {"ComputeQuotaConfig": config}, cluster=CLUSTER))


def test_a_console_edit_waits_for_approval_then_is_replaced_and_a_later_policy_change_is_not_an_edit(
        emu: EmulatorHandle, stack: tuple[LocalStack, SlackReceiver, TickingClock]) -> None:
    s, slack, clock = stack
    arn, done = run(s, clock)
    assert (done["status"], s.states_entered(arn)[-1]) == ("SUCCEEDED", "NoChange")

    edited = console_edit_of_training(emu)
    arn, _ = run_until_approval(s, clock)
    [plan] = records(s, arn, "plan")
    assert plan["outcome"] == "approve"
    assert any(r.startswith(f"{CONSOLE}: training") for r in plan["detail"]["approval_reasons"])
    sharing = [f for f in plan["detail"]["field_changes"] if "ResourceSharingConfig" in f["field"]]
    assert sharing
    assert all(f["team"] == "training" and f["console_edit"] for f in sharing)
    assert quota(emu, "training")["ComputeQuotaVersion"] == edited  # nothing written while it waits

    s.wait_until(lambda: bool(slack.posts), timeout=10, what="the approval request on Slack")
    [request] = s.sns_messages()
    assert re.search(rf"^  - training ComputeQuotaConfig\.ResourceSharingConfig\S* .*\({CONSOLE}\)$",
                     request["Message"], flags=re.MULTILINE), request["Message"]
    slack_rows = [b["text"]["text"] for b in slack.posts[0]["blocks"] if b["type"] == "section"]
    assert any("`training` ComputeQuotaConfig.ResourceSharingConfig" in r and CONSOLE in r for r in slack_rows)
    approve = email_links(request["Message"])["Approve"]
    page = s.http("GET", approve)
    assert page["statusCode"] == 200
    assert "Console edit will be replaced:</strong> training ComputeQuotaConfig.ResourceSharingConfig" in page["body"]
    action, fields = review_form(page["body"])
    decided = s.http("POST", urljoin(approve, action), form={**fields, "decision": "approve", "name": "alice"})
    assert decided["statusCode"] == 200, decided["body"]
    assert s.wait(arn)["status"] == "SUCCEEDED"
    assert s.states_entered(arn)[-1] == "Applied"

    after = quota(emu, "training")
    assert after["ComputeQuotaConfig"]["ResourceSharingConfig"] == {"Strategy": "LendAndBorrow", "BorrowLimit": 50}
    assert after["ComputeQuotaVersion"] == edited + 1  # written with TargetVersion = the edited version
    [approval] = records(s, arn, "approval")
    assert (approval["outcome"], approval["who"]) == ("approved", "alice")
    [applied] = records(s, arn, "apply")
    assert applied["outcome"] == "applied"
    assert applied["detail"]["versions"] == {"training": after["ComputeQuotaVersion"]}
    assert any(f["console_edit"] for f in applied["detail"]["field_changes"])

    arn, done = run(s, clock)  # in sync again, and training is at the version our write left
    assert s.states_entered(arn)[-1] == "NoChange"

    s.put_policy(CLUSTER, settings(80))  # the policy changes a quota we wrote last: no console edit, no approval
    arn, done = run(s, clock)
    assert done["status"] == "SUCCEEDED"
    assert "RequestApproval" not in s.states_entered(arn)
    [plan] = records(s, arn, "plan")
    assert plan["outcome"] == "apply"
    assert {(f["console_edit"], f["reason"]) for f in plan["detail"]["field_changes"]} == {(False, "policy changed")}
    assert quota(emu, "training")["ComputeQuotaConfig"]["ResourceSharingConfig"]["BorrowLimit"] == 80


def run_until_approval(s: LocalStack, clock: TickingClock) -> tuple[str, None]:
    clock.advance(minutes=10)
    event = load_event("hyperpod-node-health")
    event["detail"]["ClusterName"] = CLUSTER
    assert s.trigger(event)["status"] == "started"
    arn = s.executions()[-1]
    s.wait_for_state(arn, "RequestApproval")
    return arn, None


def test_the_cluster_section_is_created_then_updated_with_target_version_and_audited(
        emu: EmulatorHandle, stack: tuple[LocalStack, SlackReceiver, TickingClock]) -> None:
    s, _slack, clock = stack
    seeded = scheduler_config(emu)
    assert seeded is not None
    emu.sagemaker.delete_cluster_scheduler_config(ClusterSchedulerConfigId=seeded["ClusterSchedulerConfigId"])
    emu.emulator.settle()
    assert scheduler_config(emu) is None

    s.put_policy(CLUSTER, scheduler_policy("Disabled"))
    arn, done = run(s, clock)
    assert done["status"] == "SUCCEEDED"
    assert s.states_entered(arn)[-7:] == ["Apply", "StartVerify", "Verify", "Verified", "Observe", "NotifyApplied",
                                          "Applied"]
    created = scheduler_config(emu)
    assert created is not None
    assert created["SchedulerConfig"] == {
        "PriorityClasses": [{"Name": "inference", "Weight": 90}, {"Name": "training", "Weight": 70},
                            {"Name": "batch", "Weight": 20}],
        "FairShare": "Enabled", "IdleResourceSharing": "Disabled"}
    [applied] = records(s, arn, "apply")
    assert applied["outcome"] == "applied"
    assert applied["detail"]["scheduler"].startswith("applied       CreateClusterSchedulerConfig")
    assert applied["detail"]["versions"] == {"(cluster)": created["ClusterSchedulerConfigVersion"]}

    s.put_policy(CLUSTER, scheduler_policy("Enabled"))  # a policy change on the config we wrote: no approval
    arn, done = run(s, clock)
    assert done["status"] == "SUCCEEDED"
    assert "RequestApproval" not in s.states_entered(arn)
    [plan] = records(s, arn, "plan")
    [request] = plan["detail"]["scheduler_requests"]
    assert request["operation"] == "UpdateClusterSchedulerConfig"
    assert request["parameters"]["TargetVersion"] == created["ClusterSchedulerConfigVersion"]
    updated = scheduler_config(emu)
    assert updated is not None
    assert updated["SchedulerConfig"]["IdleResourceSharing"] == "Enabled"
    assert updated["ClusterSchedulerConfigVersion"] == created["ClusterSchedulerConfigVersion"] + 1
    [applied] = records(s, arn, "apply")
    assert "UpdateClusterSchedulerConfig" in applied["detail"]["scheduler"]

    # Someone turns fair share off in the console: the next run shows it and waits for an admin.
    edited = emu.emulator.external_edit(updated["Name"], cluster=CLUSTER, kind=Kind.SCHEDULER_CONFIG)
    arn, _ = run_until_approval(s, clock)
    [plan] = records(s, arn, "plan")
    assert plan["outcome"] == "approve"
    assert any(r.startswith(f"{CONSOLE}: (cluster)") for r in plan["detail"]["approval_reasons"])
    [fair_share] = [f for f in plan["detail"]["field_changes"] if f["field"].endswith("FairShare")]
    assert (fair_share["before"], fair_share["after"], fair_share["console_edit"]) == ("Disabled", "Enabled", True)
    waiting = scheduler_config(emu)
    assert waiting is not None
    assert (waiting["ClusterSchedulerConfigVersion"], waiting["SchedulerConfig"]["FairShare"]) == (edited, "Disabled")


def test_a_failed_quota_apply_after_the_scheduler_config_was_written_restores_the_config_too(
        emu: EmulatorHandle, stack: tuple[LocalStack, SlackReceiver, TickingClock]) -> None:
    s, _slack, clock = stack
    before_config = scheduler_config(emu)
    assert before_config is not None
    assert before_config["SchedulerConfig"]["IdleResourceSharing"] == "Enabled"
    before_quotas = {t.name: quota(emu, t.name)["ComputeQuotaConfig"] for t in DEMO.teams}
    s.put_policy(CLUSTER, MOVING)
    emu.emulator.inject("update-failed", "UpdateComputeQuota", skip=2)

    arn, done = run(s, clock)
    assert (done["status"], done["error"]) == ("FAILED", "RebalanceRolledBack")
    assert s.states_entered(arn)[-4:] == ["Apply", "Rollback", "NotifyRolledBack", "RolledBack"]
    [plan] = records(s, arn, "plan")
    assert plan["detail"]["scheduler_requests"]
    assert plan["detail"]["changes"]
    [applied] = records(s, arn, "apply")
    assert applied["outcome"] == "failed"
    assert applied["detail"]["scheduler"].startswith("applied       UpdateClusterSchedulerConfig")

    after_config = scheduler_config(emu)
    assert after_config is not None
    assert after_config["SchedulerConfig"] == before_config["SchedulerConfig"]
    # Ours (+1) and the restore (+1), each with the version it read as TargetVersion.
    assert after_config["ClusterSchedulerConfigVersion"] == before_config["ClusterSchedulerConfigVersion"] + 2
    assert {t.name: quota(emu, t.name)["ComputeQuotaConfig"] for t in DEMO.teams} == before_quotas
    [rollback] = records(s, arn, "rollback")
    assert rollback["outcome"] == "restored"
    assert rollback["detail"]["scheduler"].startswith("applied       UpdateClusterSchedulerConfig")
    [sns] = s.sns_messages()
    assert sns["Subject"] == f"Rebalance of {CLUSTER} failed and was rolled back"


def test_a_scheduler_config_edited_between_plan_and_apply_stops_the_run_and_no_edit_is_overwritten(
        emu: EmulatorHandle, stack: tuple[LocalStack, SlackReceiver, TickingClock]) -> None:
    s, _slack, clock = stack
    config = scheduler_config(emu)
    assert config is not None
    s.put_policy(CLUSTER, MOVING)
    edits: dict[str, int] = {}

    def edit_after_plan(out: dict[str, Any]) -> dict[str, Any]:
        # Admins change the config and training's sharing while the run is between Plan and Apply.
        edits["config"] = emu.emulator.external_edit(config["Name"], cluster=CLUSTER, kind=Kind.SCHEDULER_CONFIG)
        edits["training"] = console_edit_of_training(emu)
        return out

    s.hooks["plan"] = edit_after_plan
    before = {t.name: quota(emu, t.name) for t in DEMO.teams}
    arn, done = run(s, clock)
    assert (done["status"], done["error"]) == ("FAILED", "RebalanceRolledBack")
    assert s.states_entered(arn)[-4:] == ["Apply", "Rollback", "NotifyRolledBack", "RolledBack"]
    [applied] = records(s, arn, "apply")
    assert applied["outcome"] == "failed"
    assert "changed by someone else" in applied["detail"]["error"]
    assert applied["detail"]["scheduler"].startswith("conflict")
    now = scheduler_config(emu)
    assert now is not None
    assert (now["ClusterSchedulerConfigVersion"], now["SchedulerConfig"]["FairShare"]) == (edits["config"],
                                                                                           "Disabled")
    training = quota(emu, "training")
    assert training["ComputeQuotaVersion"] == edits["training"]
    assert training["ComputeQuotaConfig"]["ResourceSharingConfig"] == {"Strategy": "DontLend"}
    assert {t: q for t, q in ((t.name, quota(emu, t.name)) for t in DEMO.teams) if t != "training"} == \
           {t: q for t, q in before.items() if t != "training"}
    [rollback] = records(s, arn, "rollback")
    assert rollback["outcome"] == "restored"
    assert "scheduler" not in rollback["detail"]  # nothing of ours to undo
