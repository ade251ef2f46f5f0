"""No change is lost to the lock: an event during a run marks the lock, and the run's end (Step Functions'
status-change event) starts one follow-up run. Against moto's DynamoDB and Step Functions (without execution)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws
from support.events import load_event
from support.starter import executions, starter_on
from support.template import create_table

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.app.trigger.start import Starter, followup_name
from rebalancer_tools.fakes.ticking_clock import TickingClock
from rebalancer_tools.local.stack import run_finished_event

T0 = datetime(2026, 11, 30, 12, 0, 30, tzinfo=UTC)


@pytest.fixture
def clock() -> TickingClock:
    return TickingClock(T0)


@pytest.fixture
def starter(clock: TickingClock) -> Iterator[Starter]:
    with mock_aws():
        create_table(boto3.client("dynamodb"))
        yield starter_on(Store("t", now=clock))


def ended(starter: Starter, execution: dict[str, Any]) -> dict[str, Any]:
    starter.sfn.stop_execution(executionArn=execution["executionArn"])
    return run_finished_event(starter.sfn.describe_execution(executionArn=execution["executionArn"]),
                              "us-east-1", "123456789012")


def test_a_change_during_a_run_is_planned_by_one_follow_up_run(starter: Starter, clock: TickingClock) -> None:
    assert starter.handle(load_event("hyperpod-node-health")).status == "started"
    [first] = executions(starter)
    clock.t += timedelta(minutes=1)
    for _ in range(5):  # a burst while the run holds the lock: one follow-up, not five
        assert starter.handle(load_event("hyperpod-cluster-state-change")).status == "debounced"
    assert len(executions(starter)) == 1
    done = ended(starter, first)
    outcome = starter.handle(done)
    assert outcome.status == "started"
    assert outcome.executions == [followup_name("ml-cluster", first["name"], clock.t, timedelta(minutes=2))]
    assert starter.handle(done).status == "irrelevant"  # EventBridge delivered it twice: still one follow-up
    second = executions(starter)[1]
    assert json.loads(starter.sfn.describe_execution(executionArn=second["executionArn"])["input"])["trigger"][
        "kind"] == "follow-up"
    assert starter.handle(ended(starter, second)).status == "irrelevant"  # nothing came during the follow-up
    assert len(executions(starter)) == 2


def test_a_run_that_ends_quietly_starts_nothing_and_the_next_event_starts_a_fresh_run(starter: Starter,
                                                                                      clock: TickingClock) -> None:
    starter.handle(load_event("hyperpod-node-health"))
    [first] = executions(starter)
    assert starter.handle(ended(starter, first)).status == "irrelevant"
    again = starter.handle(load_event("hyperpod-node-health"))  # same debounce window, the run has ended
    assert again.status == "started"
    assert again.executions == [followup_name("ml-cluster", first["name"], clock.t, timedelta(minutes=2))]


def test_a_run_that_ends_between_the_check_and_the_mark_is_taken_over(starter: Starter, clock: TickingClock) -> None:
    starter.handle(load_event("hyperpod-node-health"))
    [first] = executions(starter)
    real = starter._holder_busy
    answers = iter([True, False])  # running at the first look, ended at the second
    starter._holder_busy = lambda *_: next(answers)  # type: ignore[method-assign]
    starter.sfn.stop_execution(executionArn=first["executionArn"])
    outcome = starter.handle(load_event("hyperpod-cluster-state-change"))
    starter._holder_busy = real  # type: ignore[method-assign]
    assert outcome.status == "started"
    assert len(executions(starter)) == 2


def test_a_finish_event_of_another_state_machine_or_cluster_starts_nothing(starter: Starter) -> None:
    starter.handle(load_event("hyperpod-node-health"))
    starter.handle(load_event("hyperpod-node-health"))
    [first] = executions(starter)
    foreign = ended(starter, first)
    foreign["detail"]["stateMachineArn"] += "-other"
    assert starter.handle(foreign).status == "ignored"
    no_cluster = ended(starter, first)
    no_cluster["detail"]["input"] = "{}"
    assert starter.handle(no_cluster).status == "irrelevant"
    assert len(executions(starter)) == 1


def test_step_functions_throttling_is_a_transient_failure_and_a_later_event_still_starts_the_run(
        starter: Starter, clock: TickingClock) -> None:
    """Throttled past the SDK's retries, the trigger fails as transient (counted apart from a bug; EventBridge
    retries the event), naming the call; the lock it took does not keep the cluster's next event from a run."""
    from botocore.awsrequest import AWSResponse

    from rebalancer.errors import TransientError

    def throttled(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        error = {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"},
                 "ResponseMetadata": {"HTTPStatusCode": 400}}
        return AWSResponse("https://states", 400, {}, None), error  # type: ignore[arg-type]

    starter.sfn.meta.events.register("before-call.sfn.StartExecution", throttled)
    with pytest.raises(TransientError, match=r"states:StartExecution on .*ThrottlingException: Rate exceeded"):
        starter.handle(load_event("hyperpod-node-health"))
    starter.sfn.meta.events.unregister("before-call.sfn.StartExecution", throttled)
    assert executions(starter) == []
    clock.t += timedelta(minutes=10)  # past the grace a run that never started gets
    assert starter.handle(load_event("hyperpod-node-health")).status == "started"
    assert len(executions(starter)) == 1
