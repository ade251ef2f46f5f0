"""The Notify step with in-memory fakes: each channel at most once per run and kind, and a failure to notify
never loses the others."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from rebalancer.app.notifications.messages import DeliveryResult, Message
from rebalancer.app.notifications.notify import approval_id_of, error_text, notify
from rebalancer.app.workflow.news import News, record_news
from rebalancer.app.workflow.state import NotifyInput, RunRef
from rebalancer.domain.records import ApprovalRecord
from rebalancer.errors import TransientError
from rebalancer_tools.fakes.memory_store import MemoryStore

RUN = {"cluster_name": "c1", "execution_name": "run-1",
       "execution_arn": "arn:aws:states:us-east-1:123456789012:execution:rebalancer-rebalance:run-1"}


def asked(kind: str, **fields: Any) -> NotifyInput:
    """The Notify step's input as a Notify state passes it."""
    return NotifyInput.model_validate({"kind": kind, "run": RUN, **fields})


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
    given = asked("rolled_back", error={"Error": "ApplyFailed", "Cause": '{"errorType": "ApplyFailed", '
                                                                        '"errorMessage": "quota q-1 UpdateFailed"}'})
    out = notify(given, store=store, channels=[sns, slack])
    assert out == {"sent": ["sns"], "failed": {"slack": "slack is down"}}
    assert [(r["kind"], r["outcome"], r["detail"]) for r in store.audit.records("c1")] == [
        ("notify-rolled_back", "partial", {"sns": "ok", "slack": "slack is down"})]
    assert sns.sent[0].error == "ApplyFailed: quota q-1 UpdateFailed"
    slack.ok = True
    out = notify(given, store=store, channels=[sns, slack])
    assert (len(sns.sent), len(slack.sent)) == (1, 2)  # SNS is not sent twice
    assert out["failed"] == {}


def test_when_every_channel_fails_the_step_raises_a_transient_error_for_the_state_machine_to_retry() -> None:
    store = MemoryStore()
    with pytest.raises(TransientError, match="sns is down; slack is down"):
        notify(asked("applied"), store=store, channels=[FakeChannel("sns", False), FakeChannel("slack", False)])
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


def test_a_later_round_of_approval_is_told_apart_its_message_goes_out_and_says_why() -> None:
    """The run asked again after its approved plan went stale: the round's expiry and messages are its own."""
    store, sns = MemoryStore(now=lambda: datetime(2026, 12, 1, tzinfo=UTC)), FakeChannel("sns", True)
    first, second = approval_id_of(RUN["execution_arn"]), approval_id_of(RUN["execution_arn"], 2)
    assert first != second
    for approval_id, status in ((first, "superseded"), (second, "pending")):
        store.approvals.put(ApprovalRecord(approval_id=approval_id, task_token="t", execution_arn=RUN["execution_arn"],
                                           cluster_name="c1", status=status,  # type: ignore[arg-type]
                                           decide_by=datetime(2026, 12, 2, tzinfo=UTC) + timedelta(hours=1)))
    notify(asked("expired"), store=store, channels=[sns])
    why = ["The approved plan was not written: …", "changed since the plan: the quota of team a moved"]
    notify(asked("expired", approval_round=2, notes=why), store=store, channels=[sns])
    assert len(sns.sent) == 2  # the second round's expiry is not taken for a resend of the first's
    assert sns.sent[1].notes == tuple(why)
    assert store.approvals.get(second).status == "expired"  # type: ignore[union-attr]
    assert store.approvals.get(first).status == "superseded"  # type: ignore[union-attr]


# --- the run's news ------------------------------------------------------------------------------------------------
NEWS = News(budget=("research: budget 80 % used (80 of 100 accelerator-hours, 2026-11); passed 80 %",),
            reservation_started=("reservation r-1 for launch: began; research is guaranteed at least 16 of "
                                 "ml.p5.48xlarge from this run's plan (reserved by alice)",))


def test_the_news_goes_out_one_message_per_kind_each_channel_once_per_run() -> None:
    store, sns, slack = MemoryStore(), FakeChannel("sns", True), FakeChannel("slack", False)
    record_news(store.artifacts, RunRef.model_validate(RUN), NEWS)
    out = notify(asked("news"), store=store, channels=[sns, slack])
    assert [(m.kind, m.notes) for m in sns.sent] == [("budget", NEWS.budget),
                                                     ("reservation_started", NEWS.reservation_started)]
    assert out == {"sent": ["sns"], "failed": {"slack": "slack is down"}}
    assert [(r["kind"], r["outcome"]) for r in store.audit.records("c1")] == [
        ("notify-budget", "partial"), ("notify-reservation_started", "partial")]
    slack.ok = True
    notify(asked("news"), store=store, channels=[sns, slack])  # the state machine's retry, or a second attempt
    assert (len(sns.sent), len(slack.sent)) == (2, 4)  # SNS is not sent twice; Slack gets what it missed
    notify(asked("news"), store=store, channels=[sns, slack])
    assert (len(sns.sent), len(slack.sent)) == (2, 4)


def test_news_that_went_out_nowhere_is_retried_and_the_rest_is_not_sent_again() -> None:
    store, sns = MemoryStore(), FakeChannel("sns", True)
    record_news(store.artifacts, RunRef.model_validate(RUN), NEWS)
    failing = [sns]
    sns.ok = False
    with pytest.raises(TransientError, match="sns is down"):
        notify(asked("news"), store=store, channels=failing)
    sns.ok = True
    notify(asked("news"), store=store, channels=failing)
    assert [m.kind for m in sns.sent] == ["budget", "budget", "reservation_started"]


def test_a_run_without_news_sends_nothing() -> None:
    sns = FakeChannel("sns", True)
    assert notify(asked("news"), store=MemoryStore(), channels=[sns]) == {"sent": [], "failed": {}}
    assert sns.sent == []
