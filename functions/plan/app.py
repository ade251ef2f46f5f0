"""Plan: policy (SSM or AppConfig) + snapshot + period-to-date budget use -> plan with reasons, and the decision: no
change, dry run, approve, or apply; with it the run's news (budget thresholds, reservation windows) for the Notify
step to announce. After an approval (Recheck), the approved plan against the cluster collected again."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from rebalancer.app import config, wiring
from rebalancer.app.observability import logger, publish_budget_usage, tracer, transient_failures_counted
from rebalancer.app.policy_source import policy_loader
from rebalancer.app.workflow import state
from rebalancer.app.workflow.steps.plan import plan


@logger.inject_lambda_context(correlation_id_path="run.execution_name")
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], _context: LambdaContext) -> dict[str, Any]:
    cfg = config.load(config.PlanConfig)
    given = state.parse(state.PlanInput, event, "plan")
    with transient_failures_counted("plan"):
        return plan(given.run, store=wiring.store(), load_policy=policy_loader(cfg), now=wiring.clock(),
                    mode_override=cfg.mode_override, budget_figures=publish_budget_usage, recheck=given.recheck)
