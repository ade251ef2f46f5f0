"""Approval: RequestApproval from the state machine (stores the task token, sends the controls), and the HTTP API
for signed links and Slack buttons."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from rebalancer.app import config, wiring
from rebalancer.app.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], _context: LambdaContext) -> dict[str, Any]:
    approvals = wiring.approvals(config.load(config.ApprovalConfig))
    if event.get("action") == "request":
        return approvals.request(event)
    return approvals.http(event)
