"""Clients and adapters, made lazily on first use and reused for the life of the process (a warm Lambda).

Every handler imports this module, so it imports nothing at module level beyond config: each factory imports what it
builds, and a handler's cold start pays only for what that handler uses (the trigger never loads the approvals,
Slack or the planning engine; kubernetes loads when collect first reads Kueue).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

from rebalancer.app import config

if TYPE_CHECKING:
    from rebalancer.adapters.dynamodb.store import Store
    from rebalancer.app.approvals.decisions import Approvals
    from rebalancer.app.approvals.http import ApprovalApi
    from rebalancer.app.notifications.messages import Channel
    from rebalancer.app.observe import Imbalance
    from rebalancer.domain.snapshot import Snapshot


def preload(*modules: str) -> None:
    """Imports what a handler uses on every call but wiring builds lazily (other handlers never do): called at a
    handler's module level, so the cold start pays it at init, where it is seen, and not inside the first call."""
    for name in modules:
        importlib.import_module(name)


@cache
def client(service: str) -> Any:
    import boto3

    return boto3.client(service)  # type: ignore[call-overload]


@cache
def store() -> Store:
    from rebalancer.adapters.dynamodb.store import Store

    return Store(config.load(config.EnvConfig).table_name)


def secret(arn: str) -> str:
    from aws_lambda_powertools.utilities import parameters

    value = parameters.get_secret(arn, max_age=300)
    return value if isinstance(value, str) else bytes(value).decode()


def channels(cfg: config.NotifyConfig) -> list[Channel]:
    from rebalancer.app.notifications.messages import SlackChannel, SnsChannel

    out: list[Channel] = [SnsChannel(client("sns"), cfg.topic_arn)]
    if cfg.slack_webhook_secret_arn:
        out.append(SlackChannel(secret(cfg.slack_webhook_secret_arn).strip()))
    return out


def reset() -> None:
    """Forget every cached client and configuration (tests, after changing the environment or the endpoint)."""
    client.cache_clear()
    store.cache_clear()
    aws_clients.cache_clear()
    config.load.cache_clear()
    quota_tags_seen.clear()


# --- adapters ----------------------------------------------------------------------------------------------------
# How collect reaches Kueue: by default the cluster's EKS API (endpoint from eks:DescribeCluster, a bearer token
# from presigned STS). The local stack and tests replace it with a client of a loopback Kueue API server.
KubeClientFactory = Callable[[dict[str, Any]], Any]
kube_client_factory: KubeClientFactory | None = None
# Quota tags by ARN, read once per warm Lambda (rebalancer.adapters.sagemaker.cluster.SageMakerReader.quota_tags).
quota_tags_seen: dict[str, dict[str, str]] = {}


@cache
def aws_clients() -> Any:
    from rebalancer.adapters.aws import AwsClients

    return AwsClients()


def snapshot_reader() -> Callable[[str], Snapshot]:
    """rebalancer.adapters.collect: SageMaker capacity and quotas, Kueue demand, CloudWatch utilization."""
    from rebalancer.adapters.collect import collect_snapshot
    from rebalancer.app.observability import logger

    def read(cluster_name: str) -> Snapshot:
        collected = collect_snapshot(cluster_name, aws_clients(), now=store().now(), kube=kube_client_factory,
                                     check_prerequisites=True, known_tags=quota_tags_seen)
        for warning in collected.warnings:
            logger.warning("collect", extra={"cluster": cluster_name, "warning": warning})
        return collected.snapshot

    return read


def writer(*, poll_once: bool = False) -> Any:
    from rebalancer.adapters.sagemaker.quota_writer import Poller, QuotaWriter

    poller = Poller(sleep=lambda _s: None, timeout=0.0) if poll_once else Poller()
    return QuotaWriter(aws_clients().client("sagemaker"), poller=poller)


def scheduler_configs(*, poll_once: bool = False) -> Any:
    """rebalancer.adapters.sagemaker.scheduler_config.SchedulerConfigClient, polled like the quota writer."""
    from rebalancer.adapters.sagemaker.quota_writer import Poller
    from rebalancer.adapters.sagemaker.scheduler_config import SchedulerConfigClient

    poller = Poller(sleep=lambda _s: None, timeout=0.0) if poll_once else Poller()
    return SchedulerConfigClient(aws_clients().client("sagemaker"), poller=poller)


T = TypeVar("T")


def once(function: str, key: str, context: Any, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Powertools idempotency keyed on the execution: a retried invocation returns the first result."""
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function

    cfg = IdempotencyConfig(expires_after_seconds=24 * 3600)
    cfg.register_lambda_context(context)

    @idempotent_function(data_keyword_argument="key", persistence_store=store().idempotency_layer(function),
                         config=cfg)  # type: ignore[untyped-decorator]
    def run(key: str) -> dict[str, Any]:  # noqa: ARG001 (the idempotency key)
        return work()

    result: dict[str, Any] = run(key=key)
    return result


def approvals(cfg: config.ApprovalConfig) -> Approvals:
    from rebalancer.app.approvals.decisions import Approvals
    from rebalancer.app.approvals.signing import LinkSigner

    return Approvals(store=store(), sfn=client("stepfunctions"),
                     signer=LinkSigner(secret(cfg.approval_signing_secret_arn).encode()), channels=channels(cfg))


def approval_api(cfg: config.ApprovalConfig) -> ApprovalApi:
    """The HTTP side (resolver, pages, Slack endpoint): imported only by the requests that need it."""
    from rebalancer.app.approvals.http import ApprovalApi

    signing = secret(cfg.slack_signing_secret_arn).strip() if cfg.slack_signing_secret_arn else None
    return ApprovalApi(approvals(cfg), slack_signing_secret=signing, oidc_issuer=cfg.approval_oidc_issuer or None)


def publish_team_metrics(m: Imbalance) -> None:
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    from rebalancer.app.observability import NAMESPACE

    for team in m.teams:
        for name, value in (("IdleAllocatedAccelerators", team.idle), ("PendingAccelerators", team.pending)):
            with single_metric(name=name, unit=MetricUnit.Count, value=value, namespace=NAMESPACE) as metric:
                metric.add_dimension(name="ClusterName", value=m.cluster)
                metric.add_dimension(name="Team", value=team.team)


class BudgetOutlet:
    """Budget messages on the notification channels (made on first use: no secret is read otherwise) and the
    per-team budget metrics (Powertools, EMF)."""

    def __init__(self, cfg: config.NotifyConfig, cluster: str):
        self.cfg, self.cluster = cfg, cluster

    def send(self, kind: str, lines: tuple[str, ...]) -> None:
        from rebalancer.app.notifications.messages import Message
        from rebalancer.app.observability import logger

        message = Message.model_validate({"kind": kind, "cluster": self.cluster, "notes": lines})
        for channel in channels(self.cfg):
            result = channel.send(message)
            if not result.ok:
                logger.warning("budget message not delivered", extra={"channel": result.channel,
                                                                       "error": result.error})

    def record(self, cluster: str, used: dict[str, tuple[float, float]]) -> None:
        from aws_lambda_powertools.metrics import MetricUnit, single_metric

        from rebalancer.app.observability import NAMESPACE

        for team, (percent, hours) in sorted(used.items()):
            for name, value, unit in (("BudgetUsedPercent", percent, MetricUnit.Percent),
                                      ("BudgetAcceleratorHours", hours, MetricUnit.Count)):
                with single_metric(name=name, unit=unit, value=value, namespace=NAMESPACE) as metric:
                    metric.add_dimension(name="ClusterName", value=cluster)
                    metric.add_dimension(name="Team", value=team)
