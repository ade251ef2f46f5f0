"""The adapters the workflow's steps are given: the snapshot reader (Collect, and Observe), the quota and
scheduler-config writers (Apply, Verify, Rollback) and Powertools idempotency on the table (Apply, Rollback)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function

from rebalancer.adapters.collect import collect_snapshot
from rebalancer.adapters.sagemaker.quota_writer import Poller, QuotaWriter
from rebalancer.adapters.sagemaker.scheduler_config import SchedulerConfigClient
from rebalancer.app import wiring
from rebalancer.app.observability import logger
from rebalancer.domain.snapshot import Snapshot


def snapshot_reader() -> Callable[[str], Snapshot]:
    """SageMaker capacity and quotas, Kueue demand, CloudWatch utilization; collect's warnings logged."""

    def read(cluster_name: str) -> Snapshot:
        collected = collect_snapshot(cluster_name, wiring.aws_clients(), now=wiring.store().now(),
                                     kube=wiring.kube_client_factory, check_prerequisites=True)
        for warning in collected.warnings:
            logger.warning("collect", extra={"cluster": cluster_name, "warning": warning})
        return collected.snapshot

    return read


def _poller(poll_once: bool) -> Poller:
    return Poller(sleep=lambda _s: None, timeout=0.0) if poll_once else Poller()


def writer(*, poll_once: bool = False) -> QuotaWriter:
    return QuotaWriter(wiring.aws_clients().client("sagemaker"), poller=_poller(poll_once))


def scheduler_configs(*, poll_once: bool = False) -> SchedulerConfigClient:
    """Polled like the quota writer."""
    return SchedulerConfigClient(wiring.aws_clients().client("sagemaker"), poller=_poller(poll_once))


def once(function: str, key: str, context: Any, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Powertools idempotency keyed on the execution: a retried invocation returns the first result."""
    cfg = IdempotencyConfig(expires_after_seconds=24 * 3600)
    cfg.register_lambda_context(context)

    @idempotent_function(data_keyword_argument="key", persistence_store=wiring.store().idempotency_layer(function),
                         config=cfg)  # type: ignore[untyped-decorator]
    def run(key: str) -> dict[str, Any]:  # noqa: ARG001 (the idempotency key)
        return work()

    result: dict[str, Any] = run(key=key)
    return result
