"""The trigger never raises on an event: arbitrary JSON, and each sample event with one value replaced (alarm metrics
of odd shapes crashed it: EventBridge retried, then dead-lettered), give a status, and start at most one run."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.events import load_event
from support.fuzz import JSON, fuzz, mutated

from rebalancer.app.trigger.start import Starter
from rebalancer_tools.memory_store import MemoryStore

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SAMPLES = ["hyperpod-cluster-state-change", "hyperpod-node-health", "hyperpod-cluster-event", "alarm-state-change",
           "scheduled", "stepfunctions-execution-finished"]
SM = "arn:aws:states:us-east-1:123456789012:stateMachine:rebalancer-rebalance"
STATUSES = {"started", "debounced", "ignored", "malformed", "irrelevant"}


@dataclass
class Sfn:
    started: list[str] = field(default_factory=list)

    def start_execution(self, **kw: Any) -> dict[str, Any]:
        self.started.append(kw["name"])
        return {}

    def describe_execution(self, **_: Any) -> dict[str, Any]:
        return {"status": "RUNNING"}


def handle(event: Any) -> tuple[dict[str, Any], Sfn]:
    sfn = Sfn()
    store = MemoryStore(now=lambda: T0)
    starter = Starter(store=store, sfn=sfn, state_machine_arn=SM,
                      managed=("ml-cluster", "other"), lock_ttl=timedelta(minutes=30),
                      debounce=timedelta(minutes=5), clock=store.now)
    outcome = starter.handle(event).as_dict()
    assert outcome["status"] in STATUSES
    assert len(sfn.started) <= 2  # at most one per managed cluster
    return outcome, sfn


@pytest.mark.parametrize("metrics", [
    {"m1": {}}, ["m1"], [None], [{"metricStat": []}], [{"metricStat": {"metric": "x"}}],
    [{"metricStat": {"metric": {"dimensions": []}}}], [{"expression": "SUM(METRICS())", "id": "e1"}], "metrics",
    [{"metricStat": {"metric": {"dimensions": {"ClusterName": 7}}}}],
], ids=["a dict", "strings", "null", "list stat", "string metric", "list dimensions", "expression", "a string",
        "a number"])
def test_an_alarm_with_odd_metrics_concerns_every_cluster(metrics: Any) -> None:
    event = load_event("alarm-state-change")
    event["detail"]["configuration"]["metrics"] = metrics
    outcome, sfn = handle(event)
    assert outcome["status"] == "started"
    assert len(sfn.started) == 2  # no ClusterName dimension read: every managed cluster


@fuzz(max_examples=200)
@given(event=JSON)
def test_arbitrary_json_is_never_raised_on(event: Any) -> None:
    outcome, sfn = handle(event)
    assert outcome["status"] == "malformed" or sfn.started == [] or outcome["executions"]


@fuzz(max_examples=300)
@given(event=st.sampled_from(SAMPLES).flatmap(lambda name: mutated(load_event(name))))
def test_a_sample_event_with_one_value_replaced_is_never_raised_on(event: Any) -> None:
    handle(event)
