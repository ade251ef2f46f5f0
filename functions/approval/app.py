"""Approval: RequestApproval from the state machine (stores the task token, sends the controls), and the HTTP API
for the review page, its decision form and Slack buttons (rebalancer.app.approvals.http)."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from rebalancer.app import config, wiring
from rebalancer.app.observability import logger, tracer

# What wiring builds on the first call and every call uses: loaded at init, so the cold start (and
# lambda_bench) shows what the function pays before it answers its first event.
wiring.preload("aws_lambda_powertools.utilities.parameters", "rebalancer.app.approvals.decisions",
               "rebalancer.app.approvals.signing", "rebalancer.adapters.dynamodb.store")


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    cfg = config.load(config.ApprovalConfig)
    if event.get("action") == "request":
        return wiring.approvals(cfg).request(event)
    return wiring.approval_api(cfg).handle(event, context)
