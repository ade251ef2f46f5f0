"""Reading a HyperPod cluster from SageMaker: the cluster, its nodes and its compute quotas, as snapshot models."""

from __future__ import annotations

from typing import Any

from rebalancer.adapters.aws import aws_call
from rebalancer.domain.snapshot import Cluster, ClusterNode, ComputeQuota
from rebalancer.parsing.validation import load_model

# Quotas on their way out hold no capacity and cannot be updated.
GONE_STATUSES = frozenset({"Deleting", "Deleted"})


class SageMakerReader:
    def __init__(self, sagemaker: Any, page_size: int = 100):
        self.sm = sagemaker
        self.page_size = page_size

    def describe_cluster(self, name: str) -> dict[str, Any]:
        """DescribeCluster as returned (with Orchestrator, which the EKS adapter needs)."""
        with aws_call("DescribeCluster", f"cluster {name}"):
            out: dict[str, Any] = self.sm.describe_cluster(ClusterName=name)
        out.pop("ResponseMetadata", None)
        return out

    def cluster(self, name: str) -> Cluster:
        return self.cluster_of(self.describe_cluster(name), name)

    @staticmethod
    def cluster_of(described: dict[str, Any], name: str) -> Cluster:
        """InvalidInput (one line, naming the field) for a response the snapshot cannot use."""
        out = {"ClusterName": name, **described}  # ClusterName is optional in the model's DescribeClusterResponse
        return load_model(Cluster, out, f"DescribeCluster {name}")

    def tags(self, arn: str) -> dict[str, str]:
        out: dict[str, str] = {}
        with aws_call("ListTags", arn):
            for page in self.sm.get_paginator("list_tags").paginate(ResourceArn=arn):
                out.update({t["Key"]: t.get("Value", "") for t in page.get("Tags", [])})
        return out

    def quota_tags(self, quotas: tuple[ComputeQuota, ...]) -> dict[str, dict[str, str]]:
        """Tags of each quota by ComputeQuotaId (ListTags on its ARN; a quota without an ARN is skipped)."""
        return {q.ComputeQuotaId: self.tags(q.ComputeQuotaArn) for q in quotas if q.ComputeQuotaArn}

    def nodes(self, cluster_name: str) -> tuple[ClusterNode, ...]:
        out: list[ClusterNode] = []
        with aws_call("ListClusterNodes", f"cluster {cluster_name}"):
            pages = self.sm.get_paginator("list_cluster_nodes").paginate(
                ClusterName=cluster_name, PaginationConfig={"PageSize": self.page_size})
            for page in pages:
                out += [load_model(ClusterNode, n, f"ListClusterNodes {cluster_name} ClusterNodeSummaries")
                        for n in page.get("ClusterNodeSummaries", [])]
        return tuple(sorted(out, key=lambda n: (n.InstanceGroupName, n.InstanceId)))

    def quota_ids(self, cluster_arn: str) -> list[str]:
        ids: list[str] = []
        with aws_call("ListComputeQuotas", f"cluster {cluster_arn}"):
            pages = self.sm.get_paginator("list_compute_quotas").paginate(
                ClusterArn=cluster_arn, SortBy="Name", SortOrder="Ascending",
                PaginationConfig={"PageSize": self.page_size})
            for page in pages:
                ids += [s["ComputeQuotaId"] for s in page.get("ComputeQuotaSummaries", [])
                        if s.get("Status") not in GONE_STATUSES]
        return ids

    def quota(self, quota_id: str) -> ComputeQuota:
        with aws_call("DescribeComputeQuota", f"quota {quota_id}"):
            out = dict(self.sm.describe_compute_quota(ComputeQuotaId=quota_id))
        out.pop("ResponseMetadata", None)
        return load_model(ComputeQuota, out, f"DescribeComputeQuota {quota_id}")

    def quotas(self, cluster_arn: str) -> tuple[ComputeQuota, ...]:
        """Every live quota of the cluster, described in full (with its version), sorted by team."""
        quotas = [self.quota(i) for i in self.quota_ids(cluster_arn)]
        return tuple(sorted((q for q in quotas if q.Status not in GONE_STATUSES), key=lambda q: q.team))
