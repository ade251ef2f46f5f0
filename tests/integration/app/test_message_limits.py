"""Every message fits its outlet at any number of teams: the email of an approval that cuts 10,000 teams goes through
SNS (moto refuses a message over 256 KB as SNS does: "Message too long")."""

from __future__ import annotations

import boto3
from moto import mock_aws
from support.large_messages import cut_every_team

from rebalancer.app.notifications.messages import DeliveryResult, SnsChannel


def test_the_email_goes_through_sns_at_10000_teams() -> None:
    with mock_aws():
        sns = boto3.client("sns", region_name="us-east-1")
        topic = sns.create_topic(Name="rebalancer")["TopicArn"]
        assert SnsChannel(sns, topic).send(cut_every_team()) == DeliveryResult("sns", True)
