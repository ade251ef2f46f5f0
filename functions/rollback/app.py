"""Rollback: restore the before-state of every quota this run touched, with fresh versions."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from rebalancer.app import wiring
from rebalancer.app.observability import logger, tracer
from rebalancer.app.workflow import state
from rebalancer.app.workflow.idempotency import once
from rebalancer.app.workflow.steps.rollback import rollback
from rebalancer.app.workflow.writers import scheduler_configs, writer


@logger.inject_lambda_context(correlation_id_path="run.execution_name")
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    given = state.parse(state.RollbackInput, event, "rollback")
    run = given.run
    store = wiring.store()
    return once("rollback", run.execution_name, context,
                lambda: rollback(run, given.error, store=store, writer=writer(), configs=scheduler_configs()))
