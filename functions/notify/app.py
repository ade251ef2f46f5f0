"""Notify: SNS plain text and Slack Block Kit about what the run did, or the run's news (budget thresholds,
reservation windows); never fails a rebalance."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from rebalancer.app import config, wiring
from rebalancer.app.notifications.notify import notify
from rebalancer.app.notifications.outlets import channels, team_channel
from rebalancer.app.observability import logger, tracer
from rebalancer.app.workflow import state


@logger.inject_lambda_context(correlation_id_path="run.execution_name")
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], _context: LambdaContext) -> dict[str, Any]:
    cfg = config.load(config.NotifyConfig)
    return notify(state.parse(state.NotifyInput, event, "notify"), store=wiring.store(), channels=channels(cfg),
                  team_channel=team_channel)
