"""The command line's writers and the controller's runs share one per-cluster lock (the table's item): a command holds
it as a lease; a run that meets the lease waits and is started by the command when it lets go, as a run's end starts
it; a command meeting a run's lock is refused ("held by run … since …") until the run has ended. Against moto's
DynamoDB and Step Functions (without execution): the trigger's Starter and the CLI's lease on one table.

And nobody can wedge it: a lock item the code did not write is refused in one line naming it and what to do, in the
trigger and the CLI alike, never a traceback; the lease is short and renewed by a heartbeat while the command lives,
so a killed command frees the cluster within minutes whatever its --timeout; an admin can break a lock, audited."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import boto3
import pytest
from click.testing import CliRunner
from moto import mock_aws
from support.events import load_event
from support.starter import executions, starter_on
from support.template import create_table, resources

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.app.trigger.start import Starter
from rebalancer.errors import LockUnreadable, TransientError
from rebalancer_tools.cli import cli, lock_cmd
from rebalancer_tools.cli.cluster_lock import HEARTBEAT_EVERY, LEASE, cluster_lock
from rebalancer_tools.cli.run_log import memory_log, table_log
from rebalancer_tools.fakes.ticking_clock import TickingClock
from rebalancer_tools.local.stack import run_finished_event

T0 = datetime(2026, 11, 30, 12, 0, 30, tzinfo=UTC)
CLUSTER = "ml-cluster"  # the cluster of the events in events/
ANN = "arn:aws:sts::123456789012:assumed-role/admin/ann"
KEY = {"pk": f"CLUSTER#{CLUSTER}", "sk": "LOCK"}
GOOD = {**KEY, "holder": "ml-cluster-cli20261130T120030", "acquired_at": T0.isoformat(), "by": ANN,
        "expires_at": Decimal(int((T0 + timedelta(minutes=5)).timestamp()))}


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


def test_without_the_table_there_is_no_lock(capsys: pytest.CaptureFixture[str]) -> None:
    with cluster_lock(memory_log(), CLUSTER, "ml-cluster-cli1", who=None, heartbeat=False,
                      sfn=lambda: pytest.fail("no lock, no Step Functions")) as lease:
        assert lease is None
    assert capsys.readouterr().err == ""  # the command says UNLOCKED_WARNING once its input is checked


def store_of(starter: Starter) -> Store:
    assert isinstance(starter.store, Store)
    return starter.store


def put_lock(starter: Starter, item: dict[str, Any]) -> None:
    store_of(starter).table.table.put_item(Item=item)


HAND_EDITED = {
    "holder removed": {k: v for k, v in GOOD.items() if k != "holder"},
    "acquired_at removed": {k: v for k, v in GOOD.items() if k != "acquired_at"},
    "expiry removed": {k: v for k, v in GOOD.items() if k != "expires_at"},
    "expiry as text": {**GOOD, "expires_at": "tomorrow"},
    "holder as a number": {**GOOD, "holder": Decimal(7)},
    "acquired_at not a time": {**GOOD, "acquired_at": "noon"},
    "acquired_at without a zone": {**GOOD, "acquired_at": "2026-11-30T12:00:30"},
    "follow-up lease as text": {**GOOD, "followup": "x", "followup_lease": "an hour"},
}


@pytest.mark.parametrize("item", HAND_EDITED.values(), ids=HAND_EDITED.keys())
def test_a_hand_edited_lock_is_one_line_in_the_trigger_and_the_cli(starter: Starter, item: dict[str, Any],
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    put_lock(starter, item)
    # the trigger: no run, no traceback; the outcome and the log name the item and what to do
    outcome = starter.handle(load_event("hyperpod-node-health"))
    assert outcome.status == "blocked"
    assert executions(starter) == []
    [line] = outcome.blocked
    assert line == outcome.reason
    assert "\n" not in line
    assert f"the lock of cluster {CLUSTER} (item CLUSTER#{CLUSTER} / LOCK of table t) was not written by the " \
           "controller: " in line
    assert f"`rebalancer lock break --cluster {CLUSTER} --reason ...`" in line
    # a run's end, whose follow-up would take the lock, says the same
    done = run_finished_event({"executionArn": f"{starter.state_machine_arn.replace('stateMachine', 'execution')}:r",
                               "stateMachineArn": starter.state_machine_arn, "name": "r", "status": "SUCCEEDED",
                               "input": '{"cluster_name": "ml-cluster"}', "startDate": T0, "stopDate": T0},
                              "us-east-1", "123456789012")
    assert starter.handle(done).blocked == [line]
    # the CLI's writers: the same line, as the command's one error
    with pytest.raises(LockUnreadable) as refused, cluster_lock(table_log(store_of(starter)), CLUSTER, "cli1",
                                                                who=ANN, heartbeat=False, sfn=lambda: starter.sfn):
        pytest.fail("the command took a lock it cannot read")
    assert str(refused.value) == line
    got = run_cli(starter, "lock", "show", "--cluster", CLUSTER, "--table", "t")
    assert got.exit_code == 0, got.output
    assert got.output == f"lock of {CLUSTER}: unreadable: {line}\n"


def test_a_readable_lock_is_read_as_before(starter: Starter) -> None:
    put_lock(starter, {**GOOD, "note": "a field the code does not know is ignored"})
    held = store_of(starter).locks.holding(CLUSTER)
    assert held is not None
    assert (held.holder, held.by, held.expires_at) == (GOOD["holder"], ANN, T0 + timedelta(minutes=5))


def test_the_lease_is_minutes_and_never_longer_than_a_controller_runs_lock() -> None:
    env = resources("AWS::Serverless::Function")["TriggerFunction"]["Properties"]["Environment"]["Variables"]
    assert timedelta(minutes=1) <= LEASE <= timedelta(minutes=10)
    controllers = timedelta(seconds=int(env["LOCK_TTL_SECONDS"]))
    assert controllers > LEASE
    assert HEARTBEAT_EVERY * 3 <= LEASE  # a beat or two may fail before the lease lapses


def test_a_killed_commands_lease_frees_the_cluster_within_minutes(starter: Starter, clock: TickingClock) -> None:
    with ExitStack() as killed:  # entered, never left: the process died at its prompt, its heartbeat with it
        killed.enter_context(cluster_lock(table_log(store_of(starter)), CLUSTER, "cli1", who=ANN, heartbeat=False,
                                          sfn=lambda: starter.sfn))
        clock.advance(minutes=LEASE.total_seconds() / 60 - 1)
        assert starter.handle(load_event("hyperpod-node-health")).status == "debounced"
        clock.advance(minutes=2)  # LEASE + 1 min after it was taken: the controller answers the node failure
        assert starter.handle(load_event("hyperpod-cluster-state-change")).status == "started"
        killed.pop_all()


def test_the_heartbeat_renews_the_lease_while_the_command_lives(starter: Starter, clock: TickingClock) -> None:
    beats = 0

    def a_minute_passes(seconds: float) -> bool:  # the stop event's wait, with the injected clock
        nonlocal beats
        assert seconds == HEARTBEAT_EVERY.total_seconds()
        clock.advance(minutes=seconds / 60)
        beats += 1
        return beats > 30  # the command ends after half an hour (a long --timeout, a slow prompt)

    log = table_log(store_of(starter))
    with cluster_lock(log, CLUSTER, "cli1", who=ANN, heartbeat=False, sfn=lambda: starter.sfn) as lease:
        assert lease is not None
        lease.keep(a_minute_passes)
        assert clock() - T0 > timedelta(minutes=30)
        held = store_of(starter).locks.holding(CLUSTER)
        assert held is not None
        assert held.holder == "cli1"
        assert held.expires_at is not None
        assert held.expires_at >= clock() + LEASE - HEARTBEAT_EVERY - timedelta(seconds=1)
        assert starter.handle(load_event("hyperpod-node-health")).status == "debounced"
        lease.renew()  # and the command's own renewal finds the lock still its own


def test_the_heartbeat_stops_once_the_lease_is_lost(starter: Starter, clock: TickingClock) -> None:
    waits = 0

    def wait(seconds: float) -> bool:
        nonlocal waits
        waits += 1
        if waits == 1:  # the laptop slept past the lease and a run took the cluster
            clock.advance(minutes=LEASE.total_seconds() / 60 + 1)
            assert starter.handle(load_event("hyperpod-node-health")).status == "started"
        return waits > 10

    with cluster_lock(table_log(store_of(starter)), CLUSTER, "cli1", who=ANN, heartbeat=False,
                      sfn=lambda: starter.sfn) as lease:
        assert lease is not None
        lease.keep(wait)
        assert waits == 1  # no beat after the loss: the run's lock is left alone


def run_cli(starter: Starter, *args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), input=stdin, env={"AWS_DEFAULT_REGION": "us-east-1"})


@pytest.fixture
def cli_store(starter: Starter, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setattr(lock_cmd, "open_store", lambda *_: store_of(starter))
    return store_of(starter)


@pytest.mark.parametrize("item", [GOOD, HAND_EDITED["expiry removed"]], ids=["a command's lease", "hand-edited"])
def test_breaking_a_lock_asks_then_deletes_it_and_is_audited(starter: Starter, cli_store: Store,
                                                              item: dict[str, Any]) -> None:
    put_lock(starter, item)
    asked = run_cli(starter, "lock", "break", "--cluster", CLUSTER, "--table", "t", "--reason", "laptop gone",
                    stdin="n\n")
    assert asked.exit_code == 1
    assert "Break it?" in asked.output
    assert cli_store.locks.raw(CLUSTER) is not None  # refused at the prompt: nothing broken, nothing recorded
    assert [r for r in cli_store.audit.records(CLUSTER) if r["kind"] == "lock-broken"] == []

    got = run_cli(starter, "lock", "break", "--cluster", CLUSTER, "--table", "t", "--reason", "laptop gone", "--yes")
    assert got.exit_code == 0, got.output
    assert f"the lock of {CLUSTER} (laptop gone); recorded in t" in got.output
    assert cli_store.locks.raw(CLUSTER) is None
    [record] = [r for r in cli_store.audit.records(CLUSTER) if r["kind"] == "lock-broken"]
    me = boto3.client("sts").get_caller_identity()["Arn"]
    assert (record["who"], record["outcome"], record["detail"]) == (me, "broken", {"reason": "laptop gone"})
    assert record["before"] == {k: (int(v) if isinstance(v, Decimal) else v) for k, v in item.items()
                                if k not in KEY}  # whose lock it was, as it stood
    # the cluster is free: the controller answers the next event
    assert starter.handle(load_event("hyperpod-node-health")).status == "started"


def test_a_lock_that_changed_while_the_admin_looked_is_not_broken(starter: Starter, cli_store: Store,
                                                                  clock: TickingClock) -> None:
    put_lock(starter, GOOD)
    seen = cli_store.locks.raw(CLUSTER)
    assert seen is not None
    clock.advance(minutes=1)
    assert cli_store.locks.renew(CLUSTER, GOOD["holder"], LEASE)  # the command is alive after all
    assert not cli_store.locks.break_lock(CLUSTER, seen)
    assert cli_store.locks.raw(CLUSTER) is not None
    assert run_cli(starter, "lock", "break", "--cluster", "nothing-here", "--table", "t", "--reason", "x",
                   "--yes").output == "the lock of nothing-here is free: nothing to break\n"
