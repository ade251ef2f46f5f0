"""EventBridge (HyperPod events, our alarms, the schedule) → at most one rebalance run per cluster."""

from datetime import timedelta
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from rebalancer.app import config, wiring
from rebalancer.app.observability import logger, metrics, tracer, transient_failures_counted
from rebalancer.app.trigger.start import Starter

METRIC = {"started": "RunsStarted", "debounced": "EventsDebounced", "ignored": "EventsIgnored",
          "irrelevant": "EventsIgnored", "malformed": "MalformedEvents",
          "blocked": "LocksUnreadable"}


@logger.inject_lambda_context(correlation_id_path="id")
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], _context: LambdaContext) -> dict[str, Any]:
    cfg = config.load(config.TriggerConfig)
    starter = Starter(store=wiring.store(), sfn=wiring.client("stepfunctions"), state_machine_arn=cfg.state_machine_arn,
                      managed=cfg.managed_clusters, lock_ttl=timedelta(seconds=cfg.lock_ttl_seconds),
                      debounce=timedelta(seconds=cfg.debounce_seconds), clock=wiring.clock,
                      sagemaker=lambda: wiring.client("sagemaker"), event_gap=timedelta(seconds=cfg.event_gap_seconds))
    with transient_failures_counted("trigger"):  # throttled by Step Functions: EventBridge retries the event
        outcome = starter.handle(event)
    metrics.add_metric(name=METRIC[outcome.status], unit=MetricUnit.Count, value=1)
    return outcome.as_dict()
