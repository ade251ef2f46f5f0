"""Reading a HyperPod cluster from SageMaker: the cluster, its nodes, training plans and operations in progress as
snapshot models, and (QuotaReader's) its compute quotas."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rebalancer.adapters.aws import aws_call
from rebalancer.adapters.sagemaker.quotas import QuotaReader
from rebalancer.domain.snapshot import Cluster, ClusterNode, ClusterOperation, TrainingPlan
from rebalancer.parsing.validation import load_model


class SageMakerReader(QuotaReader):
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
