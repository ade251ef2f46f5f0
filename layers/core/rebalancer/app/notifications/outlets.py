"""Where messages go out: the channels (SNS, and Slack when its webhook secret is configured), the secrets they need,
and the budget outlet (budget messages on those channels, per-team budget metrics with Powertools' EMF)."""

from __future__ import annotations

from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

from rebalancer.adapters.aws import cause_of, one_line
from rebalancer.app import config, wiring
from rebalancer.app.notifications.messages import Channel, Message, SlackChannel, SnsChannel
from rebalancer.app.observability import NAMESPACE, logger
from rebalancer.errors import PermanentError


def secret(arn: str) -> str:
    """The secret's value; a read AWS throttled or failed (past the SDK's retries) is a TransientError, any other
    failure a PermanentError naming the secret and what AWS said."""
    try:
        value = parameters.get_secret(arn, max_age=300)
    except GetParameterError as e:
        raise (cause_of(e, "secretsmanager", arn) or PermanentError(f"secretsmanager on {arn}: {one_line(e)}")) \
            from None
    return value if isinstance(value, str) else bytes(value).decode()


def channels(cfg: config.NotifyConfig) -> list[Channel]:
    out: list[Channel] = [SnsChannel(wiring.client("sns"), cfg.topic_arn)]
    if cfg.slack_webhook_secret_arn:
        out.append(SlackChannel(secret(cfg.slack_webhook_secret_arn).strip()))
    return out


class BudgetOutlet:
    """Budget and reservation messages on the notification channels (made on first use: no secret is read
    otherwise) and the per-team budget metrics."""

    def __init__(self, cfg: config.NotifyConfig, cluster: str):
        self.cfg, self.cluster = cfg, cluster

    def send(self, kind: str, lines: tuple[str, ...]) -> None:
        message = Message.model_validate({"kind": kind, "cluster": self.cluster, "notes": lines})
        for channel in channels(self.cfg):
            result = channel.send(message)
            if not result.ok:
                logger.warning("budget message not delivered", extra={"channel": result.channel,
                                                                       "error": result.error})

    def record(self, cluster: str, used: dict[str, tuple[float, float]]) -> None:
        for team, (percent, hours) in sorted(used.items()):
            for name, value, unit in (("BudgetUsedPercent", percent, MetricUnit.Percent),
                                      ("BudgetAcceleratorHours", hours, MetricUnit.Count)):
                with single_metric(name=name, unit=unit, value=value, namespace=NAMESPACE) as metric:
                    metric.add_dimension(name="ClusterName", value=cluster)
                    metric.add_dimension(name="Team", value=team)
