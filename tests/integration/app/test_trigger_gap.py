"""The trigger after an EventBridge gap, against the emulator over HTTP (DynamoDB, Step Functions and SageMaker on
one loopback server): each HyperPod event it receives is recorded as seen; after a silence longer than the gap it
lists the cluster's events since the last one it saw (ListClusterEvents) and records each as replayed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from support.emulator import EmulatorHandle, http_emulator
from support.events import load_event
from support.template import create_table

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.app.trigger.events import SUMMARY_MAX_BYTES
from rebalancer.app.trigger.start import Starter
from rebalancer_tools.fakes.memory_store import MemoryStore

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
GAP = timedelta(minutes=30)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def world() -> Iterator[tuple[EmulatorHandle, Store, Clock]]:
    with http_emulator() as handle:
        clock = Clock()
        handle.emulator.set_clock(clock)
        create_table(handle.client("dynamodb"))
        resource = boto3.resource("dynamodb", region_name="us-east-1", endpoint_url=handle.endpoint,
                                  aws_access_key_id="testing", aws_secret_access_key="testing")
        handle.emulator.create_cluster("ml-cluster", [("p5", "ml.p5.48xlarge", 4)])
        yield handle, Store("t", resource=resource, now=clock), clock


def _starter(handle: EmulatorHandle, store: Any, clock: Clock, made: list[str] | None = None) -> Starter:
    sfn = handle.client("stepfunctions")
    arn = sfn.create_state_machine(name="rebalancer-rebalance", roleArn="arn:aws:iam::123456789012:role/sfn",
                                   definition=json.dumps({"StartAt": "S", "States": {"S": {"Type": "Succeed"}}})
                                   )["stateMachineArn"]
    return Starter(store=store, sfn=sfn, state_machine_arn=arn, managed=("ml-cluster",), lock_ttl=timedelta(hours=1),
                   debounce=timedelta(minutes=2), clock=clock, sagemaker=lambda: _client(handle, made),
                   event_gap=GAP)


def _client(handle: EmulatorHandle, made: list[str] | None) -> Any:
    if made is not None:
        made.append("sagemaker")
    return handle.client("sagemaker")


def _at(event: dict[str, Any], when: datetime) -> dict[str, Any]:
    return {**event, "time": when.strftime("%Y-%m-%dT%H:%M:%SZ")}


def _seen(store: Any) -> list[tuple[str, str]]:
    return [(r["outcome"], r["detail"]["summary"]) for r in store.audit.records("ml-cluster")
            if r["kind"] == "cluster-event"]


def test_after_a_gap_the_cluster_events_since_the_last_one_seen_are_replayed_once(
        world: tuple[EmulatorHandle, Store, Clock]) -> None:
    handle, store, clock = world
    emu = handle.emulator
    starter = _starter(handle, store, clock)
    assert starter.handle(_at(load_event("scheduled"), T0)).replayed == 0  # the first sighting: nothing to compare
    assert store.sightings.last_event("ml-cluster") == T0
    # EventBridge is down: the node's health check and a scaling operation are never delivered.
    clock.now = T0 + timedelta(minutes=10)
    emu.set_node_status("ml-cluster", "p5-1", "DeepHealthCheckInProgress", "Deep health check started")
    clock.now = T0 + timedelta(minutes=12)
    scaling = emu.start_operation("ml-cluster", "Scaling", {"p5": 6})
    clock.now = T0 + timedelta(minutes=45)
    out = starter.handle(_at(load_event("scheduled"), clock.now))
    assert (out.status, out.replayed) == ("debounced", 2)  # the first run is still under way (moto runs nothing)
    assert sorted(_seen(store)) == [  # one instant of the trigger's clock: the records sort by event id
        ("replayed", f"Info on Cluster: Scaling operation started on p5 (operation {scaling})"),
        ("replayed", "Warn on Instance p5-1: node p5-1: Deep health check started")]
    # Delivered again a few minutes later: recorded as seen, no second replay (the gap is closed).
    clock.now = T0 + timedelta(minutes=50)
    out = starter.handle(_at(load_event("hyperpod-node-health"), clock.now))
    assert out.replayed == 0
    assert _seen(store)[-1][0] == "seen"
    assert len(_seen(store)) == 3
    # An event delivered late does not move the mark back (the next gap is measured from the latest).
    starter.handle(_at(load_event("hyperpod-node-health"), T0 + timedelta(minutes=20)))
    assert store.sightings.last_event("ml-cluster") == T0 + timedelta(minutes=50)


def test_a_silence_within_the_gap_lists_nothing_and_a_refused_list_still_starts_the_run(
        world: tuple[EmulatorHandle, Store, Clock]) -> None:
    handle, _, clock = world
    store = MemoryStore(now=clock)
    made: list[str] = []
    starter = _starter(handle, store, clock, made)
    starter.handle(_at(load_event("scheduled"), T0))
    clock.now = T0 + GAP
    assert starter.handle(_at(load_event("scheduled"), clock.now)).replayed == 0
    assert made == []  # no gap, no SageMaker client made (a client costs a cold start ~0.2 s)
    handle.emulator.inject("server-error", "ListClusterEvents", status_code=500)
    clock.now = T0 + 3 * GAP
    out = starter.handle(_at(load_event("scheduled"), clock.now))
    assert (out.status, out.replayed) == ("started", 0)
    assert made == ["sagemaker"]
    assert store.sightings.last_event("ml-cluster") == clock.now


def test_a_replayed_event_of_300_kb_with_control_characters_is_recorded_clean_and_cut(
        world: tuple[EmulatorHandle, Store, Clock]) -> None:
    """EventBridge events were cleaned and cut to 2 KB; a replayed one kept its 300 KB Description as it came."""
    handle, store, clock = world
    starter = _starter(handle, store, clock)
    starter.handle(_at(load_event("scheduled"), T0))
    clock.now = T0 + timedelta(minutes=10)
    hostile = "\x1b[2J\u202eforged\nline " + "x" * 300_000
    handle.emulator.set_node_status("ml-cluster", "p5-1", "DeepHealthCheckInProgress", hostile)
    clock.now = T0 + timedelta(minutes=45)
    assert starter.handle(_at(load_event("scheduled"), clock.now)).replayed == 1
    [(outcome, summary)] = _seen(store)
    assert outcome == "replayed"
    assert len(summary.encode()) <= SUMMARY_MAX_BYTES
    assert summary.startswith("Warn on Instance p5-1: node p5-1: [2Jforged line xxx")
    assert summary.endswith("x…")
    assert not any(ch in summary for ch in "\x1b\u202e\n")
