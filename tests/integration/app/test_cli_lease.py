"""The command line's writers and the controller's runs share one per-cluster lock (the table's item): a command holds
it as a lease; a run that meets the lease waits and is started by the command when it lets go, as a run's end starts
it; a command meeting a run's lock is refused ("held by run … since …") until the run has ended. Against moto's
DynamoDB and Step Functions (without execution): the trigger's Starter and the CLI's lease on one table."""

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
from rebalancer.app.trigger.start import Starter
from rebalancer.errors import TransientError
from rebalancer_tools.cli.cluster_lock import LEASE, UNLOCKED_WARNING, cluster_lock
from rebalancer_tools.cli.run_log import memory_log, table_log
from rebalancer_tools.fakes.ticking_clock import TickingClock
from rebalancer_tools.local.stack import run_finished_event

T0 = datetime(2026, 11, 30, 12, 0, 30, tzinfo=UTC)
CLUSTER = "ml-cluster"  # the cluster of the events in events/
ANN = "arn:aws:sts::123456789012:assumed-role/admin/ann"


@pytest.fixture
def clock() -> TickingClock:
    return TickingClock(T0)


@pytest.fixture
def starter(clock: TickingClock) -> Iterator[Starter]:
    with mock_aws():
        create_table(boto3.client("dynamodb"))
        yield starter_on(Store("t", now=clock), managed=(CLUSTER,), lock_ttl=timedelta(days=1))


def log_of(starter: Starter) -> Any:
    assert isinstance(starter.store, Store)
    return table_log(starter.store)


def test_a_run_that_meets_a_commands_lease_waits_and_the_command_starts_it_when_it_lets_go(
        starter: Starter, clock: TickingClock, capsys: pytest.CaptureFixture[str]) -> None:
    log = log_of(starter)
    with cluster_lock(log, CLUSTER, "ml-cluster-cli20261130T120030", who=ANN, heartbeat=False,
                      sfn=lambda: starter.sfn) as lease:
        assert lease is not None
        for _ in range(3):  # a burst while the command writes: no run starts, one follow-up is asked for
            assert starter.handle(load_event("hyperpod-node-health")).status == "debounced"
        assert executions(starter) == []
        clock.advance(minutes=20)
        lease.renew()
    [followup] = executions(starter)
    assert json.loads(starter.sfn.describe_execution(executionArn=followup["executionArn"])["input"])["trigger"] == {
        "kind": "follow-up", "event_id": "ml-cluster-cli20261130T120030",
        "summary": "changes that arrived during run ml-cluster-cli20261130T120030"}
    assert f"started {followup['name']}" in capsys.readouterr().err
    # The follow-up holds the lock as any run, and it is recorded as the controller records a run's start.
    held = starter.store.locks.holding(CLUSTER)
    assert held is not None
    assert (held.holder, held.run_arn) == (followup["name"], followup["executionArn"])
    assert [(r["kind"], r["execution"]) for r in starter.store.audit.records(CLUSTER) if r["kind"] == "trigger"] == \
        [("trigger", followup["name"])]
    # Its end starts nothing more: nothing came during it.
    starter.sfn.stop_execution(executionArn=followup["executionArn"])
    done = run_finished_event(starter.sfn.describe_execution(executionArn=followup["executionArn"]), "us-east-1",
                              "123456789012")
    assert starter.handle(done).status == "irrelevant"


def test_a_command_that_meets_nobody_leaves_no_lock_and_no_run(starter: Starter) -> None:
    with cluster_lock(log_of(starter), CLUSTER, "ml-cluster-cli1", who=ANN, sfn=lambda: starter.sfn):
        pass  # with its heartbeat thread, which ends with the block
    assert starter.store.locks.holding(CLUSTER) is None
    assert executions(starter) == []
    assert starter.handle(load_event("hyperpod-node-health")).status == "started"


def test_a_command_is_refused_while_a_run_holds_the_lock_and_takes_it_once_the_run_has_ended(
        starter: Starter, clock: TickingClock) -> None:
    assert starter.handle(load_event("hyperpod-node-health")).status == "started"
    [run] = executions(starter)
    clock.advance(minutes=5)
    with pytest.raises(TransientError) as refused, cluster_lock(log_of(starter), CLUSTER, "ml-cluster-cli1",
                                                                who=ANN, heartbeat=False, sfn=lambda: starter.sfn):
        pytest.fail("the command ran while the run held the lock")
    assert str(refused.value) == (f"cluster {CLUSTER} is locked: held by run {run['name']} since 2026-11-30 "
                                  "12:00:30 UTC; try again when it ends")
    starter.sfn.stop_execution(executionArn=run["executionArn"])
    with cluster_lock(log_of(starter), CLUSTER, "ml-cluster-cli2", who=ANN, heartbeat=False,
                      sfn=lambda: starter.sfn) as lease:
        assert lease is not None
        assert starter.store.locks.holding(CLUSTER).holder == "ml-cluster-cli2"


def test_a_command_waits_for_the_follow_up_a_finished_run_owes(starter: Starter, clock: TickingClock) -> None:
    starter.handle(load_event("hyperpod-node-health"))
    [run] = executions(starter)
    clock.advance(minutes=1)
    assert starter.handle(load_event("hyperpod-cluster-state-change")).status == "debounced"
    starter.sfn.stop_execution(executionArn=run["executionArn"])  # ended; its finish event not yet delivered
    with pytest.raises(TransientError, match="it has ended and its follow-up run is starting"), \
            cluster_lock(log_of(starter), CLUSTER, "ml-cluster-cli1", who=ANN, heartbeat=False,
                         sfn=lambda: starter.sfn):
        pytest.fail("the command took the lock the follow-up is owed")


def test_a_command_is_refused_while_another_command_holds_the_lock(starter: Starter) -> None:
    with cluster_lock(log_of(starter), CLUSTER, "ml-cluster-cli1", who=ANN, heartbeat=False, sfn=lambda: starter.sfn):
        with pytest.raises(TransientError) as refused, cluster_lock(
                log_of(starter), CLUSTER, "ml-cluster-cli2", who="bob", heartbeat=False, sfn=lambda: starter.sfn):
            pytest.fail("two commands held one lock")
        assert f"held by run ml-cluster-cli1 since 2026-11-30 12:00:30 UTC (a command of {ANN}, its lease until " \
               "12:05:30 UTC)" in str(refused.value)


def test_a_lease_that_expired_and_was_taken_is_not_written_on(starter: Starter, clock: TickingClock,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with cluster_lock(log_of(starter), CLUSTER, "ml-cluster-cli1", who=ANN, heartbeat=False,
                      sfn=lambda: starter.sfn) as lease:
        assert lease is not None
        clock.advance(minutes=LEASE.total_seconds() / 60 + 1)  # the admin left the prompt open
        assert starter.handle(load_event("hyperpod-node-health")).status == "started"
        with pytest.raises(TransientError, match="expired and another writer took it: nothing was written"):
            lease.renew()
    assert "the lock of ml-cluster had expired and passed to run" in capsys.readouterr().err
    assert starter.store.locks.holding(CLUSTER).holder == executions(starter)[0]["name"]


def test_without_the_table_the_command_says_it_runs_unlocked(capsys: pytest.CaptureFixture[str]) -> None:
    with cluster_lock(memory_log(), CLUSTER, "ml-cluster-cli1", who=None, heartbeat=False,
                      sfn=lambda: pytest.fail("no lock, no Step Functions")) as lease:
        assert lease is None
    assert capsys.readouterr().err == f"warning: {UNLOCKED_WARNING}\n"
