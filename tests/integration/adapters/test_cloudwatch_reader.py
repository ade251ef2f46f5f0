"""Per-team utilization from Container Insights, read from moto's CloudWatch seeded with put_metric_data."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.cloudwatch import CloudWatchReader
from rebalancer.domain.snapshot import Utilization
from rebalancer.errors import PermanentError

END = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)
START = END - timedelta(hours=1)


@pytest.fixture(params=["in-process", "http"])
def cw(request: pytest.FixtureRequest) -> Iterator[Any]:
    """moto's CloudWatch in process, and over HTTP on loopback (the emulator server is moto)."""
    if request.param == "http":
        request.getfixturevalue("emu")  # resets the server's state and points AWS_ENDPOINT_URL at it
        yield AwsClients(region="us-east-1").client("cloudwatch")
        return
    with mock_aws():
        yield boto3.client("cloudwatch", region_name="us-east-1")


def put(cw: Any, metric: str, cluster: str, namespace: str, values: list[float]) -> None:
    cw.put_metric_data(Namespace="ContainerInsights", MetricData=[
        {"MetricName": metric, "Value": v, "Unit": "Percent",
         "Timestamp": START + timedelta(minutes=5 * i + 1),
         "Dimensions": [{"Name": "ClusterName", "Value": cluster}, {"Name": "Namespace", "Value": namespace}]}
        for i, v in enumerate(values)])


def test_averages_per_team_and_metric_over_the_window(cw: Any) -> None:
    put(cw, "pod_gpu_utilization", "ml-eks", "hyperpod-ns-vision", [80, 90, 100])
    put(cw, "pod_gpu_utilization", "ml-eks", "hyperpod-ns-speech", [10, 20])
    put(cw, "pod_neuroncore_utilization", "ml-eks", "hyperpod-ns-speech", [50])
    put(cw, "pod_gpu_utilization", "other-eks", "hyperpod-ns-vision", [0, 0])  # another cluster
    reader = CloudWatchReader(cw)
    got = reader.utilization("ml-eks", ["vision", "speech", "idle"], START, END)
    assert got == {
        "vision": Utilization(window_minutes=60, gpu_percent=90),
        "speech": Utilization(window_minutes=60, gpu_percent=15, neuroncore_percent=50),
        "idle": Utilization(window_minutes=60),
    }
    assert reader.calls == 1


def test_data_outside_the_window_is_not_counted(cw: Any) -> None:
    cw.put_metric_data(Namespace="ContainerInsights", MetricData=[
        {"MetricName": "pod_gpu_utilization", "Value": 5, "Timestamp": START - timedelta(minutes=10),
         "Dimensions": [{"Name": "ClusterName", "Value": "ml-eks"},
                        {"Name": "Namespace", "Value": "hyperpod-ns-a"}]}])
    put(cw, "pod_gpu_utilization", "ml-eks", "hyperpod-ns-a", [70])
    assert CloudWatchReader(cw).utilization("ml-eks", ["a"], START, END)["a"].gpu_percent == 70


def test_many_teams_are_batched_500_queries_per_call(cw: Any) -> None:
    teams = [f"team-{i:03d}" for i in range(300)]  # 600 queries: two calls
    for t in teams[::50]:
        put(cw, "pod_gpu_utilization", "ml-eks", f"hyperpod-ns-{t}", [42])
    reader = CloudWatchReader(cw)
    got = reader.utilization("ml-eks", teams, START, END)
    assert reader.calls == 2
    assert {t for t, u in got.items() if u.gpu_percent == 42} == set(teams[::50])
    assert all(u.gpu_percent is None for t, u in got.items() if t not in teams[::50])


def test_aws_error_is_one_line(cw: Any) -> None:
    with pytest.raises(PermanentError, match=r"^GetMetricData on Container Insights of EKS cluster ml-eks: "
                                             r"ValidationError: .*EndTime"):
        CloudWatchReader(cw).utilization("ml-eks", ["a"], END, START)
