"""Apply: post the plan's quota changes in order. Idempotent per execution: a retried invocation returns the first
result instead of writing again."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from rebalancer.app import wiring
from rebalancer.app.observability import logger, tracer
from rebalancer.app.workflow import state
from rebalancer.app.workflow.idempotency import once
from rebalancer.app.workflow.steps.apply import apply
from rebalancer.app.workflow.writers import scheduler_configs, writer


@logger.inject_lambda_context(correlation_id_path="run.execution_name")
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    run = state.run_of(event, "apply")
    store = wiring.store()
    return once("apply", run.execution_name, context,
                lambda: apply(run, store=store, writer=writer(), configs=scheduler_configs()))
