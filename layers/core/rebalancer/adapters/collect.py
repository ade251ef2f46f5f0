"""`collect`: a complete snapshot of a cluster from SageMaker (capacity, quotas), Kueue (demand) and CloudWatch
(utilization). Kueue and CloudWatch are optional; what could not be read is said in the warnings.

The Kubernetes side (eks_auth, kueue and the `kubernetes` client, a third of a second to import) loads when Kueue is
first read, not when a handler that may read it is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from rebalancer.adapters import prerequisites
from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.cloudwatch import CloudWatchReader
from rebalancer.adapters.sagemaker.cluster import SageMakerReader
from rebalancer.adapters.sagemaker.scheduler_config import SchedulerConfigClient
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import PermanentError, RebalancerError

if TYPE_CHECKING:
    from kubernetes import client as k8s


@dataclass(frozen=True)
class KubeAccess:
    """How to reach the cluster's Kubernetes API: EKS (endpoint, CA and token from AWS; the default), a kubeconfig
    context, a plain URL (the loopback fake, for the demo and tests), or not at all."""

    mode: Literal["eks", "context", "url", "none"] = "eks"
    context: str | None = None
    url: str | None = None

    def api_client(self, clients: AwsClients, described: dict[str, Any]) -> k8s.ApiClient | None:
        if self.mode == "none":
            return None
        from rebalancer.adapters.kubernetes.eks_auth import (
            api_client_for_context,
            api_client_for_eks,
            api_client_with_token,
            eks_cluster_name_of,
        )

        if self.mode == "context":
            return api_client_for_context(self.context)
        if self.mode == "url":
            assert self.url
            return api_client_with_token(self.url, lambda: "local")
        return api_client_for_eks(clients, eks_cluster_name_of(described))


@dataclass(frozen=True)
class Collected:
    snapshot: Snapshot
    warnings: tuple[str, ...] = ()


def collect_snapshot(cluster_name: str, clients: AwsClients, *, now: datetime,
                     kube: KubeAccess | Callable[[dict[str, Any]], k8s.ApiClient | None] | None = None,
                     metrics_window: timedelta | None = timedelta(hours=1), page_size: int = 100,
                     check_prerequisites: bool = False) -> Collected:
    """Read everything a plan needs. `now` stamps the snapshot and ends the metrics window. `kube` is how to reach
    Kueue: a KubeAccess, or a factory taking the DescribeCluster output (what the Lambdas inject).
    `check_prerequisites`: check the task-governance add-on, Kueue access and Container Insights
    (rebalancer.adapters.prerequisites) into `snapshot.governance` and the warnings."""
    kube = kube or KubeAccess()
    warnings: list[str] = []
    sm = SageMakerReader(clients.client("sagemaker"), page_size=page_size)
    described = sm.describe_cluster(cluster_name)
    cluster = sm.cluster_of(described, cluster_name)
    nodes = sm.nodes(cluster.ClusterName)
    quotas = sm.quotas(cluster.ClusterArn)
    try:
        quota_tags = sm.quota_tags(quotas)
    except RebalancerError as e:  # without them a quota CloudFormation created cannot be told apart
        quota_tags = {}
        warnings.append(f"quota tags not read, so quotas created by CloudFormation are not recognised: {e}")
    try:
        scheduler_config = SchedulerConfigClient(clients.client("sagemaker")).read(cluster.ClusterArn)
    except RebalancerError as e:  # only a policy with a `cluster` section needs it (a Create is then refused)
        scheduler_config = None
        warnings.append(f"scheduler config not read: {e}")

    demand = {}
    mig: dict[str, dict[str, int]] = {}
    api = kube.api_client(clients, described) if isinstance(kube, KubeAccess) else kube(described)
    if api is None:
        warnings.append("Kueue not read (--no-kube): every team's demand is taken as zero")
    else:
        from rebalancer.adapters.kubernetes.kueue import KueueReader, NodeReader

        with api:
            if check_prerequisites:
                kueue_access = prerequisites.check_kueue_access(prerequisites.kueue_lister(api))
            kueue = KueueReader(api).read()
            demand = kueue.demand
            warnings += kueue.warnings
            try:
                mig, mig_warnings = NodeReader(api).mig_capacity()
                warnings += mig_warnings
            except RebalancerError as e:  # only MIG pools need it; say so rather than fail the snapshot
                warnings.append(f"MIG capacity not read: {e}")

    utilization = {}
    if metrics_window is not None:
        eks_name = _eks_name(described)
        teams = sorted({q.team for q in quotas} | set(demand))
        if eks_name is None:
            warnings.append("utilization not read: the cluster has no EKS orchestrator to name in Container Insights")
        elif teams:
            try:
                utilization = CloudWatchReader(clients.client("cloudwatch")).utilization(
                    eks_name, teams, now - metrics_window, now)
            except RebalancerError as e:  # metrics are informational: a snapshot without them is still useful
                warnings.append(f"utilization not read: {e}")

    governance = None
    if check_prerequisites:
        report = prerequisites.check_cluster(clients.client("eks"), clients.client("cloudwatch"), _eks_name(described))
        if api is not None and report.addon is not None:  # an EKS cluster: add what reading Kueue found
            report = prerequisites.ClusterReport((*report.checks, kueue_access.check), report.addon, kueue_access)
        governance = report.governance()
        warnings += governance.problems
    snapshot = Snapshot(taken_at=now, cluster=cluster, nodes=nodes, quotas=quotas, demand=demand, mig=mig,
                        utilization=utilization, scheduler_config=scheduler_config, governance=governance,
                        quota_tags=quota_tags)
    return Collected(snapshot, tuple(warnings))


def _eks_name(described: dict[str, Any]) -> str | None:
    from rebalancer.adapters.kubernetes.eks_auth import eks_cluster_name_of

    try:
        return eks_cluster_name_of(described)
    except PermanentError:
        return None
