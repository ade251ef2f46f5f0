"""The trigger against moto (DynamoDB, Step Functions without execution), and how the table stores an artifact.
What every repository answers is in tests/integration/store/test_repository_contract.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws
from support.events import load_event
from support.starter import executions, starter_on
from support.template import create_table

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.app.trigger.events import parse_trigger
from rebalancer.app.trigger.start import Starter, execution_name
from rebalancer_tools.fakes.ticking_clock import TickingClock

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
    store.artifacts.put("run-1", "SNAPSHOT", doc)
    assert store.artifacts.get("run-1", "SNAPSHOT") == doc
    assert store.artifacts.get("run-1", "PLAN") is None
    item = boto3.resource("dynamodb").Table("t").get_item(Key={"pk": "RUN#run-1", "sk": "SNAPSHOT"})["Item"]
    assert len(item["body"].value) < len(json.dumps(doc)) / 4


@pytest.fixture
def starter(store: Store) -> Starter:
    return starter_on(store)


def test_execution_names_are_deterministic_per_window() -> None:
    a = execution_name("ml-cluster", T0, timedelta(minutes=2))
    assert a == "ml-cluster-20261130T120000"
    assert execution_name("ml-cluster", T0 + timedelta(seconds=80), timedelta(minutes=2)) == a
    assert execution_name("ml-cluster", T0 + timedelta(seconds=95), timedelta(minutes=2)) != a


def test_a_run_holds_the_cluster_until_it_ends(starter: Starter, clock: TickingClock) -> None:
    event = load_event("hyperpod-node-health")
    first = starter.handle(event)
    assert first.status == "started"
    [execution] = executions(starter)
    assert json.loads(starter.sfn.describe_execution(executionArn=execution["executionArn"])["input"]) == {
        "cluster_name": "ml-cluster", "trigger": {"kind": "node-health", "event_id": event["id"],
                                                  "summary": parse_trigger(event).summary}}
    assert parse_trigger(event).summary.startswith("node i-0123456789abcdef0 of ml-cluster is Unhealthy")
    clock.t += timedelta(minutes=30)  # another window, but the first run is still RUNNING
    assert starter.handle(event).status == "debounced"
    starter.sfn.stop_execution(executionArn=execution["executionArn"])
    third = starter.handle(event)
    assert third.status == "started"
    assert len(executions(starter)) == 2


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
    assert executions(starter) == []
