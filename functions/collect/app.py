"""Collect: a snapshot of the cluster (capacity, quotas, Kueue demand), stored for the later steps."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from rebalancer.app import wiring
from rebalancer.app.observability import logger, tracer
from rebalancer.app.workflow import state
from rebalancer.app.workflow.snapshots import snapshot_reader
from rebalancer.app.workflow.steps.collect import collect


@logger.inject_lambda_context(correlation_id_path="run.execution_name")
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], _context: LambdaContext) -> dict[str, Any]:
    step = state.parse(state.CollectInput, event, "collect")
    return collect(step.run, store=wiring.store(), read_snapshot=snapshot_reader(), again=step.again,
                   written=step.written)
