"""Plan: policy (SSM or AppConfig) + snapshot + period-to-date budget use → plan with reasons, and the decision: no
change, dry run, approve, or apply. Budget thresholds and period summaries are announced from here (once each).
After an approval (Recheck), the approved plan against the cluster collected again."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from rebalancer.app import config, wiring
from rebalancer.app.notifications.outlets import BudgetOutlet
from rebalancer.app.observability import logger, tracer, transient_failures_counted
from rebalancer.app.policy_source import policy_loader
from rebalancer.app.workflow import state
from rebalancer.app.workflow.steps.plan import plan


@logger.inject_lambda_context(correlation_id_path="run.execution_name")
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], _context: LambdaContext) -> dict[str, Any]:
    cfg = config.load(config.PlanConfig)
    given = state.parse(state.PlanInput, event, "plan")
    run = given.run
    with transient_failures_counted("plan"):
        return plan(run, store=wiring.store(), load_policy=policy_loader(cfg),
                    now=wiring.clock(), mode_override=cfg.mode_override,
                    budget_outlet=BudgetOutlet(cfg, run.cluster_name), recheck=given.recheck)
