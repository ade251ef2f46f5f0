"""Verify: one poll of the changed quotas' status; the state machine waits and calls again until done."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from rebalancer.app import config
from rebalancer.app.observability import logger, tracer
from rebalancer.app.workflow import state
from rebalancer.app.workflow.steps.verify import verify
from rebalancer.app.workflow.writers import scheduler_configs, writer


@logger.inject_lambda_context(correlation_id_path="run.execution_name")
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], _context: LambdaContext) -> dict[str, Any]:
    cfg = config.load(config.VerifyConfig)
    given = state.parse(state.VerifyInput, event, "verify")
    return verify(given.attempt, list(given.apply.quota_ids), writer=writer(poll_once=True),
                  poll_seconds=cfg.poll_seconds, max_attempts=cfg.max_attempts,
                  scheduler_config_id=given.apply.scheduler_config_id, configs=scheduler_configs(poll_once=True))
