"""rebalancer.adapters.prerequisites on the emulator (moto in process with EKS add-ons, access entries and the IAM
policy simulator added): each check passes on what a ready cluster has and names the fix when one thing is missing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from support.emulator import EmulatorHandle, in_process_emulator

from rebalancer.adapters import prerequisites as pre
from rebalancer_tools.emulator import prerequisites as emu_pre
from rebalancer_tools.iam import role_permissions

EKS = "ml-eks"
ROLE = "arn:aws:iam::123456789012:role/reader"


@pytest.fixture
def emu() -> Iterator[EmulatorHandle]:
    with in_process_emulator(seed_demo=True) as handle:
        handle.emulator.provision_eks("demo-hyperpod", EKS, addon_version="v1.3.0-eksbuild.2",
                                      access_entries={ROLE: ["kueue-readers"]})
        yield handle


def test_an_active_addon_gives_its_version(emu: EmulatorHandle) -> None:
    got = pre.check_addon(emu.client("eks"), EKS)
    assert (got.check.line(), got.version, got.status) == (
        f"OK   add-on {pre.ADDON}: ACTIVE, version v1.3.0-eksbuild.2", "v1.3.0-eksbuild.2", "ACTIVE")


def test_a_missing_or_degraded_addon_fails_with_the_fix(emu: EmulatorHandle) -> None:
    emu.emulator.set_addon_status(EKS, "DEGRADED", "webhook unavailable")
    got = pre.check_addon(emu.client("eks"), EKS)
    assert got.check.status == "fail"
    assert got.check.found == "DEGRADED (version v1.3.0-eksbuild.2): webhook unavailable"
    emu_pre.remove_addon(emu.emulator.account_id, emu.emulator.region, EKS, pre.ADDON)
    line = pre.check_addon(emu.client("eks"), EKS).check.line()
    assert line.startswith(f"FAIL add-on {pre.ADDON}: not installed on EKS cluster {EKS} — fix: aws eks create-addon")


def test_no_eks_cluster_at_all_is_a_missing_addon_too(emu: EmulatorHandle) -> None:
    assert pre.check_addon(emu.client("eks"), "elsewhere").check.found == "not installed on EKS cluster elsewhere"


def test_the_access_entry_of_the_role(emu: EmulatorHandle) -> None:
    got = pre.check_access_entry(emu.client("eks"), EKS, ROLE)
    assert got.line() == f"OK   EKS access entry: {ROLE} (kueue-readers)"
    other = "arn:aws:iam::123456789012:role/other"
    assert pre.check_access_entry(emu.client("eks"), EKS, other).status == "fail"


@pytest.mark.parametrize(("caller", "role"), [
    ("arn:aws:sts::123456789012:assumed-role/reader/session-1", ROLE),
    (ROLE, ROLE),
])
def test_role_arn_of_an_assumed_role_session(caller: str, role: str) -> None:
    assert pre.role_arn_of(caller) == role


def test_container_insights_metrics_present_or_a_warning(emu: EmulatorHandle) -> None:
    cw = emu.client("cloudwatch")
    assert pre.check_container_insights(cw, EKS).status == "warn"
    cw.put_metric_data(Namespace="ContainerInsights", MetricData=[{
        "MetricName": "pod_neuroncore_utilization", "Value": 1.0, "Timestamp": datetime.now(UTC),
        "Dimensions": [{"Name": "ClusterName", "Value": EKS}]}])
    assert pre.check_container_insights(cw, EKS).line() == \
        "OK   Container Insights metrics: classic pipeline: pod_neuroncore_utilization"


@pytest.mark.parametrize(("version", "otel"), [("v6.0.1-eksbuild.1", True), ("v4.1.0-eksbuild.1", False)])
def test_doctor_names_the_opentelemetry_pipeline_when_the_classic_names_are_absent(
        emu: EmulatorHandle, version: str, otel: bool) -> None:
    eks = emu.client("eks")
    eks.create_addon(clusterName=EKS, addonName=pre.OBSERVABILITY_ADDON, addonVersion=version)
    check = pre.check_container_insights(emu.client("cloudwatch"), EKS, eks)
    assert check.status == "warn"
    assert ("OpenTelemetry pipeline (amazon-cloudwatch-observability " + version in check.found) is otel


def test_doctor_names_the_opentelemetry_metric_names_it_found(emu: EmulatorHandle) -> None:
    eks = emu.client("eks")
    eks.create_addon(clusterName=EKS, addonName=pre.OBSERVABILITY_ADDON, addonVersion="v6.0.1-eksbuild.1")
    cw = emu.client("cloudwatch")
    cw.put_metric_data(Namespace="otel-container-insights", MetricData=[{
        "MetricName": "DCGM_FI_DEV_GPU_UTIL", "Value": 50.0, "Timestamp": datetime.now(UTC),
        "Dimensions": [{"Name": "k8s.cluster.name", "Value": EKS}, {"Name": "k8s.namespace.name", "Value": "ns"},
                       {"Name": "gpu", "Value": str(gpu)}]} for gpu in range(2)])
    check = pre.check_container_insights(cw, EKS, eks)
    assert check.line() == (
        "OK   Container Insights metrics: OpenTelemetry pipeline (amazon-cloudwatch-observability "
        "v6.0.1-eksbuild.1): DCGM_FI_DEV_GPU_UTIL (2 series), read per series with ListMetrics and GetMetricData "
        "(no classic name)")


class _Denied(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"({status})")
        self.status = status


def _lister(answers: dict[tuple[str, str], int]) -> Any:
    def list_objects(version: str, plural: str) -> Any:
        status = answers.get((version, plural), answers.get((version, "*"), 200))
        if status != 200:
            raise _Denied(status)
        return {"items": []}

    return list_objects


@pytest.mark.parametrize(("answers", "status", "version", "found"), [
    ({}, "ok", "v1beta2", "clusterqueues and workloads readable (kueue.x-k8s.io/v1beta2)"),
    # Kueue 0.20 serves v1beta2 only: a cluster that still answers only v1beta1 is readable, and warned.
    ({("v1beta2", "*"): 404}, "warn", "v1beta1", "clusterqueues and workloads readable only as kueue.x-k8s.io/v1beta1"),
    ({("v1beta2", "workloads"): 403}, "fail", "v1beta2", "the role may not list workloads.kueue.x-k8s.io (403)"),
    ({("v1beta2", "*"): 401}, "fail", None, "the API server rejected the role's token (401)"),
    ({("v1beta2", "*"): 404, ("v1beta1", "*"): 404}, "fail", None,
     "no kueue.x-k8s.io API on the cluster (404 for v1beta2, v1beta1)"),
])
def test_kueue_access(answers: dict[tuple[str, str], int], status: str, version: str | None, found: str) -> None:
    got = pre.check_kueue_access(_lister(answers))
    assert (got.check.status, got.api_version, got.check.found) == (status, version, found)


def test_permissions_through_the_policy_simulator(emu: EmulatorHandle) -> None:
    iam = emu.client("iam")
    arn = iam.create_role(RoleName="rollback", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    quotas = "arn:aws:sagemaker:us-east-1:123456789012:compute-quota/*"
    iam.put_role_policy(RoleName="rollback", PolicyName="p", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": ["sagemaker:UpdateComputeQuota", "sagemaker:DescribeComputeQuota"],
             "Resource": quotas}]}))
    calls = [("sagemaker:UpdateComputeQuota", quotas.replace("*", "x")),
             ("sagemaker:DeleteComputeQuota", quotas.replace("*", "x"))]
    got = role_permissions.check_permissions(iam, "rollback", arn, calls)
    assert got.line() == (f"FAIL permissions of rollback: {arn} is denied sagemaker:DeleteComputeQuota on "
                          f"{quotas.replace('*', 'x')} — fix: grant them in template.yaml (the function's Policies) "
                          "and redeploy")
    assert role_permissions.check_permissions(iam, "rollback", arn, calls[:1]).ok


def test_function_calls_leave_out_unset_optional_secrets() -> None:
    env = {"TABLE_NAME": "t", "TOPIC_ARN": "arn:aws:sns:us-east-1:1:t", "SLACK_WEBHOOK_SECRET_ARN": ""}
    calls = pre.function_calls("notify", env, partition="aws", region="us-east-1", account="1")
    assert ("sns:Publish", "arn:aws:sns:us-east-1:1:t") in calls
    assert not [c for c in calls if c[0] == "secretsmanager:GetSecretValue"]


def test_a_cluster_without_an_eks_orchestrator_is_one_failed_check(emu: EmulatorHandle) -> None:
    report = pre.check_cluster(emu.client("eks"), emu.client("cloudwatch"), None)
    assert [c.line() for c in report.checks] == [
        "FAIL EKS orchestrator: the HyperPod cluster has no Orchestrator.Eks — fix: task governance needs an "
        "EKS-orchestrated cluster"]
    assert report.governance().problems == (report.checks[0].line(),)


def test_a_denied_action_iams_data_does_not_list_yet_is_a_warning_naming_the_fallback(emu: EmulatorHandle) -> None:
    iam = emu.client("iam")
    arn = iam.create_role(RoleName="collect", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    cluster = "arn:aws:sagemaker:us-east-1:123456789012:cluster/x"
    iam.put_role_policy(RoleName="collect", PolicyName="p", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": ["sagemaker:DescribeCluster"], "Resource": cluster}]}))
    calls = [("sagemaker:DescribeCluster", cluster), ("sagemaker:ListClusterOperations", cluster)]
    got = role_permissions.check_permissions(iam, "collect", arn, calls)
    assert got.status == "warn"
    assert got.found == (f"{arn} is denied sagemaker:ListClusterOperations on {cluster}, which IAM's authorization "
                         "data does not list yet (the SDK has them since botocore 1.44.8)")
    assert "DescribeCluster's ActiveOperations" in got.line()
    calls.append(("sagemaker:ListClusterNodes", cluster))
    assert role_permissions.check_permissions(iam, "collect", arn, calls).status == "fail"
