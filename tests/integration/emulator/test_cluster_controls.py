"""Cluster-side behaviour the emulator adds to moto: every SDK instance type, real-shaped ARNs, node health,
resizing, UpdateCluster and ListClusterNodes pagination — in-process and over HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from support.emulator import EmulatorHandle

from rebalancer_tools.emulator.errors import ValidationError
from rebalancer_tools.packaging.sdk_model import cluster_instance_types

ROLE = "arn:aws:iam::123456789012:role/hyperpod"


def _group(name: str, instance_type: str, count: int) -> dict[str, Any]:
    # No ThreadsPerCore and no LifeCycleConfig: AWS does not require them (moto did).
    return {"InstanceGroupName": name, "InstanceType": instance_type, "InstanceCount": count, "ExecutionRole": ROLE}


@pytest.mark.parametrize("instance_type", [
    "ml.p5e.48xlarge", "ml.p5en.48xlarge", "ml.p6-b200.48xlarge", "ml.trn2.48xlarge", "ml.g6.12xlarge",
    "ml.g6e.48xlarge",
])
def test_accelerator_types_moto_rejected_are_accepted(emulator: EmulatorHandle, instance_type: str) -> None:
    sm = emulator.sagemaker
    sm.create_cluster(ClusterName="c", InstanceGroups=[_group("g", instance_type, 2)])
    nodes = sm.list_cluster_nodes(ClusterName="c")["ClusterNodeSummaries"]
    assert [n["InstanceType"] for n in nodes] == [instance_type, instance_type]


def test_every_sdk_cluster_instance_type_is_accepted_and_others_are_not(emulator: EmulatorHandle) -> None:
    types = cluster_instance_types()
    for i, t in enumerate(types):
        emulator.emulator.create_cluster(f"c{i}", [("g", t, 1)])
    assert len(emulator.sagemaker.list_clusters(MaxResults=100)["ClusterSummaries"]) == min(len(types), 100)
    with pytest.raises(ClientError) as exc:
        emulator.sagemaker.create_cluster(ClusterName="bad", InstanceGroups=[_group("g", "ml.p99.48xlarge", 1)])
    assert exc.value.response["Error"]["Code"] == "ValidationException"
    assert "ml.p99.48xlarge" in exc.value.response["Error"]["Message"]


def test_node_listing_pages_through_every_node_once(any_emulator: EmulatorHandle) -> None:
    any_emulator.emulator.create_cluster("c", [("a", "ml.p5.48xlarge", 5), ("b", "ml.g5.12xlarge", 4)])
    pages = any_emulator.sagemaker.get_paginator("list_cluster_nodes").paginate(
        ClusterName="c", PaginationConfig={"PageSize": 2})
    ids = [n["InstanceId"] for p in pages for n in p["ClusterNodeSummaries"]]
    assert sorted(ids) == sorted([f"a-{i}" for i in range(5)] + [f"b-{i}" for i in range(4)])


def test_node_health_round_trip(any_emulator: EmulatorHandle) -> None:
    arn = any_emulator.emulator.create_cluster("c", [("a", "ml.trn1.32xlarge", 2)])
    any_emulator.emulator.set_node_status(arn, "a-1", "DeepHealthCheckInProgress")
    sm = any_emulator.sagemaker
    statuses = {n["InstanceId"]: n["InstanceStatus"]["Status"]
                for n in sm.list_cluster_nodes(ClusterName=arn)["ClusterNodeSummaries"]}
    assert statuses == {"a-0": "Running", "a-1": "DeepHealthCheckInProgress"}
    assert any_emulator.emulator.healthy_capacity("c")[("ml.trn1.32xlarge", "Accelerators")] == 16.0
    with pytest.raises(ValidationError, match="Sleeping"):
        any_emulator.emulator.set_node_status(arn, "a-1", "Sleeping")


def test_resize_grows_with_running_nodes_and_shrinks_unhealthy_first(emulator: EmulatorHandle) -> None:
    emu = emulator.emulator
    emu.create_cluster("c", [("a", "ml.p5.48xlarge", 3)])
    emu.fail_node("c", "a-0")
    emu.resize_instance_group("c", "a", 5)
    assert sorted(n["InstanceId"] for n in emu.nodes("c")) == ["a-0", "a-1", "a-2", "a-3", "a-4"]
    emu.resize_instance_group("c", "a", 3)
    assert sorted(n["InstanceId"] for n in emu.nodes("c")) == ["a-1", "a-2", "a-3"]
    group = emulator.sagemaker.describe_cluster(ClusterName="c")["InstanceGroups"][0]
    assert (group["CurrentCount"], group["TargetCount"]) == (3, 3)
    assert emu.healthy_capacity("c")[("ml.p5.48xlarge", "Accelerators")] == 24.0


def test_update_cluster_resizes_and_adds_groups(any_emulator: EmulatorHandle) -> None:
    sm = any_emulator.sagemaker
    arn = any_emulator.emulator.create_cluster("c", [("a", "ml.p5.48xlarge", 2)])
    out = sm.update_cluster(ClusterName=arn, InstanceGroups=[
        {"InstanceGroupName": "a", "InstanceCount": 4, "ExecutionRole": ROLE},
        _group("b", "ml.trn2.48xlarge", 1),
    ])
    assert out["ClusterArn"] == arn
    groups = {g["InstanceGroupName"]: g for g in sm.describe_cluster(ClusterName="c")["InstanceGroups"]}
    assert groups["a"]["CurrentCount"] == 4
    assert groups["b"]["InstanceType"] == "ml.trn2.48xlarge"
    # the new type can now carry a quota
    sm.create_compute_quota(Name="q", ClusterArn=arn, ComputeQuotaTarget={"TeamName": "t"}, ComputeQuotaConfig={
        "ComputeQuotaResources": [{"InstanceType": "ml.trn2.48xlarge", "Accelerators": 16}]})
    with pytest.raises(sm.exceptions.ResourceNotFound):
        sm.update_cluster(ClusterName="nope", InstanceGroups=[_group("a", "ml.p5.48xlarge", 1)])


def test_losing_a_group_breaks_the_invariant_in_the_monitor(emulator: EmulatorHandle) -> None:
    emu = emulator.emulator
    arn = emu.create_cluster("c", [("a", "ml.g5.12xlarge", 2)])
    emulator.sagemaker.create_compute_quota(
        Name="q", ClusterArn=arn, ComputeQuotaTarget={"TeamName": "t"},
        ComputeQuotaConfig={"ComputeQuotaResources": [{"InstanceType": "ml.g5.12xlarge", "Count": 2}]})
    assert emu.monitor.records[-1].ok
    emu.resize_instance_group("c", "a", 1)
    last = emu.monitor.records[-1]
    assert last.operation == "control:resize"
    excess = {e.resource: (e.allocated, e.capacity) for e in last.excess}
    assert excess == {"Accelerators": (8.0, 4.0), "VCpu": (96.0, 48.0), "MemoryInGiB": (384.0, 192.0)}
