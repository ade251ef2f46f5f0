"""Per-team accelerator utilization from CloudWatch Container Insights, in as few GetMetricData calls as possible.

Container Insights publishes `pod_gpu_utilization` and `pod_neuroncore_utilization` (namespace ContainerInsights)
with, among others, the dimension set {ClusterName, Namespace}: the per-namespace view we need, already aggregated.
One MetricStat query per (team, metric) with the whole window as its period gives one average per team; a
GetMetricData call takes up to 500 queries, so 250 teams cost one call (plus NextToken pages, if CloudWatch splits).
ClusterName is the EKS cluster's name, not the HyperPod cluster's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rebalancer.adapters.aws import aws_call
from rebalancer.domain.names import TEAM_NAMESPACE_PREFIX
from rebalancer.domain.snapshot import Utilization

NAMESPACE = "ContainerInsights"
METRICS = {"gpu_percent": "pod_gpu_utilization", "neuroncore_percent": "pod_neuroncore_utilization"}
MAX_QUERIES = 500


class CloudWatchReader:
    def __init__(self, cloudwatch: Any):
        self.cw = cloudwatch
        self.calls = 0  # GetMetricData calls made, for benchmarks and tests

    def utilization(self, eks_cluster_name: str, teams: Sequence[str], start: datetime,
                    end: datetime) -> dict[str, Utilization]:
        """Average utilization per team over [start, end). Teams without data get None figures."""
        seconds = (end - start).total_seconds()
        period = max(60, math.ceil(seconds / 60) * 60)
        queries: dict[str, tuple[str, str]] = {}
        for i, team in enumerate(sorted(set(teams))):
            for j, field in enumerate(METRICS):
                queries[f"q{i}_{j}"] = (team, field)
        values: dict[str, list[float]] = {}
        ids = list(queries)
        for chunk in (ids[k:k + MAX_QUERIES] for k in range(0, len(ids), MAX_QUERIES)):
            values.update(self._fetch(eks_cluster_name, chunk, queries, period, start, end))
        out: dict[str, dict[str, Any]] = {t: {"window_minutes": round(seconds / 60)} for t in sorted(set(teams))}
        for qid, (team, field) in queries.items():
            got = values.get(qid)
            out[team][field] = sum(got) / len(got) if got else None
        return {t: Utilization.model_validate(v) for t, v in out.items()}

    def _fetch(self, cluster: str, ids: list[str], queries: dict[str, tuple[str, str]], period: int,
               start: datetime, end: datetime) -> dict[str, list[float]]:
        request = [{
            "Id": qid,
            "MetricStat": {
                "Metric": {"Namespace": NAMESPACE, "MetricName": METRICS[queries[qid][1]], "Dimensions": [
                    {"Name": "ClusterName", "Value": cluster},
                    {"Name": "Namespace", "Value": TEAM_NAMESPACE_PREFIX + queries[qid][0]}]},
                "Period": period, "Stat": "Average"},
            "ReturnData": True,
        } for qid in ids]
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
