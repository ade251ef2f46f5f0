"""Observe (schedule): per-team idle allocated and pending accelerators, stranded accelerators and an imbalance
score per cluster, published with Powertools Metrics. The template's alarms on them start a rebalance. Each reading
is also metered for the teams' budgets, and stored as a light demand sample: the history `rebalancer backtest`
replays."""

from datetime import timedelta
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from rebalancer.app import config, wiring
from rebalancer.app.observability import logger, metrics, tracer
from rebalancer.app.observe import observe, publish_team_metrics
from rebalancer.app.workflow.snapshots import snapshot_reader


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(_event: dict[str, Any], _context: LambdaContext) -> dict[str, Any]:
    cfg = config.load(config.ObserveConfig)
    read = snapshot_reader()
    snapshots = [read(name) for name in cfg.managed_clusters]
    worst = observe(snapshots, wiring.store(), timedelta(days=cfg.history_retention_days),
                    warn=lambda message: logger.warning(message))
    for m in worst:
        publish_team_metrics(m)
    metrics.add_metric(name="StrandedAccelerators", unit=MetricUnit.Count, value=max(m.stranded for m in worst))
    metrics.add_metric(name="ImbalanceScore", unit=MetricUnit.NoUnit, value=max(m.score for m in worst))
    return {m.cluster: {"stranded": m.stranded, "score": round(m.score, 4)} for m in worst}
