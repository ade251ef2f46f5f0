"""Approval: RequestApproval from the state machine (stores the task token, sends the controls), and the HTTP API
for the review page, its decision form and Slack buttons (rebalancer.app.approvals.http)."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from rebalancer.app import config
from rebalancer.app.approvals.wiring import approval_api, approvals
from rebalancer.app.observability import logger, tracer
from rebalancer.app.workflow import state


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    cfg = config.load(config.ApprovalConfig)
    if event.get("action") == "request":  # RequestApproval, from the state machine
        return approvals(cfg).request(state.parse(state.ApprovalRequest, event, "approval request"))
    return approval_api(cfg).handle(event, context)
