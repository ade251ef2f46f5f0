"""The notification channels against real endpoints on loopback: a Slack webhook answering an error, one that
cannot be reached, and SNS (moto) without the topic come back as failed deliveries of one line; a bug in the code
around the call is not dressed up as a delivery failure."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws
from slack_sdk.http_retry import handler as slack_retry
from support.fake_clock import FakeTime

from rebalancer.app.notifications.messages import Message, SlackChannel, SnsChannel
from rebalancer_tools.local.stack import SlackReceiver

MESSAGE = Message(kind="applied", cluster="c1")


@pytest.fixture
def sns() -> Iterator[object]:
    with mock_aws():
        yield boto3.client("sns", region_name="us-east-1")


def test_slack_delivers_and_a_refusing_webhook_is_a_failed_delivery() -> None:
    with SlackReceiver() as ok, SlackReceiver(status=400) as refusing:
        assert SlackChannel(ok.url).send(MESSAGE).ok
        assert ok.posts[0]["text"] == "Quotas rebalanced on c1"
        failed = SlackChannel(refusing.url).send(MESSAGE)
    assert not failed.ok
    assert failed.error == "Slack webhook: HTTP 400: invalid_payload"


def test_an_unreachable_slack_is_a_failed_delivery_of_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    backoff = FakeTime()
    monkeypatch.setattr(slack_retry, "time", backoff)  # slack_sdk retries a refused connection once, after a pause
    with socket.socket() as s:  # a port nobody listens on: bound, never accepting
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        failed = SlackChannel(f"http://127.0.0.1:{port}/services/x", timeout=2).send(MESSAGE)
    assert not failed.ok
    assert failed.error is not None
    assert failed.error.startswith("Slack webhook: ")
    assert "\n" not in failed.error
    assert len(backoff.slept) == 1


def test_sns_publishes_and_a_missing_topic_is_a_failed_delivery(sns: object) -> None:
    client = boto3.client("sns", region_name="us-east-1")
    topic = client.create_topic(Name="rebalancer")["TopicArn"]
    assert SnsChannel(client, topic).send(MESSAGE).ok
    failed = SnsChannel(client, topic + "-gone").send(MESSAGE)
    assert not failed.ok
    assert failed.error is not None
    assert failed.error.startswith("SNS Publish: An error occurred (NotFound)")


def test_a_bug_around_the_call_raises_instead_of_counting_as_a_failed_delivery() -> None:
    class Broken:
        def publish(self, **_: object) -> None:
            raise TypeError("publish() got an unexpected keyword argument")

    with pytest.raises(TypeError):
        SnsChannel(Broken(), "arn:aws:sns:us-east-1:123456789012:t").send(MESSAGE)
