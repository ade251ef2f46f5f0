"""Notify: SNS plain text and Slack Block Kit about what the run did; never fails a rebalance."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from rebalancer.app import config, wiring
from rebalancer.app.notifications.notify import notify
from rebalancer.app.observability import logger, tracer
from rebalancer.app.workflow import state

# The table's repositories, which wiring.store() builds on the first call and every call uses: loaded at init.
wiring.preload("rebalancer.adapters.dynamodb.store")


@logger.inject_lambda_context(correlation_id_path="state.run.execution_name")
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], _context: LambdaContext) -> dict[str, Any]:
    cfg = config.load(config.NotifyConfig)
    given = state.parse(state.NotifyInput, event, "notify")
    return notify(given.kind, given.state, store=wiring.store(), channels=wiring.channels(cfg))
