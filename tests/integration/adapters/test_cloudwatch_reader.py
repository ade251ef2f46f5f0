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


# The OpenTelemetry pipeline: one series per GPU / NeuronCore, labelled with OpenTelemetry's Kubernetes attributes;
# the reader finds the series with ListMetrics, so the CloudWatch namespace they are in is not assumed.
OTEL_NAMESPACE = "otel-container-insights"


def put_otel(cw: Any, metric: str, cluster: str, namespace: str, device: str, values: list[float],
             cluster_label: str = "k8s.cluster.name") -> None:
    cw.put_metric_data(Namespace=OTEL_NAMESPACE, MetricData=[
        {"MetricName": metric, "Value": v, "Timestamp": START + timedelta(minutes=5 * i + 1),
         "Dimensions": [{"Name": cluster_label, "Value": cluster}, {"Name": "k8s.namespace.name", "Value": namespace},
                        {"Name": "k8s.pod.name", "Value": f"{namespace}-pod"}, {"Name": "gpu", "Value": device}]}
        for i, v in enumerate(values)])


def test_the_opentelemetry_names_are_read_when_the_classic_ones_are_absent(cw: Any) -> None:
    put_otel(cw, "DCGM_FI_DEV_GPU_UTIL", "ml-eks", "hyperpod-ns-vision", "0", [80, 80])
    put_otel(cw, "DCGM_FI_DEV_GPU_UTIL", "ml-eks", "hyperpod-ns-vision", "1", [40])
    put_otel(cw, "neuroncore_utilization_ratio", "ml-eks", "hyperpod-ns-speech", "0", [0.25],
             cluster_label="ClusterName")
    put_otel(cw, "DCGM_FI_DEV_GPU_UTIL", "other-eks", "hyperpod-ns-speech", "0", [99])  # another cluster
    put_otel(cw, "DCGM_FI_DEV_GPU_UTIL", "ml-eks", "kube-system", "0", [99])  # not a team's namespace
    reader = CloudWatchReader(cw)
    got = reader.utilization("ml-eks", ["vision", "speech", "idle"], START, END)
    assert got == {
        "vision": Utilization(window_minutes=60, gpu_percent=(80 + 80 + 40) / 3),
        "speech": Utilization(window_minutes=60, neuroncore_percent=25),  # Neuron Monitor's is a ratio
        "idle": Utilization(window_minutes=60),
    }
    assert reader.pipeline == "OpenTelemetry"
    assert reader.calls == 2  # the classic names (nothing), then the three series of the teams in one call


def test_the_classic_names_win_when_both_pipelines_publish(cw: Any) -> None:
    put(cw, "pod_gpu_utilization", "ml-eks", "hyperpod-ns-a", [70])
    put_otel(cw, "DCGM_FI_DEV_GPU_UTIL", "ml-eks", "hyperpod-ns-a", "0", [10])
    reader = CloudWatchReader(cw)
    assert reader.utilization("ml-eks", ["a"], START, END)["a"].gpu_percent == 70
    assert (reader.pipeline, reader.calls) == ("classic", 1)


def test_no_pipeline_at_all_reads_nothing_and_says_so(cw: Any) -> None:
    reader = CloudWatchReader(cw)
    assert reader.utilization("ml-eks", ["a"], START, END) == {"a": Utilization(window_minutes=60)}
    assert (reader.pipeline, reader.calls) == ("none", 1)
