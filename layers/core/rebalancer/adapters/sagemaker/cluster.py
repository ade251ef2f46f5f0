"""Reading a HyperPod cluster from SageMaker: the cluster, its nodes and its compute quotas, as snapshot models."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from rebalancer.adapters.aws import aws_call
from rebalancer.domain.snapshot import Cluster, ClusterNode, ClusterOperation, ComputeQuota, TrainingPlan
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

    def quota_tags(self, quotas: tuple[ComputeQuota, ...],
                   known: MutableMapping[str, dict[str, str]] | None = None) -> dict[str, dict[str, str]]:
        """Tags of each quota by ComputeQuotaId (ListTags on its ARN; a quota without an ARN is skipped).
        `known`: tags already read, by ARN, and where new reads go. The one tag the planner reads does not change:
        ownership reads `aws:cloudformation:stack-name`, which CloudFormation sets when it
        creates the quota and nobody may edit (the `aws:` prefix is reserved), and an ARN names one quota for
        life. So a warm Lambda reads each quota's tags once, and a run lists tags only of quotas new to it."""
        known = {} if known is None else known
        out: dict[str, dict[str, str]] = {}
        for q in quotas:
            if not q.ComputeQuotaArn:
                continue
            if q.ComputeQuotaArn not in known:
                known[q.ComputeQuotaArn] = self.tags(q.ComputeQuotaArn)
            out[q.ComputeQuotaId] = known[q.ComputeQuotaArn]
        return out

    def nodes(self, cluster_name: str) -> tuple[ClusterNode, ...]:
        out: list[ClusterNode] = []
        with aws_call("ListClusterNodes", f"cluster {cluster_name}"):
            pages = self.sm.get_paginator("list_cluster_nodes").paginate(
                ClusterName=cluster_name, PaginationConfig={"PageSize": self.page_size})
            for page in pages:
                out += [load_model(ClusterNode, n, f"ListClusterNodes {cluster_name} ClusterNodeSummaries")
                        for n in page.get("ClusterNodeSummaries", [])]
        return tuple(sorted(out, key=lambda n: (n.InstanceGroupName, n.InstanceId)))

    def training_plans(self, cluster: Cluster) -> dict[str, TrainingPlan]:
        """DescribeTrainingPlan for each plan an instance group runs on (a cluster has few)."""
        out: dict[str, TrainingPlan] = {}
        for arn in sorted({g.TrainingPlanArn for g in cluster.InstanceGroups if g.TrainingPlanArn}):
            with aws_call("DescribeTrainingPlan", f"training plan {arn}"):
                got = dict(self.sm.describe_training_plan(TrainingPlanName=arn.rsplit("/", 1)[-1]))
            got.pop("ResponseMetadata", None)
            out[arn] = load_model(TrainingPlan, {"TrainingPlanArn": arn, **got}, f"DescribeTrainingPlan {arn}")
        return out

    def operations(self, cluster_name: str) -> tuple[ClusterOperation, ...]:
        """The cluster's operations in progress: ListClusterOperations (Status InProgress, every page), then
        DescribeClusterOperation for the groups and nodes each names. Few at a time (one per group at most)."""
        summaries: list[dict[str, Any]] = []
        with aws_call("ListClusterOperations", f"cluster {cluster_name}"):
            pages = self.sm.get_paginator("list_cluster_operations").paginate(
                ClusterName=cluster_name, Status="InProgress", PaginationConfig={"PageSize": self.page_size})
            for page in pages:
                summaries += page.get("ClusterOperationSummaries", [])
        out = []
        for s in summaries:
            op_id = str(s.get("OperationId"))
            with aws_call("DescribeClusterOperation", f"operation {op_id} of cluster {cluster_name}"):
                got = dict(self.sm.describe_cluster_operation(ClusterName=cluster_name, OperationId=op_id))
            out.append(load_model(ClusterOperation, operation_fields({**s, **got}),
                                  f"DescribeClusterOperation {op_id}"))
        return tuple(sorted(out, key=lambda o: o.OperationId))

    def quota_summaries(self, cluster_arn: str) -> list[dict[str, Any]]:
        """ListComputeQuotas, every page (at most 100 quotas a page): one call per hundred quotas."""
        out: list[dict[str, Any]] = []
        with aws_call("ListComputeQuotas", f"cluster {cluster_arn}"):
            pages = self.sm.get_paginator("list_compute_quotas").paginate(
                ClusterArn=cluster_arn, SortBy="Name", SortOrder="Ascending",
                PaginationConfig={"PageSize": self.page_size})
            for page in pages:
                out += [s for s in page.get("ComputeQuotaSummaries", []) if s.get("Status") not in GONE_STATUSES]
        return out

    def quota_ids(self, cluster_arn: str) -> list[str]:
        return [s["ComputeQuotaId"] for s in self.quota_summaries(cluster_arn)]

    def quota(self, quota_id: str) -> ComputeQuota:
        with aws_call("DescribeComputeQuota", f"quota {quota_id}"):
            out = dict(self.sm.describe_compute_quota(ComputeQuotaId=quota_id))
        out.pop("ResponseMetadata", None)
        return load_model(ComputeQuota, out, f"DescribeComputeQuota {quota_id}")

    def quotas(self, cluster_arn: str) -> tuple[ComputeQuota, ...]:
        """Every live quota of the cluster, sorted by team. A summary carries what a plan reads (config, target,
        version, activation state); a quota is described only when its summary lacks one of them (the model makes
        ComputeQuotaVersion and ComputeQuotaConfig optional in a summary), so 1,000 quotas cost 10 calls, not 1,001."""
        quotas = [load_model(ComputeQuota, s, f"ListComputeQuotas {cluster_arn} ComputeQuotaSummaries")
                  if summary_is_complete(s) else self.quota(s["ComputeQuotaId"])
                  for s in self.quota_summaries(cluster_arn)]
        return tuple(sorted((q for q in quotas if q.Status not in GONE_STATUSES), key=lambda q: q.team))


# What a summary must hold to stand for a DescribeComputeQuota (what planning and apply read).
SUMMARY_FIELDS = ("ComputeQuotaId", "Name", "ComputeQuotaVersion", "Status", "ComputeQuotaTarget",
                  "ComputeQuotaConfig")


def summary_is_complete(summary: dict[str, Any]) -> bool:
    return all(summary.get(f) is not None for f in SUMMARY_FIELDS)


def operation_fields(described: Mapping[str, Any]) -> dict[str, Any]:
    """A ClusterOperation's fields from a DescribeClusterOperation response: the groups ScalingDetails and
    DeepHealthCheckDetails name, the nodes a deep health check names (none: the whole group), and each scaled
    group's desired TargetCount."""
    scaling = described.get("ScalingDetails") or ()
    checks = described.get("DeepHealthCheckDetails") or ()
    groups = [d.get("InstanceGroupName") for d in (*scaling, *checks)]
    targets = {d["InstanceGroupName"]: d["Desired"]["TargetCount"] for d in scaling
               if d.get("InstanceGroupName") and (d.get("Desired") or {}).get("TargetCount") is not None}
    out = {k: described.get(k) for k in ("OperationId", "Type", "Status", "CreationTime")}
    return {**out, "InstanceGroupNames": tuple(dict.fromkeys(g for g in groups if g)),
            "InstanceIds": tuple(i for d in checks for i in d.get("InstanceIds") or ()), "TargetCounts": targets}
