"""Per-team accelerator utilization from CloudWatch Container Insights, in as few calls as possible, from either of
its two pipelines (both run by the `amazon-cloudwatch-observability` EKS add-on):

- **classic** (Enhanced Container Insights): `pod_gpu_utilization` and `pod_neuroncore_utilization` in namespace
  ContainerInsights, published pre-aggregated with, among others, the dimension set {ClusterName, Namespace}: the
  per-namespace view we need. One MetricStat query per (team, metric) with the whole window as its period gives one
  average per team; a GetMetricData call takes up to 500 queries, so 250 teams cost one call.
- **OpenTelemetry** (add-on >= v6.0.1-eksbuild.1, "Container Insights with OpenTelemetry metrics"): the sources'
  own names (NVIDIA DCGM's `DCGM_FI_DEV_GPU_UTIL`, unit %; AWS Neuron Monitor's `neuroncore_utilization_ratio`,
  unit 1, so times 100 here), one series per
  resource (a GPU, a NeuronCore) labelled with OpenTelemetry's `k8s.cluster.name` / `k8s.namespace.name`, and no
  classic name. AWS documents PromQL for them (Prometheus-compatible QueryMetrics at
  https://monitoring.<region>.amazonaws.com/api/v1/query, SigV4); that API is no operation of the pinned botocore
  (1.44.8: PromQL appears there only in alarms' AlarmPromQLCriteria and saved query definitions), so the series are
  found with ListMetrics (the cluster's, per metric name) and read with GetMetricData, 500 series a call; a team's
  figure is the mean over its series.

The OTel names are read only when the classic ones return nothing for any team. ClusterName is the EKS cluster's
name, not the HyperPod cluster's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from rebalancer.adapters.aws import aws_call
from rebalancer.domain.names import TEAM_NAMESPACE_PREFIX
from rebalancer.domain.snapshot import Utilization

NAMESPACE = "ContainerInsights"
METRICS = {"gpu_percent": "pod_gpu_utilization", "neuroncore_percent": "pod_neuroncore_utilization"}
OTEL_METRICS = {"gpu_percent": "DCGM_FI_DEV_GPU_UTIL", "neuroncore_percent": "neuroncore_utilization_ratio"}
OTEL_PERCENT = {"gpu_percent": 1.0, "neuroncore_percent": 100.0}  # the sources' units: % and a ratio
# The labels the OpenTelemetry pipeline names the cluster and the namespace with (its semantic conventions first)
OTEL_CLUSTER_LABELS = ("k8s.cluster.name", "ClusterName")
OTEL_NAMESPACE_LABELS = ("k8s.namespace.name", "Namespace", "namespace")
MAX_QUERIES = 500
CLASSIC, OTEL, NONE = "classic", "OpenTelemetry", "none"

Query = tuple[tuple[str, str], dict[str, Any]]  # (team, field) and the MetricStat's Metric


class CloudWatchReader:
    def __init__(self, cloudwatch: Any):
        self.cw = cloudwatch
        self.calls = 0  # GetMetricData calls made, for benchmarks and tests
        self.pipeline = NONE  # which pipeline the last reading came from

    def utilization(self, eks_cluster_name: str, teams: Sequence[str], start: datetime,
                    end: datetime) -> dict[str, Utilization]:
        """Average utilization per team over [start, end). Teams without data get None figures."""
        names = sorted(set(teams))
        seconds = (end - start).total_seconds()
        period = max(60, math.ceil(seconds / 60) * 60)
        queries = [((team, field), _classic_metric(eks_cluster_name, team, metric))
                   for team in names for field, metric in METRICS.items()]
        values = self._read(eks_cluster_name, queries, period, start, end)
        self.pipeline = CLASSIC if values else NONE
        if not values:
            queries = list(self._otel_series(eks_cluster_name, names))
            values = self._read(eks_cluster_name, queries, period, start, end) if queries else {}
            values = {k: [v * OTEL_PERCENT[k[1]] for v in got] for k, got in values.items()}
            self.pipeline = OTEL if values else NONE
        out: dict[str, dict[str, Any]] = {t: {"window_minutes": round(seconds / 60)} for t in names}
        for (team, field), got in values.items():
            out[team][field] = sum(got) / len(got)
        return {t: Utilization.model_validate(v) for t, v in out.items()}

    def _otel_series(self, cluster: str, teams: Sequence[str]) -> Iterator[Query]:
        """Every OTel series of the cluster whose namespace is a team's, keyed by (team, field)."""
        by_namespace = {TEAM_NAMESPACE_PREFIX + t: t for t in teams}
        for field, metric in OTEL_METRICS.items():
            with aws_call("ListMetrics", f"Container Insights of EKS cluster {cluster}"):
                found = otel_series(self.cw, cluster, metric)
            for series in found:
                labels = {d["Name"]: d["Value"] for d in series.get("Dimensions", [])}
                team = next((by_namespace[labels[k]] for k in OTEL_NAMESPACE_LABELS
                             if labels.get(k) in by_namespace), None)
                if team is not None:
                    yield (team, field), series

    def _read(self, cluster: str, queries: list[Query], period: int, start: datetime,
              end: datetime) -> dict[tuple[str, str], list[float]]:
        """Every query's data points, 500 queries a call; keys without data are left out."""
        out: dict[tuple[str, str], list[float]] = {}
        for k in range(0, len(queries), MAX_QUERIES):
            chunk = queries[k:k + MAX_QUERIES]
            got = self._fetch(cluster, [m for _, m in chunk], period, start, end)
            for i, (key, _) in enumerate(chunk):
                if got.get(f"q{i}"):
                    out.setdefault(key, []).extend(got[f"q{i}"])
        return out

    def _fetch(self, cluster: str, metrics: list[dict[str, Any]], period: int, start: datetime,
               end: datetime) -> dict[str, list[float]]:
        request = [{"Id": f"q{i}", "MetricStat": {"Metric": m, "Period": period, "Stat": "Average"},
                    "ReturnData": True} for i, m in enumerate(metrics)]
        out: dict[str, list[float]] = {}
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"MetricDataQueries": request, "StartTime": start, "EndTime": end}
            if token:
                kwargs["NextToken"] = token
            with aws_call("GetMetricData", f"Container Insights of EKS cluster {cluster}"):
                page = self.cw.get_metric_data(**kwargs)
            self.calls += 1
            for r in page.get("MetricDataResults", []):
                out.setdefault(r["Id"], []).extend(float(v) for v in r.get("Values", []))
            token = page.get("NextToken")
            if not token:
                return out


def _classic_metric(cluster: str, team: str, metric: str) -> dict[str, Any]:
    return {"Namespace": NAMESPACE, "MetricName": metric, "Dimensions": [
        {"Name": "ClusterName", "Value": cluster}, {"Name": "Namespace", "Value": TEAM_NAMESPACE_PREFIX + team}]}


def otel_series(cloudwatch: Any, cluster: str, metric: str) -> list[dict[str, Any]]:
    """The series (Namespace, MetricName, Dimensions) of one OTel metric name labelled with the cluster, in any
    CloudWatch namespace, under whichever cluster label the pipeline uses. botocore's ClientError passes through."""
    found: list[dict[str, Any]] = []
    for label in OTEL_CLUSTER_LABELS:
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"MetricName": metric, "Dimensions": [{"Name": label, "Value": cluster}]}
            if token:
                kwargs["NextToken"] = token
            page = cloudwatch.list_metrics(**kwargs)
            found += page.get("Metrics", [])
            token = page.get("NextToken")
            if not token:
                break
    return found
