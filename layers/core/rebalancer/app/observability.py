"""The one Logger, Tracer and Metrics of the Lambda side. Service name, namespace and level come from the template's
Globals (POWERTOOLS_SERVICE_NAME, POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_LOG_LEVEL)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from rebalancer.errors import TransientError

SERVICE = "hyperpod-rebalancer"
NAMESPACE = "HyperPodRebalancer"
TRANSIENT_FAILURES = "TransientFailures"  # per Step; template.yaml's PolicyPlanErrorsAlarm subtracts it

# X-Ray patches every library it knows that is installed unless told which: requests and sqlite3 among them, which
# nothing here calls (boto3 goes through botocore; Slack and the Kueue API through http.client). Importing them to
# patch them would add their imports to every cold start.
PATCHED = ("botocore", "httplib")

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE, patch_modules=PATCHED)
metrics = Metrics(service=SERVICE, namespace=NAMESPACE)

# At DEBUG these libraries log whole request and response bodies: GetSecretValue's answer (the Slack signing secret,
# the webhook URL), the webhook's own address, SendTaskSuccess's task token. Whatever the function's log level, they
# log at INFO at most; the service's own logger carries what a person debugging needs.
BODY_LOGGERS = ("botocore", "boto3", "urllib3", "slack_sdk")
for _name in BODY_LOGGERS:
    _library = logging.getLogger(_name)
    _library.setLevel(max(_library.getEffectiveLevel(), logging.INFO))


def publish_budget_usage(cluster: str, used: dict[str, tuple[float, float]]) -> None:
    """Per team with a budget: % used and accelerator-hours (BudgetUsedPercent, BudgetAcceleratorHours; dimensions
    ClusterName, Team), at every run the Plan step makes."""
    for team, (percent, hours) in sorted(used.items()):
        for name, value, unit in (("BudgetUsedPercent", percent, MetricUnit.Percent),
                                  ("BudgetAcceleratorHours", hours, MetricUnit.Count)):
            with single_metric(name=name, unit=unit, value=value, namespace=NAMESPACE) as metric:
                metric.add_dimension(name="ClusterName", value=cluster)
                metric.add_dimension(name="Team", value=team)


@contextmanager
def transient_failures_counted(step: str) -> Iterator[None]:
    """Counts a TransientError leaving the step (metric TransientFailures, dimension Step) before it goes on to the
    state machine's Retry: Lambda's own Errors metric counts every failure alike, this one tells the transient apart."""
    try:
        yield
    except TransientError:
        with single_metric(name=TRANSIENT_FAILURES, unit=MetricUnit.Count, value=1, namespace=NAMESPACE) as metric:
            metric.add_dimension(name="Step", value=step)
        raise
