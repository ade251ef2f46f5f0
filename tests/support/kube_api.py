"""Loopback Kubernetes API server serving Kueue objects (lives in the package, `rebalancer_tools.fakes.kube`,
because the local demo uses it too)."""

from rebalancer_tools.fakes.kube import KubeState, cluster_queue, node, pod_set, serve, workload

__all__ = ["KubeState", "cluster_queue", "node", "pod_set", "serve", "workload"]
