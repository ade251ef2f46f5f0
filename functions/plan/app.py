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
from rebalancer.forecast.deadline import Deadline

# What the step does after the outlook's forecasts (storing the outlook and the run history, the news, the
# result): a few table writes, given ten seconds so that a throttled write still has its retries.
AFTER_OUTLOOK_S = 10.0


@logger.inject_lambda_context(correlation_id_path="run.execution_name")
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    cfg = config.load(config.PlanConfig)
    given = state.parse(state.PlanInput, event, "plan")
    deadline = Deadline.within(context.get_remaining_time_in_millis() / 1000 - AFTER_OUTLOOK_S)
    with transient_failures_counted("plan"):
        return plan(given.run, store=wiring.store(), load_policy=policy_loader(cfg), now=wiring.clock(),
                    mode_override=cfg.mode_override, budget_figures=publish_budget_usage, recheck=given.recheck,
                    outlook_deadline=deadline)
