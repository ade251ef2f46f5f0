"""The Notify step with in-memory fakes: each channel at most once per run and kind, and a failure to notify
never loses the others."""

from __future__ import annotations

from typing import Any

import pytest

from rebalancer.app.notifications.messages import DeliveryResult, Message
from rebalancer.app.notifications.notify import error_text, notify
from rebalancer.errors import TransientError
from rebalancer_tools.memory_store import MemoryStore

RUN = {"cluster_name": "c1", "execution_name": "run-1",
       "execution_arn": "arn:aws:states:us-east-1:123456789012:execution:rebalancer-rebalance:run-1"}


class FakeChannel:
    def __init__(self, name: str, ok: bool) -> None:
        self.name = name
        self.ok = ok
        self.sent: list[Message] = []

    def send(self, message: Message) -> DeliveryResult:
        self.sent.append(message)
        return DeliveryResult(self.name, self.ok, None if self.ok else f"{self.name} is down")


def test_one_failing_channel_is_recorded_and_retried_alone() -> None:
    store, sns, slack = MemoryStore(), FakeChannel("sns", True), FakeChannel("slack", False)
    state = {"run": RUN, "error": {"Error": "ApplyFailed", "Cause": '{"errorType": "ApplyFailed", '
                                                                  '"errorMessage": "quota q-1 UpdateFailed"}'}}
    out = notify("rolled_back", state, store=store, channels=[sns, slack])
    assert out == {"sent": ["sns"], "failed": {"slack": "slack is down"}}
    assert [(r["kind"], r["outcome"], r["detail"]) for r in store.audit.records("c1")] == [
        ("notify-rolled_back", "partial", {"sns": "ok", "slack": "slack is down"})]
    assert sns.sent[0].error == "ApplyFailed: quota q-1 UpdateFailed"
    slack.ok = True
    out = notify("rolled_back", state, store=store, channels=[sns, slack])
    assert (len(sns.sent), len(slack.sent)) == (1, 2)  # SNS is not sent twice
    assert out["failed"] == {}


def test_when_every_channel_fails_the_step_raises_a_transient_error_for_the_state_machine_to_retry() -> None:
    store = MemoryStore()
    with pytest.raises(TransientError, match="sns is down; slack is down"):
        notify("applied", {"run": RUN}, store=store,
               channels=[FakeChannel("sns", False), FakeChannel("slack", False)])
    assert store.deliveries.sent == set()


@pytest.mark.parametrize(("error", "text"), [
    ({"Error": "InvalidInput", "Cause": '{"errorType": "InvalidInput", "errorMessage": "ssm:/p/c: mode: bad"}'},
     "InvalidInput: ssm:/p/c: mode: bad"),
    ({"Error": "States.Timeout", "Cause": "timed out"}, "States.Timeout: timed out"),
    ({"Error": "ApprovalRejected", "Cause": None}, "ApprovalRejected"),
    (None, None),
])
def test_error_text_is_one_line_people_can_read(error: Any, text: str | None) -> None:
    assert error_text(error) == text
