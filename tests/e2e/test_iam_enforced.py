"""IAM enforced end to end: every handler runs with the credentials of a role holding exactly its policy from
template.yaml, and the emulator authorizes each request on the resource ARNs AWS would check
(rebalancer_tools.iam.enforce). A run still works (tests/e2e/test_rebalance_flow.py checks every request of its
auto-applied run against its role); a policy missing one action fails the run with one line that says which action
on which resource; a run that created a quota and then failed deletes it in rollback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.approval_stack import POLICY as APPROVE
from support.emulator import EmulatorHandle, in_process_emulator
from support.events import load_event
from support.kube_api import KubeState, pod_set, serve, workload

from rebalancer_tools.emulator import DEMO
from rebalancer_tools.local.stack import LocalStack

pytestmark = pytest.mark.slow

CLUSTER = DEMO.cluster_name
P5 = "ml.p5.48xlarge"
AUTO = APPROVE.replace("mode: approve", "mode: auto")
# A team the policy names that has no quota yet: the run creates one.
# A team created without an admin (approval.new_teams off): these tests are about the rollback's permissions.
WITH_NEW_TEAM = AUTO.replace("max_decrease_percent: 100}", "max_decrease_percent: 100, new_teams: false}") \
    + "  newteam: {weight: 1, guarantee: {ml.g5.12xlarge: 4}}\n"


@pytest.fixture
def world() -> Iterator[tuple[EmulatorHandle, KubeState, str]]:
    with in_process_emulator(seed_demo=True) as emu, serve() as (url, kube):
        kube.add(workload("research", "pretrain", [pod_set(3, {"nvidia.com/gpu": 8}, P5)]),
                 workload("training", "finetune", [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5))
        yield emu, kube, url


def run(stack: LocalStack) -> tuple[str, dict[str, object]]:
    event = load_event("hyperpod-node-health")
    event["detail"]["ClusterName"] = CLUSTER
    assert stack.trigger(event)["status"] == "started"
    arn = stack.executions()[-1]
    return arn, stack.wait(arn)


def quota_names(emu: EmulatorHandle) -> set[str]:
    summaries = emu.sagemaker.list_compute_quotas(ClusterArn=emu.emulator.cluster_arn(CLUSTER))
    return {s["Name"] for s in summaries["ComputeQuotaSummaries"] if s["Status"] not in ("Deleting", "Deleted")}


def test_a_policy_without_one_needed_action_fails_the_run_with_one_access_denied_line(world: tuple) -> None:
    emu, _kube, url = world
    before = {s["ComputeQuotaId"]: s["ComputeQuotaVersion"] for s in emu.sagemaker.list_compute_quotas(
        ClusterArn=emu.emulator.cluster_arn(CLUSTER))["ComputeQuotaSummaries"]}
    with LocalStack(clusters={CLUSTER: AUTO}, kube_url=url,
                    revoke={"apply": {"sagemaker:UpdateComputeQuota"}}) as stack:
        _arn, done = run(stack)
        assert done["status"] == "FAILED"
        [sns] = stack.sns_messages()
        lines = [line for line in sns["Message"].splitlines() if "AccessDenied" in line]
        assert len(lines) == 1, sns["Message"]
        assert "is not authorized to perform: sagemaker:UpdateComputeQuota on resource: arn:aws:sagemaker:" \
               "us-east-1:123456789012:compute-quota/" in lines[0]
        assert next(d for d in stack.iam.decisions if not d.allowed).action == "sagemaker:UpdateComputeQuota"
    after = {s["ComputeQuotaId"]: s["ComputeQuotaVersion"] for s in emu.sagemaker.list_compute_quotas(
        ClusterArn=emu.emulator.cluster_arn(CLUSTER))["ComputeQuotaSummaries"]}
    assert after == before  # denied before anything was written


def test_a_quota_created_by_a_failed_run_is_deleted_by_rollback_under_its_role(world: tuple) -> None:
    emu, _kube, url = world
    assert "newteam-quota" not in quota_names(emu)
    with LocalStack(clusters={CLUSTER: WITH_NEW_TEAM}, kube_url=url) as stack:
        emu.emulator.inject("update-failed", "UpdateComputeQuota", team="research", skip=1)  # after the Create
        _arn, done = run(stack)
        assert (done["status"], done["error"]) == ("FAILED", "RebalanceRolledBack")
        assert ("sagemaker:CreateComputeQuota", True) in {(d.action, d.allowed) for d in stack.iam.decisions}
        deleted = [d for d in stack.iam.decisions if d.action == "sagemaker:DeleteComputeQuota"]
        assert deleted
        assert all(d.allowed and d.role == "rebalancer-RollbackFunction" for d in deleted)
    assert "newteam-quota" not in quota_names(emu)


def test_without_delete_compute_quota_the_created_quota_stays_and_the_rollback_says_why(world: tuple) -> None:
    emu, _kube, url = world
    with LocalStack(clusters={CLUSTER: WITH_NEW_TEAM}, kube_url=url,
                    revoke={"rollback": {"sagemaker:DeleteComputeQuota"}}) as stack:
        emu.emulator.inject("update-failed", "UpdateComputeQuota", team="research", skip=1)  # after the Create
        _arn, done = run(stack)
        assert done["status"] == "FAILED"
        [sns] = stack.sns_messages()
        assert "sagemaker:DeleteComputeQuota" in sns["Message"], sns["Message"]
    assert "newteam-quota" in quota_names(emu)  # what AWS would leave behind with the old Rollback role
