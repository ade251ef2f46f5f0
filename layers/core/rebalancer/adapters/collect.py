"""`collect`: a complete snapshot of a cluster from SageMaker (capacity, quotas), Kueue (demand) and CloudWatch
(utilization). Kueue and CloudWatch are optional; what could not be read is said in the warnings.

The Kubernetes side (eks_auth, kueue and the `kubernetes` client, a third of a second to import) loads when Kueue is
first read, not when a handler that may read it is imported.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from rebalancer.adapters import prerequisites
from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.cloudwatch import CloudWatchReader
from rebalancer.adapters.sagemaker.cluster import SageMakerReader
from rebalancer.adapters.sagemaker.quotas import SchedulerConfigReader
from rebalancer.domain.quotas import ClusterSchedulerConfig, ComputeQuota
from rebalancer.domain.snapshot import (
    Cluster,
    ClusterNode,
    ClusterOperation,
    Demand,
    PendingWorkload,
    RunningWorkload,
    Snapshot,
    TrainingPlan,
    Utilization,
)
from rebalancer.errors import PermanentError, RebalancerError
from rebalancer.parsing.text import bounded_lines

if TYPE_CHECKING:
    from kubernetes import client as k8s


@dataclass(frozen=True, slots=True)
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


# Collect's warnings (each logged by the Lambda, printed by the CLI): each once, cut, at most this many and a count.
WARNINGS_MAX = 100
WARNING_MAX_BYTES = 1024


@dataclass(frozen=True, slots=True)
class Collected:
    snapshot: Snapshot
    warnings: tuple[str, ...] = ()


def collect_snapshot(cluster_name: str, clients: AwsClients, *, now: datetime,
                     kube: KubeAccess | Callable[[dict[str, Any]], k8s.ApiClient | None] | None = None,
                     metrics_window: timedelta | None = timedelta(hours=1), page_size: int = 100,
                     check_prerequisites: bool = False,
                     known_tags: MutableMapping[str, dict[str, str]] | None = None) -> Collected:
    """Read everything a plan needs. `now` stamps the snapshot and ends the metrics window. `kube` is how to reach
    Kueue: a KubeAccess, or a factory taking the DescribeCluster output (what the Lambdas inject).
    `check_prerequisites`: check the task-governance add-on, Kueue access and Container Insights
    (rebalancer.adapters.prerequisites) into `snapshot.governance` and the warnings. `known_tags`: quota tags read
    by an earlier collect of this process, by ARN (see SageMakerSide.read)."""
    kube = kube or KubeAccess()
    warnings: list[str] = []
    sm = SageMakerSide.read(cluster_name, clients, page_size, known_tags, warnings)
    api = kube.api_client(clients, sm.described) if isinstance(kube, KubeAccess) else kube(sm.described)
    # Not reading Kueue because the caller chose so (KubeAccess "none") is the caller's to say, in its own terms.
    chosen = isinstance(kube, KubeAccess) and kube.mode == "none"
    kueue = KubeSide.read(api, check_prerequisites, [] if chosen else warnings, autoscaled=sm.cluster.autoscaled)
    eks_name = _eks_name(sm.described)
    utilization = {}
    if metrics_window is not None:
        teams = sorted({q.team for q in sm.quotas} | set(kueue.demand))
        utilization = _utilization(clients, eks_name, teams, now - metrics_window, now, warnings)
    governance = None
    if check_prerequisites:
        governance = prerequisites.governance_for_collect(clients.client("eks"), clients.client("cloudwatch"),
                                                          eks_name, kueue.access)
        warnings += governance.problems
    snapshot = Snapshot(taken_at=now, cluster=sm.cluster, nodes=sm.nodes, quotas=sm.quotas, demand=kueue.demand,
                        mig=kueue.mig, utilization=utilization, scheduler_config=sm.scheduler_config,
                        governance=governance, quota_tags=sm.quota_tags, node_health=kueue.node_health,
                        training_plans=sm.training_plans, operations=sm.operations,
                        autoscaling_max_nodes=kueue.autoscaling_max_nodes,
                        topology_pending=kueue.topology, topology_unlisted=kueue.topology_unlisted,
                        pending_workloads=kueue.pending_workloads, running_workloads=kueue.running_workloads)
    return Collected(snapshot, tuple(bounded_lines(warnings, limit=WARNINGS_MAX, line_bytes=WARNING_MAX_BYTES,
                                                   rest="… and {n} more collect warnings")))


@dataclass(frozen=True, slots=True)
class SageMakerSide:
    """What SageMaker says: the cluster, its nodes, its quotas (with their tags) and its scheduler config."""

    described: dict[str, Any]
    cluster: Cluster
    nodes: tuple[ClusterNode, ...]
    quotas: tuple[ComputeQuota, ...]
    quota_tags: dict[str, dict[str, str]]
    scheduler_config: ClusterSchedulerConfig | None
    training_plans: dict[str, TrainingPlan]
    operations: tuple[ClusterOperation, ...]

    @classmethod
    def read(cls, cluster_name: str, clients: AwsClients, page_size: int,
             known_tags: MutableMapping[str, dict[str, str]] | None, warnings: list[str]) -> SageMakerSide:
        sm = SageMakerReader(clients.client("sagemaker"), page_size=page_size)
        described = sm.describe_cluster(cluster_name)
        cluster = sm.cluster_of(described, cluster_name)
        nodes = sm.nodes(cluster.ClusterName)
        try:  # capacity that will go: without them a plan's capacity is taken as lasting
            plans = sm.training_plans(cluster)
        except RebalancerError as e:
            plans = {}
            warnings.append(f"training plans not read, so capacity they take away is not foreseen: {e}")
        operations = _operations(sm, cluster.ClusterName, warnings)
        quotas = sm.quotas(cluster.ClusterArn)
        try:
            quota_tags = sm.quota_tags(quotas, known_tags)
        except RebalancerError as e:  # without them a quota CloudFormation created cannot be told apart
            quota_tags = {}
            warnings.append(f"quota tags not read, so quotas created by CloudFormation are not recognised: {e}")
        try:
            scheduler_config = SchedulerConfigReader(clients.client("sagemaker")).read(cluster.ClusterArn)
        except RebalancerError as e:  # only a policy with a `cluster` section needs it (a Create is then refused)
            scheduler_config = None
            warnings.append(f"scheduler config not read: {e}")
        return cls(described, cluster, nodes, quotas, quota_tags, scheduler_config, plans, operations)


def _operations(sm: SageMakerReader, cluster_name: str, warnings: list[str]) -> tuple[ClusterOperation, ...]:
    """Operations in progress. Where they cannot be read (AccessDenied: IAM's data does not list the actions yet,
    so AWS may authorize them under other names) the groups' ActiveOperations still say what scales."""
    try:
        return sm.operations(cluster_name)
    except RebalancerError as e:
        warnings.append(f"cluster operations not read, so only DescribeCluster's ActiveOperations (Scaling) hold "
                        f"quotas and a DeepHealthCheck in progress is not seen: {e}")
        return ()


@dataclass(frozen=True, slots=True)
class KubeSide:
    """What the cluster's Kubernetes API says: demand per team (Kueue), MIG partitions (node allocatable), and,
    when prerequisites are checked, whether Kueue could be listed."""

    demand: dict[str, dict[str, Demand]] = field(default_factory=dict)
    mig: dict[str, dict[str, int]] = field(default_factory=dict)
    access: prerequisites.Kueue | None = None
    node_health: dict[str, str] = field(default_factory=dict)
    autoscaling_max_nodes: dict[str, int] = field(default_factory=dict)
    topology: dict[str, tuple[str, ...]] = field(default_factory=dict)
    pending_workloads: tuple[PendingWorkload, ...] = ()
    topology_unlisted: dict[str, int] = field(default_factory=dict)
    running_workloads: tuple[RunningWorkload, ...] = ()

    @classmethod
    def read(cls, api: k8s.ApiClient | None, check_access: bool, warnings: list[str], *,
             autoscaled: bool = False) -> KubeSide:
        if api is None:
            warnings.append("Kueue not read: every team's demand is taken as zero")
            return cls()
        from rebalancer.adapters.kubernetes.kueue import KueueReader, NodeReader

        with api:
            access = prerequisites.check_kueue_access(prerequisites.kueue_lister(api)) if check_access else None
            kueue = KueueReader(api).read()
            warnings += kueue.warnings
            mig: dict[str, dict[str, int]] = {}
            health: dict[str, str] = {}
            try:
                mig, health, node_warnings = NodeReader(api).read()
                warnings += node_warnings
            except RebalancerError as e:  # MIG pools and HyperPod's health labels need it; say so, do not fail
                warnings.append(f"nodes not read (MIG capacity, HyperPod health labels): {e}")
            ceilings: dict[str, int] = {}
            if autoscaled:  # the autoscaler's ceiling; without it the policy's cluster.autoscaling.max_nodes
                from rebalancer.adapters.kubernetes.karpenter import max_nodes

                try:
                    ceilings = max_nodes(api)
                except RebalancerError as e:
                    warnings.append(f"Karpenter NodePool limits not read: {e}")
        return cls(kueue.demand, mig, access, health, ceilings, kueue.topology, kueue.workloads,
                   kueue.topology_unlisted, kueue.running)


def _utilization(clients: AwsClients, eks_name: str | None, teams: list[str], start: datetime, end: datetime,
                 warnings: list[str]) -> dict[str, Utilization]:
    if eks_name is None:
        warnings.append("utilization not read: the cluster has no EKS orchestrator to name in Container Insights")
        return {}
    if not teams:
        return {}
    try:
        return CloudWatchReader(clients.client("cloudwatch")).utilization(eks_name, teams, start, end)
    except RebalancerError as e:  # metrics are informational: a snapshot without them is still useful
        warnings.append(f"utilization not read: {e}")
        return {}


def _eks_name(described: dict[str, Any]) -> str | None:
    from rebalancer.adapters.kubernetes.eks_auth import eks_cluster_name_of

    try:
        return eks_cluster_name_of(described)
    except PermanentError:
        return None
