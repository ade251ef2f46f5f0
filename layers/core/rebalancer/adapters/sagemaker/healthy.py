"""The healthy capacity of a cluster as the quota writer reads it just before a write: ListClusterNodes, each node's
instance type and status only (rebalancer.domain.healthy counts them), so the writing steps load no cluster shape."""

from __future__ import annotations

from typing import Any

from rebalancer.adapters.aws import aws_call
from rebalancer.domain.healthy import healthy_capacity


class NodeCapacity:
    def __init__(self, sagemaker: Any, page_size: int = 100):
        self.sm = sagemaker
        self.page_size = page_size

    def healthy(self, cluster: str) -> dict[str, float]:
        """Per instance type, what the cluster's counted nodes carry now. `cluster`: its name or ARN (the API takes
        either)."""
        nodes: list[tuple[str, str]] = []
        with aws_call("ListClusterNodes", f"cluster {cluster}"):
            pages = self.sm.get_paginator("list_cluster_nodes").paginate(
                ClusterName=cluster, PaginationConfig={"PageSize": self.page_size})
            for page in pages:
                nodes += [(str(n.get("InstanceType")), str((n.get("InstanceStatus") or {}).get("Status")))
                          for n in page.get("ClusterNodeSummaries", [])]
        return healthy_capacity(nodes)
