"""How HyperPod task governance names a team's Kubernetes objects: namespace `hyperpod-ns-<team>`, ClusterQueue
`hyperpod-ns-<team>-clusterqueue`. Apart from the Kueue reader so that CloudWatch's Container Insights queries can use
the names without loading the `kubernetes` client."""

from __future__ import annotations

TEAM_NAMESPACE_PREFIX = "hyperpod-ns-"
CLUSTER_QUEUE_SUFFIX = "-clusterqueue"


def team_of_cluster_queue(name: str) -> str | None:
    if name.startswith(TEAM_NAMESPACE_PREFIX) and name.endswith(CLUSTER_QUEUE_SUFFIX):
        return name[len(TEAM_NAMESPACE_PREFIX):-len(CLUSTER_QUEUE_SUFFIX)] or None
    return None


def team_of_namespace(namespace: str) -> str | None:
    if not namespace.startswith(TEAM_NAMESPACE_PREFIX):
        return None
    return namespace[len(TEAM_NAMESPACE_PREFIX):] or None
