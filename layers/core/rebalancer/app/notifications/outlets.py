"""Where messages go out: the channels (SNS, and Slack when its webhook secret is configured) and the secrets they
need."""

from __future__ import annotations

from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

from rebalancer.adapters.aws import cause_of, one_line
from rebalancer.app import config, wiring
from rebalancer.app.notifications.messages import Channel, SlackChannel, SnsChannel
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



def team_channel(team: str, topic_arn: str) -> Channel:
    """A team's own topic (the policy's `teams.<team>.notice_topic`), told of the notice before a reclaim."""
    channel = SnsChannel(wiring.client("sns"), topic_arn)
    channel.name = f"sns:{team}"
    return channel
