"""Prerequisites checked, not assumed, on the emulator (moto's EKS, IAM and CloudWatch, extended with add-ons,
access entries and the policy simulator): `rebalancer doctor` against a deployed local stack with each prerequisite
missing in turn (the update and delete grants of the apply and rollback roles among them), and the collect step
carrying what it found into the snapshot and the plan's warnings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from click.testing import CliRunner
from support.emulator import EmulatorHandle, in_process_emulator
from support.events import load_event
from support.kube_api import KubeState, pod_set, serve, workload

from rebalancer.adapters.prerequisites import ADDON
from rebalancer_tools.cli import cli
from rebalancer_tools.emulator import DEMO
from rebalancer_tools.emulator import prerequisites as emu_pre
from rebalancer_tools.fakes.ticking_clock import TickingClock
from rebalancer_tools.local.stack import STACK, LocalStack

pytestmark = pytest.mark.slow  # deploys the local stack

CLUSTER = DEMO.cluster_name
EKS = "demo-eks"
P5 = "ml.p5.48xlarge"
VERSION = "v1.2.0-eksbuild.1"
POLICY = """
mode: dry-run
teams:
  research: {weight: 3}
  training: {weight: 3}
  inference: {weight: 2}
  data-science: {weight: 1}
  platform: {weight: 1}
"""


@dataclass
class Deployed:
    emu: EmulatorHandle
    kube: KubeState
    url: str
    stack: LocalStack
    clock: TickingClock

    def doctor(self, *extra: str) -> tuple[int, list[str]]:
        result = CliRunner().invoke(cli, ["doctor", "--cluster", CLUSTER, "--kube-url", self.url, *extra])
        assert result.exception is None or isinstance(result.exception, SystemExit), result.output
        return result.exit_code, result.output.splitlines()

    def put_container_insights(self) -> None:
        self.emu.client("cloudwatch").put_metric_data(Namespace="ContainerInsights", MetricData=[{
            "MetricName": "pod_gpu_utilization", "Value": 50.0, "Timestamp": datetime.now(UTC),
            "Dimensions": [{"Name": "ClusterName", "Value": EKS}, {"Name": "Namespace", "Value": "hyperpod-ns-a"}]}])


@pytest.fixture
def deployed() -> Iterator[Deployed]:
    # Kueue 0.19, as the task-governance add-on 1.6 ships it: v1beta2 and v1beta1 (v1beta1 alone is warned about).
    kueue_019 = KubeState(kueue_versions=("v1beta2", "v1beta1"))
    with in_process_emulator(seed_demo=True) as emu, serve(kueue_019) as (url, kube):
        kube.add(workload("research", "pretrain", [pod_set(1, {"nvidia.com/gpu": 8}, P5)]))
        clock = TickingClock()
        with LocalStack(clusters={CLUSTER: POLICY}, kube_url=url, now=clock) as stack:
            emu.emulator.provision_eks(CLUSTER, EKS, addon_version=VERSION,
                                       access_entries={stack.role_arns["collect"]: ["rebalancer-kueue-readers"]})
            yield Deployed(emu, kube, url, stack, clock)


def grants(lines: list[str]) -> list[str]:
    return [line for line in lines if "update/delete grants of" in line]


def failing(lines: list[str]) -> list[str]:
    return [line for line in lines if not line.startswith("OK")]


def test_doctor_names_each_missing_prerequisite_in_turn_with_what_to_fix(deployed: Deployed) -> None:
    d, account, region = deployed, deployed.emu.emulator.account_id, deployed.emu.emulator.region

    code, lines = d.doctor("--stack", STACK)
    [insights] = failing(lines)  # no utilization published yet: a warning, not a failure
    assert insights.startswith("WARN Container Insights metrics: none of pod_gpu_utilization")
    assert "amazon-cloudwatch-observability" in insights
    assert code == 0
    d.put_container_insights()
    code, lines = d.doctor("--stack", STACK)
    assert (code, failing(lines)) == (0, [])
    assert f"OK   add-on {ADDON}: ACTIVE, version {VERSION}" in lines
    assert len([line for line in lines if line.startswith("OK   permissions of ")]) == 9
    # The update and delete grants of the apply and rollback roles (what SageMaker does with their permissions
    # while it updates or deletes a quota: CloudFormation's handler permissions for AWS::SageMaker::ComputeQuota),
    # simulated with IAM's policy simulator, one line per role beside the functions' own calls.
    assert grants(lines) == [
        f"OK   update/delete grants of apply: {d.stack.role_arns['apply']}: 5 actions allowed",
        f"OK   update/delete grants of rollback: {d.stack.role_arns['rollback']}: 5 actions allowed"]

    addon = emu_pre.remove_addon(account, region, EKS, ADDON)
    code, lines = d.doctor("--stack", STACK)
    assert (code, failing(lines)) == (1, [
        f"FAIL add-on {ADDON}: not installed on EKS cluster {EKS} — fix: aws eks create-addon --cluster-name {EKS} "
        f"--addon-name {ADDON} (HyperPod task governance installs Kueue through it)"])
    assert addon is not None
    emu_pre.restore_addon(account, region, EKS, addon)

    d.emu.emulator.set_addon_status(EKS, "DEGRADED", "kueue-controller-manager has 0 ready replicas")
    code, lines = d.doctor("--stack", STACK)
    [degraded] = failing(lines)
    assert degraded.startswith(f"FAIL add-on {ADDON}: DEGRADED (version {VERSION}): kueue-controller-manager")
    d.emu.emulator.set_addon_status(EKS, "ACTIVE")

    role = d.stack.role_arns["collect"]
    entry = emu_pre.remove_access_entry(account, region, EKS, role)
    code, lines = d.doctor("--stack", STACK)
    assert (code, failing(lines)) == (1, [
        f"FAIL EKS access entry: none for {role} on EKS cluster {EKS} — fix: deploy with EksClusterName set (the "
        f"stack creates it), or aws eks create-access-entry --cluster-name {EKS} --principal-arn {role}"])
    assert entry is not None
    emu_pre.restore_access_entry(account, region, EKS, entry)

    d.kube.errors["clusterqueues"] = 403
    code, lines = d.doctor("--stack", STACK)
    [rbac] = failing(lines)
    assert rbac.startswith("FAIL Kueue RBAC: the role may not list clusterqueues.kueue.x-k8s.io (403) — fix: apply")
    del d.kube.errors["clusterqueues"]
    d.kube.token = "someone-else"
    code, lines = d.doctor("--stack", STACK)
    assert failing(lines) == ["FAIL Kueue RBAC: the API server rejected the role's token (401) — fix: map the "
                              "collect role with an EKS access entry (deploy with EksClusterName)"]
    d.kube.token = None

    iam = d.emu.client("iam")
    rollback_role = d.stack.role_arns["rollback"].rsplit("/", 1)[-1]
    original = iam.get_role_policy(RoleName=rollback_role, PolicyName="function")["PolicyDocument"]
    doc = original if isinstance(original, dict) else json.loads(original)
    narrowed = _without(doc, "sagemaker:DeleteComputeQuota")
    iam.put_role_policy(RoleName=rollback_role, PolicyName="function", PolicyDocument=json.dumps(narrowed))
    code, lines = d.doctor("--stack", STACK)
    [perm] = failing(lines)
    assert code == 1
    assert perm.startswith(f"FAIL permissions of rollback: {d.stack.role_arns['rollback']} is denied "
                           f"sagemaker:DeleteComputeQuota on arn:aws:sagemaker:{region}:{account}:compute-quota/")
    iam.put_role_policy(RoleName=rollback_role, PolicyName="function", PolicyDocument=json.dumps(doc))

    # A grant missing is named on the grants' line alone: the function's own calls are still all allowed.
    iam.put_role_policy(RoleName=rollback_role, PolicyName="function",
                        PolicyDocument=json.dumps(_without(doc, "eks:DisassociateAccessPolicy")))
    code, lines = d.doctor("--stack", STACK)
    assert code == 1
    assert failing(lines) == [
        f"FAIL update/delete grants of rollback: {d.stack.role_arns['rollback']} is denied "
        f"eks:DisassociateAccessPolicy on arn:aws:eks:{region}:{account}:access-entry/{EKS}/role/{account}/x/x — fix: "
        "grant them in template.yaml (the function's Policies) and redeploy"]
    assert f"OK   permissions of rollback: {d.stack.role_arns['rollback']}" in "\n".join(lines)
    iam.put_role_policy(RoleName=rollback_role, PolicyName="function", PolicyDocument=json.dumps(doc))

    code, lines = d.doctor()
    assert code == 0
    assert sorted(failing(lines)) == [
        "WARN EKS access entry: not checked — fix: pass --stack or --collect-role-arn to name the collect role",
        "WARN function permissions: not checked — fix: pass --stack STACK (the deployed stack's name)"]


def _without(doc: dict[str, Any], action: str) -> dict[str, Any]:
    statements = []
    for s in doc["Statement"]:
        actions = [a for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]]) if a != action]
        if actions:
            statements.append({**s, "Action": actions})
    return {**doc, "Statement": statements}


def test_collect_keeps_the_addon_and_kueue_versions_and_the_plan_warns_of_what_is_missing(
        deployed: Deployed) -> None:
    from rebalancer.app import wiring

    d = deployed
    d.put_container_insights()

    def run() -> tuple[dict[str, Any], dict[str, Any]]:
        event = load_event("hyperpod-node-health")
        event["detail"]["ClusterName"] = CLUSTER
        assert d.stack.trigger(event)["status"] == "started"
        arn = d.stack.executions()[-1]
        assert d.stack.wait(arn)["status"] == "SUCCEEDED"
        execution = arn.rsplit(":", 1)[-1]
        return wiring.store().artifacts.get(execution, "SNAPSHOT"), wiring.store().artifacts.get(execution, "PLAN")

    snapshot, plan = run()
    assert snapshot["governance"] == {"addon_version": VERSION, "addon_status": "ACTIVE",
                                      "kueue_api_version": "v1beta2", "problems": [], "advisories": []}
    assert not [w for w in plan["warnings"] if w.startswith(("FAIL", "WARN"))]

    emu_pre.remove_addon(d.emu.emulator.account_id, d.emu.emulator.region, EKS, ADDON)
    d.clock.advance(minutes=10)  # past the trigger's debounce window
    snapshot, plan = run()
    assert snapshot["governance"]["addon_version"] is None
    assert plan["warnings"][0].startswith(f"FAIL add-on {ADDON}: not installed on EKS cluster {EKS} — fix: ")
