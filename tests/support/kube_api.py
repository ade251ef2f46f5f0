"""Loopback Kubernetes API server serving Kueue objects (lives in the package, `rebalancer_tools.kube_fake`,
because the local demo uses it too)."""

from rebalancer_tools.kube_fake import KubeState, cluster_queue, node, pod_set, serve, workload

__all__ = ["KubeState", "cluster_queue", "node", "pod_set", "serve", "workload"]
