"""How Collect and Observe read a cluster: `adapters.collect` over the process's clients and the Kueue client factory,
its warnings logged."""

from __future__ import annotations

from collections.abc import Callable

from rebalancer.adapters.collect import collect_snapshot
from rebalancer.app import wiring
from rebalancer.app.observability import logger
from rebalancer.domain.snapshot import Snapshot


def snapshot_reader() -> Callable[[str], Snapshot]:
    """SageMaker capacity and quotas, Kueue demand, CloudWatch utilization."""

    def read(cluster_name: str) -> Snapshot:
        collected = collect_snapshot(cluster_name, wiring.aws_clients(), now=wiring.clock(),
                                     kube=wiring.kube_client_factory, check_prerequisites=True,
                                     known_tags=wiring.quota_tags_seen)
        for warning in collected.warnings:
            logger.warning("collect", extra={"cluster": cluster_name, "warning": warning})
        return collected.snapshot

    return read
