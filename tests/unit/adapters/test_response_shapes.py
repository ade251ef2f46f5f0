"""Every response shape the SDK allows is one the snapshot takes: DescribeCluster, ListClusterNodes,
ListComputeQuotas, DescribeComputeQuota and DescribeClusterSchedulerConfig outputs generated from botocore's output
shapes (each optional member absent or present) are read into a Snapshot that also survives its JSON round trip
(collect stores it, plan and the CLI replay it). A shape the snapshot cannot use would be refused in one line naming
the field; today the generated responses are all accepted."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.botocore_shapes import output_of
from support.props import properties

from rebalancer.adapters.sagemaker.cluster import SageMakerReader
from rebalancer.adapters.sagemaker.scheduler_config import SchedulerConfigClient
from rebalancer.domain.quotas import ClusterSchedulerConfig, ComputeQuota
from rebalancer.domain.snapshot import Cluster, ClusterNode, Snapshot
from rebalancer.errors import InvalidInput
from rebalancer_tools.packaging.sdk_model import cluster_instance_types

TYPES = st.sampled_from(cluster_instance_types())
# Instance types drawn from the model's enum wherever a member is called InstanceType (it is free text in
# ComputeQuotaResourceConfig, but only the enum's values exist).
OVERRIDES = {"InstanceType": TYPES}


class _Pages:
    def __init__(self, pages: list[dict[str, Any]]):
        self.pages = pages

    def paginate(self, **_: Any) -> list[dict[str, Any]]:
        return self.pages


class FakeSageMaker:
    def __init__(self, **responses: Any):
        self.responses = responses

    def describe_cluster(self, **_: Any) -> dict[str, Any]:
        return dict(self.responses["describe_cluster"])

    def describe_compute_quota(self, **_: Any) -> dict[str, Any]:
        return dict(self.responses["describe_compute_quota"])

    def describe_cluster_scheduler_config(self, **_: Any) -> dict[str, Any]:
        return dict(self.responses["describe_cluster_scheduler_config"])

    def get_paginator(self, name: str) -> _Pages:
        return _Pages([self.responses[name]])


def _read(call: Any) -> Any:
    """The call's result. A refusal fails the test with the reader's own one-line message."""
    try:
        return call()
    except InvalidInput as e:
        raise AssertionError(f"a response the model allows was refused: {e}") from None


@properties(150)
@given(output_of("DescribeCluster", OVERRIDES))
def test_any_describe_cluster_response_is_read(response: dict[str, Any]) -> None:
    cluster = _read(lambda: SageMakerReader(FakeSageMaker(describe_cluster=response)).cluster("ml-cluster"))
    assert isinstance(cluster, Cluster)
    assert cluster.ClusterName == response.get("ClusterName", "ml-cluster")
    snapshot = Snapshot(taken_at=datetime(2026, 11, 30, tzinfo=UTC), cluster=cluster)
    groups = response["InstanceGroups"]
    expected = {g["InstanceType"] for g in groups if "InstanceType" in g}
    expected |= {d["InstanceType"] for g in groups for d in g.get("InstanceTypeDetails", []) if "InstanceType" in d}
    assert set(snapshot.instance_types()) == expected
    stored = snapshot.model_dump(mode="json")
    assert Snapshot.model_validate(stored).model_dump(mode="json") == stored


@properties(150)
@given(output_of("ListClusterNodes", OVERRIDES))
def test_any_list_cluster_nodes_response_is_read(response: dict[str, Any]) -> None:
    nodes = _read(lambda: SageMakerReader(FakeSageMaker(list_cluster_nodes=response)).nodes("ml-cluster"))
    assert len(nodes) == len(response["ClusterNodeSummaries"])
    assert all(isinstance(n, ClusterNode) for n in nodes)


@properties(150)
@given(output_of("ListComputeQuotas", OVERRIDES))
def test_any_list_compute_quotas_response_is_read(response: dict[str, Any]) -> None:
    ids = SageMakerReader(FakeSageMaker(list_compute_quotas=response)).quota_ids("arn:c")
    assert ids == [s["ComputeQuotaId"] for s in response.get("ComputeQuotaSummaries", [])
                   if s["Status"] not in ("Deleting", "Deleted")]


@properties(200)
@given(output_of("DescribeComputeQuota", OVERRIDES))
def test_any_describe_compute_quota_response_is_read(response: dict[str, Any]) -> None:
    quota = _read(lambda: SageMakerReader(FakeSageMaker(describe_compute_quota=response)).quota("q"))
    assert isinstance(quota, ComputeQuota)
    assert quota.ComputeQuotaVersion == response["ComputeQuotaVersion"]
    cluster = Cluster(ClusterName="ml-cluster", ClusterArn="arn:c")
    snapshot = Snapshot(taken_at=datetime(2026, 11, 30, tzinfo=UTC), cluster=cluster, quotas=(quota,))
    stored = snapshot.model_dump(mode="json")
    assert Snapshot.model_validate(stored).model_dump(mode="json") == stored


@properties(100)
@given(output_of("DescribeClusterSchedulerConfig", OVERRIDES))
def test_any_describe_cluster_scheduler_config_response_is_read(response: dict[str, Any]) -> None:
    fake = FakeSageMaker(describe_cluster_scheduler_config=response)
    config = _read(lambda: SchedulerConfigClient(fake).describe("s"))
    assert isinstance(config, ClusterSchedulerConfig)
    assert config.ClusterSchedulerConfigVersion == response["ClusterSchedulerConfigVersion"]
    cluster = Cluster(ClusterName="ml-cluster", ClusterArn="arn:c")
    snapshot = Snapshot(taken_at=datetime(2026, 11, 30, tzinfo=UTC), cluster=cluster, scheduler_config=config)
    stored = snapshot.model_dump(mode="json")
    assert Snapshot.model_validate(stored).model_dump(mode="json") == stored


def test_a_flexible_instance_group_counts_capacity_per_type_from_the_nodes() -> None:
    response = {"ClusterArn": "arn:c", "ClusterStatus": "InService", "InstanceGroups": [{
        "InstanceGroupName": "flex", "CurrentCount": 3, "TargetCount": 3,
        "InstanceRequirements": {"InstanceTypes": ["ml.p5.48xlarge", "ml.p5e.48xlarge"]},
        "InstanceTypeDetails": [{"InstanceType": "ml.p5.48xlarge", "CurrentCount": 2},
                                {"InstanceType": "ml.p5e.48xlarge", "CurrentCount": 1}]}]}
    node = {"InstanceGroupName": "flex", "InstanceStatus": {"Status": "Running"},
            "LaunchTime": datetime(2026, 11, 30, tzinfo=UTC)}
    nodes = {"ClusterNodeSummaries": [{**node, "InstanceId": "i-1", "InstanceType": "ml.p5.48xlarge"},
                                      {**node, "InstanceId": "i-2", "InstanceType": "ml.p5.48xlarge"},
                                      {**node, "InstanceId": "i-3", "InstanceType": "ml.p5e.48xlarge"}]}
    reader = SageMakerReader(FakeSageMaker(describe_cluster=response, list_cluster_nodes=nodes))
    snapshot = Snapshot(taken_at=datetime(2026, 11, 30, tzinfo=UTC), cluster=reader.cluster("ml-cluster"),
                        nodes=reader.nodes("ml-cluster"))
    assert snapshot.instance_types() == ("ml.p5.48xlarge", "ml.p5e.48xlarge")
    assert snapshot.healthy_nodes() == {"ml.p5.48xlarge": 2, "ml.p5e.48xlarge": 1}


def test_a_response_the_snapshot_cannot_use_is_refused_in_one_line_naming_the_field() -> None:
    bad = {"ComputeQuotaArn": "arn:q", "ComputeQuotaId": "q", "Name": "a-quota", "ComputeQuotaVersion": "two",
           "Status": "Created", "ComputeQuotaTarget": {"TeamName": "a"}, "CreationTime": datetime(2026, 1, 1)}
    with pytest.raises(InvalidInput) as e:
        SageMakerReader(FakeSageMaker(describe_compute_quota=bad)).quota("q")
    assert str(e.value).startswith("DescribeComputeQuota q: ComputeQuotaVersion: ")
    assert "'two'" in str(e.value)
    assert "\n" not in str(e.value)
