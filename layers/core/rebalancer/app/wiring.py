"""The process's AWS clients and store, made on first use and reused for the life of the process (a warm Lambda).

Every handler imports this module, so it holds only the clients, the store and the clock, which all of them use but
two: Verify loads the store without using it, the trigger the SageMaker clients (a few modules each, the price of one
plain module).
What some handlers run and others never do lives beside its concept, imported at module level by the handlers that run
it: `workflow/snapshots.py` (how Collect and Observe read a cluster), `workflow/writers.py` (the quota and
scheduler-config writers), `workflow/idempotency.py` (Apply and Rollback run once per execution),
`notifications/outlets.py` (secrets, the channels, the budget outlet), `approvals/wiring.py` (the approvals and their
HTTP API). A handler's cold start is then what its imports say, kept honest by
tests/infra/test_fresh_interpreter_imports.py, not by lazy imports.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import boto3

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.dynamodb.store import Store
from rebalancer.app import config
from rebalancer.domain.clock import Clock, system_clock

# The functions' time of day: every use case and the store take it from here. The local stack and the tests put
# their clock (rebalancer_tools.fakes.ticking_clock) in its place, then call reset().
clock: Clock = system_clock


@cache
def client(service: str) -> Any:
    return boto3.client(service)  # type: ignore[call-overload]


@cache
def store() -> Store:
    return Store(config.load(config.EnvConfig).table_name, now=clock)


@cache
def aws_clients() -> AwsClients:
    return AwsClients()


def reset() -> None:
    """Forget every cached client and configuration (tests, after changing the environment or the endpoint)."""
    client.cache_clear()
    store.cache_clear()
    aws_clients.cache_clear()
    config.load.cache_clear()
    quota_tags_seen.clear()


# How collect reaches Kueue: by default the cluster's EKS API (endpoint from eks:DescribeCluster, a bearer token
# from presigned STS). The local stack and tests replace it with a client of a loopback Kueue API server.
KubeClientFactory = Callable[[dict[str, Any]], Any]
kube_client_factory: KubeClientFactory | None = None
# Quota tags by ARN, read once per warm Lambda (rebalancer.adapters.sagemaker.quotas.QuotaReader.quota_tags).
quota_tags_seen: dict[str, dict[str, str]] = {}
