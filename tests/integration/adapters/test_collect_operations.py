"""Cluster operations in progress, read by collect from the emulator over HTTP (ListClusterOperations, paginated,
and DescribeClusterOperation, in botocore's shapes) and read by the planner: a type with a Scaling or
DeepHealthCheck in progress is not shrunk for it. Where the calls are refused, DescribeCluster's ActiveOperations
are what is left, with one warning."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from support.emulator import in_process_emulator

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.collect import KubeAccess, collect_snapshot
from rebalancer.adapters.sagemaker.cluster import SageMakerReader
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.planning.pools import build_pools
from rebalancer_tools.emulator.control import Emulator
from rebalancer_tools.iam.enforce import Enforcer

NOW = datetime(2026, 11, 30, 5, 0, tzinfo=UTC)
P5 = "ml.p5.48xlarge"
POLICY = Policy.model_validate({"teams": {"a": {}, "b": {}}, "stability": {"cooldown_minutes": 0, "max_move": None}})


def _quotas(emu: Emulator, arn: str, each: int) -> None:
    sm = boto3.client("sagemaker", region_name="us-east-1")
    for team in ("a", "b"):
        sm.create_compute_quota(
            Name=f"{team}-quota", ClusterArn=arn, ComputeQuotaTarget={"TeamName": team},
            ComputeQuotaConfig={"ComputeQuotaResources": [{"InstanceType": P5, "Accelerators": each}]})
    emu.settle()


def _pool(snap: Snapshot) -> Any:
    [pool], _ = build_pools(snap, POLICY, NOW)
    return pool


def _collect(aws: AwsClients) -> tuple[Snapshot, tuple[str, ...]]:
    got = collect_snapshot("c1", aws, now=NOW, kube=KubeAccess(mode="none"), metrics_window=None)
    return got.snapshot, tuple(w for w in got.warnings if not w.startswith("Kueue not read"))


def test_operations_in_progress_are_read_page_by_page_in_the_models_shapes(emu: Emulator, aws: AwsClients) -> None:
    emu.create_cluster("c1", [("p5", P5, 4), ("p5b", P5, 2)])
    emu.set_clock(lambda: NOW - timedelta(minutes=20))
    scaling = emu.start_operation("c1", "Scaling", {"p5": 6})
    check = emu.start_operation("c1", "DeepHealthCheck", {"p5b": None}, instance_ids=("p5b-1",))
    done = emu.start_operation("c1", "DeepHealthCheck", {"p5": None})
    emu.finish_operation("c1", done)
    ops = SageMakerReader(aws.client("sagemaker"), page_size=1).operations("c1")  # one summary a page
    assert [(o.OperationId, o.Type, o.InstanceGroupNames, o.InstanceIds, o.TargetCounts) for o in ops] == sorted([
        (scaling, "Scaling", ("p5",), (), {"p5": 6}), (check, "DeepHealthCheck", ("p5b",), ("p5b-1",), {})])
    assert {o.CreationTime for o in ops} == {NOW - timedelta(minutes=20)}
    described = aws.client("sagemaker").describe_cluster_operation(ClusterName="c1", OperationId=scaling)
    assert described["ScalingDetails"][0]["Original"] == {"CurrentCount": 4, "TargetCount": 4}
    group = aws.client("sagemaker").describe_cluster(ClusterName="c1")["InstanceGroups"][0]
    assert group["ActiveOperations"] == {"Scaling": 1}


def test_a_deep_health_check_seen_only_through_list_cluster_operations_holds_its_type(
        emu: Emulator, aws: AwsClients) -> None:
    """ActiveOperations knows only Scaling (ActiveClusterOperationName): a DeepHealthCheck on a group whose nodes
    have gone Failure/Pending for it is visible in ListClusterOperations alone."""
    arn = emu.create_cluster("c1", [("p5", P5, 4)])
    _quotas(emu, arn, 16)
    emu.start_operation("c1", "DeepHealthCheck", {"p5": None})
    emu.set_node_status("c1", "p5-3", "Pending")
    snap, warnings = _collect(aws)
    assert warnings == ()
    assert [o.Type for o in snap.operations] == ["DeepHealthCheck"]
    pool = _pool(snap)
    assert pool.capacity == 32  # 3 nodes, 32 GPUs of quota: the check explains the missing node
    assert "DeepHealthCheck on group p5 in progress: quotas of ml.p5.48xlarge are not shrunk for it" in pool.notes
    emu.finish_operation("c1", snap.operations[0].OperationId)
    after, _ = _collect(aws)
    assert after.operations == ()
    assert _pool(after).capacity == 24


def test_where_list_cluster_operations_is_refused_active_operations_are_what_is_left() -> None:
    """Under a role without the grant (AccessDenied, as AWS answers if it authorizes the calls under other names):
    one warning, and the Scaling that DescribeCluster shows still holds its type."""
    read = ["sagemaker:DescribeCluster", "sagemaker:ListClusterNodes", "sagemaker:ListComputeQuotas",
            "sagemaker:DescribeComputeQuota", "sagemaker:ListTags", "sagemaker:ListClusterSchedulerConfigs",
            "sagemaker:DescribeClusterSchedulerConfig", "sagemaker:DescribeTrainingPlan"]
    with in_process_emulator(clock=lambda: NOW) as handle:
        emu = handle.emulator
        arn = emu.create_cluster("c1", [("p5", P5, 4)])
        _quotas(emu, arn, 16)
        emu.start_operation("c1", "Scaling", {"p5": 4})
        emu.set_node_status("c1", "p5-3", "Pending")
        with Enforcer("us-east-1", "123456789012") as iam:
            creds = iam.role("reader", {"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": read, "Resource": "*"}]})
            with Enforcer.acting_as(creds, "collect"):
                snap, warnings = _collect(AwsClients(region="us-east-1"))
    [warning] = warnings
    assert warning.startswith("cluster operations not read, so only DescribeCluster's ActiveOperations (Scaling) "
                              "hold quotas and a DeepHealthCheck in progress is not seen: ListClusterOperations "
                              "on cluster c1: AccessDeniedException")
    assert snap.operations == ()
    assert snap.cluster.InstanceGroups[0].ActiveOperations == {"Scaling": 1}
    assert _pool(snap).capacity == 32
