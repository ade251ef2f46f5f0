"""The DynamoDB store and the trigger against moto (DynamoDB, Step Functions without execution)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws
from support.events import load_event
from support.template import create_table

from rebalancer.adapters.dynamodb.store import ApprovalRecord, Store
from rebalancer.app.trigger.events import parse_trigger
from rebalancer.app.trigger.start import Starter, execution_name
from rebalancer.errors import ApprovalNotPending
from rebalancer_tools.ticking_clock import TickingClock

T0 = datetime(2026, 11, 30, 12, 0, 30, tzinfo=UTC)


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        create_table(boto3.client("dynamodb"))
        yield


@pytest.fixture
def clock() -> TickingClock:
    return TickingClock(T0)


@pytest.fixture
def store(aws: None, clock: TickingClock) -> Store:
    return Store("t", now=clock)


def test_artifacts_round_trip_compressed(store: Store) -> None:
    doc = {"quotas": [{"team": f"t{i}", "n": i} for i in range(500)]}
    store.put_artifact("run-1", "SNAPSHOT", doc)
    assert store.get_artifact("run-1", "SNAPSHOT") == doc
    assert store.get_artifact("run-1", "PLAN") is None
    item = boto3.resource("dynamodb").Table("t").get_item(Key={"pk": "RUN#run-1", "sk": "SNAPSHOT"})["Item"]
    assert len(item["body"].value) < len(json.dumps(doc)) / 4


def test_audit_log_keeps_order_and_decodes_fields(store: Store) -> None:
    store.audit("c1", "run-1", "plan", outcome="apply", before={"a": {"p5": 8}}, after={"a": {"p5": 16}})
    store.audit("c1", "run-1", "approval", outcome="approved", who="alice")
    store.audit("c2", "run-2", "plan", outcome="no_change")
    log = store.audit_log("c1")
    assert [(r["kind"], r["outcome"]) for r in log] == [("plan", "apply"), ("approval", "approved")]
    assert log[0]["after"] == {"a": {"p5": 16}}
    assert log[1]["who"] == "alice"


def test_the_lock_is_exclusive_until_it_expires_or_is_taken_over(store: Store, clock: TickingClock) -> None:
    first = store.acquire_lock("c1", "run-1", timedelta(minutes=10))
    assert first.acquired
    second = store.acquire_lock("c1", "run-2", timedelta(minutes=10))
    assert (second.acquired, second.holder) == (False, "run-1")
    assert not store.acquire_lock("c1", "run-2", timedelta(minutes=10), replace="run-0").acquired
    assert store.acquire_lock("c1", "run-2", timedelta(minutes=10), replace="run-1").acquired
    assert store.acquire_lock("c2", "run-9", timedelta(minutes=10)).acquired  # per cluster
    clock.t += timedelta(minutes=11)
    assert store.acquire_lock("c1", "run-3", timedelta(minutes=10)).acquired


def test_an_approval_is_decided_once_and_not_after_its_deadline(store: Store, clock: TickingClock) -> None:
    rec = ApprovalRecord("a1", "token", "arn:exec:run-1", "c1", "pending", T0 + timedelta(hours=1))
    assert store.put_approval(rec)
    assert not store.put_approval(rec)
    decided = store.decide_approval("a1", "approved", "alice")
    assert (decided.status, decided.decided_by) == ("approved", "alice")
    with pytest.raises(ApprovalNotPending) as e:
        store.decide_approval("a1", "rejected", "mallory")
    assert e.value.status == "approved"
    store.put_approval(ApprovalRecord("a2", "token", "arn:exec:run-2", "c1", "pending", T0 + timedelta(minutes=1)))
    clock.t += timedelta(minutes=2)
    with pytest.raises(ApprovalNotPending) as e:
        store.decide_approval("a2", "approved", "late")
    assert e.value.status == "expired"
    with pytest.raises(ApprovalNotPending) as e:
        store.decide_approval("nope", "approved", "x")
    assert e.value.status == "unknown"


def test_a_delivery_is_marked_once(store: Store) -> None:
    assert store.mark_delivered("run-1", "applied", "sns")
    assert not store.mark_delivered("run-1", "applied", "sns")
    store.unmark_delivered("run-1", "applied", "sns")
    assert store.mark_delivered("run-1", "applied", "sns")


@pytest.fixture
def starter(store: Store) -> Starter:
    sfn = boto3.client("stepfunctions")
    role = "arn:aws:iam::123456789012:role/sfn"
    arn = sfn.create_state_machine(name="rebalancer-rebalance", roleArn=role, definition=json.dumps(
        {"StartAt": "S", "States": {"S": {"Type": "Succeed"}}}))["stateMachineArn"]
    return Starter(store=store, sfn=sfn, state_machine_arn=arn, managed=("ml-cluster", "other"),
                   lock_ttl=timedelta(hours=1), debounce=timedelta(minutes=2), clock=store.now)


def _executions(starter: Starter) -> list[dict[str, object]]:
    out: list[dict[str, object]] = starter.sfn.list_executions(stateMachineArn=starter.state_machine_arn)["executions"]
    return out


def test_execution_names_are_deterministic_per_window() -> None:
    a = execution_name("ml-cluster", T0, timedelta(minutes=2))
    assert a == "ml-cluster-20261130T120000"
    assert execution_name("ml-cluster", T0 + timedelta(seconds=80), timedelta(minutes=2)) == a
    assert execution_name("ml-cluster", T0 + timedelta(seconds=95), timedelta(minutes=2)) != a


def test_a_run_holds_the_cluster_until_it_ends(starter: Starter, clock: TickingClock) -> None:
    event = load_event("hyperpod-node-health")
    first = starter.handle(event)
    assert first.status == "started"
    [execution] = _executions(starter)
    assert json.loads(starter.sfn.describe_execution(executionArn=execution["executionArn"])["input"]) == {
        "cluster_name": "ml-cluster", "trigger": {"kind": "node-health", "event_id": event["id"],
                                                  "summary": parse_trigger(event).summary}}
    assert parse_trigger(event).summary.startswith("node i-0123456789abcdef0 of ml-cluster is Unhealthy")
    clock.t += timedelta(minutes=30)  # another window, but the first run is still RUNNING
    assert starter.handle(event).status == "debounced"
    starter.sfn.stop_execution(executionArn=execution["executionArn"])
    third = starter.handle(event)
    assert third.status == "started"
    assert len(_executions(starter)) == 2


def test_a_schedule_starts_every_managed_cluster_and_foreign_clusters_are_ignored(starter: Starter) -> None:
    assert sorted(starter.handle(load_event("scheduled")).executions) == [
        "ml-cluster-20261130T120000", "other-20261130T120000"]
    foreign = load_event("hyperpod-cluster-event")
    foreign["detail"]["EventDetails"]["ClusterName"] = "not-ours"
    outcome = starter.handle(foreign)
    assert (outcome.status, outcome.executions) == ("ignored", [])


def test_a_bad_event_never_raises(starter: Starter) -> None:
    for event in (load_event("malformed-missing-detail"), None, [], "x", {"id": 7}):
        assert starter.handle(event).status == "malformed"
    assert _executions(starter) == []
