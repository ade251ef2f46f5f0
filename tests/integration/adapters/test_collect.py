"""collect_snapshot end to end in process: SageMaker (emulator), Kueue (loopback API server through an injected
client factory, as the Lambdas do it) and CloudWatch (moto, seeded Container Insights data)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from support.emulator import in_process_emulator
from support.five_teams import P5, setup_cluster
from support.kube_api import KubeState, cluster_queue, pod_set, serve, workload

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.collect import collect_snapshot
from rebalancer.adapters.kubernetes.eks_auth import api_client_with_token
from rebalancer.adapters.sagemaker.cluster import SageMakerReader
from rebalancer.domain.snapshot import Utilization

NOW = datetime(2026, 11, 30, 5, 0, tzinfo=UTC)
EKS_ARN = "arn:aws:eks:us-east-1:123456789012:cluster/ml-eks"


def test_collect_joins_capacity_quotas_demand_and_utilization(monkeypatch: pytest.MonkeyPatch) -> None:
    real_describe = SageMakerReader.describe_cluster

    def with_orchestrator(self: SageMakerReader, name: str) -> dict[str, Any]:
        # moto's clusters have no Orchestrator; a HyperPod EKS cluster always has one.
        return {**real_describe(self, name), "Orchestrator": {"Eks": {"ClusterArn": EKS_ARN}}}

    monkeypatch.setattr(SageMakerReader, "describe_cluster", with_orchestrator)
    with in_process_emulator() as handle:
        arn, quotas = setup_cluster(handle.emulator, handle.sagemaker)
        handle.client("cloudwatch").put_metric_data(Namespace="ContainerInsights", MetricData=[
            {"MetricName": "pod_gpu_utilization", "Value": v, "Timestamp": NOW - timedelta(minutes=m),
             "Dimensions": [{"Name": "ClusterName", "Value": "ml-eks"},
                            {"Name": "Namespace", "Value": "hyperpod-ns-c"}]} for v, m in ((60, 10), (80, 20))])
        state = KubeState()
        state.add(cluster_queue("c", {P5: {"nvidia.com/gpu": 32}}, reserved={P5: {"nvidia.com/gpu": 6}}),
                  workload("c", "w", [pod_set(2, {"nvidia.com/gpu": 4}, P5)]))
        seen: list[dict[str, Any]] = []
        with serve(state) as (url, _):
            def factory(described: dict[str, Any]) -> Any:
                seen.append(described)
                return api_client_with_token(url, lambda: "token")

            got = collect_snapshot("c1", AwsClients(region="us-east-1"), now=NOW, kube=factory)
    snap = got.snapshot
    assert seen[0]["ClusterArn"] == arn
    assert snap.taken_at == NOW
    assert snap.quotas == quotas
    assert snap.healthy_nodes() == {P5: 4}
    assert snap.demand["c"][P5].pending.accelerators == 8
    assert snap.utilization["c"] == Utilization(window_minutes=60, gpu_percent=70)
    assert snap.utilization["a"] == Utilization(window_minutes=60)
    assert got.warnings == ()
