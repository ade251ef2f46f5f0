"""The trigger never raises on an event: arbitrary JSON, and each sample event with one value replaced (alarm metrics
of odd shapes crashed it: EventBridge retried, then dead-lettered), give a status, and start at most one run."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.events import load_event
from support.fuzz import JSON, fuzz, mutated, paths, replaced, within_memory

from rebalancer.app.trigger.events import SUMMARY_MAX_BYTES
from rebalancer.app.trigger.start import Starter
from rebalancer_tools.fakes.memory_store import MemoryStore

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SAMPLES = ["hyperpod-cluster-state-change", "hyperpod-node-health", "hyperpod-cluster-event", "alarm-state-change",
           "scheduled", "stepfunctions-execution-finished"]
SM = "arn:aws:states:us-east-1:123456789012:stateMachine:rebalancer-rebalance"
STATUSES = {"started", "debounced", "ignored", "malformed", "irrelevant"}


@dataclass
class Sfn:
    started: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)

    def start_execution(self, **kw: Any) -> dict[str, Any]:
        self.started.append(kw["name"])
        self.inputs.append(kw["input"])
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
@within_memory()
def test_arbitrary_json_is_never_raised_on(event: Any) -> None:
    outcome, sfn = handle(event)
    assert outcome["status"] == "malformed" or sfn.started == [] or outcome["executions"]


@fuzz(max_examples=300)
@given(event=st.sampled_from(SAMPLES).flatmap(lambda name: mutated(load_event(name))))
@within_memory()
def test_a_sample_event_with_one_value_replaced_is_never_raised_on(event: Any) -> None:
    handle(event)


# --- the largest events (issue 25 item 6) ------------------------------------------------------------------------
EVENT_MAX_BYTES = 256 * 1024  # EventBridge's PutEvents entry limit
RUN_INPUT_MAX_BYTES = 256 * 1024  # Step Functions' StartExecution input limit, in UTF-8
WIDE = "\u00e9\u4e2d\U0001f525\u202e\n"  # 2, 3 and 4 UTF-8 bytes, a bidi override and a line break


def _text_leaves(doc: Any) -> list[tuple[Any, ...]]:
    return [p for p in paths(doc) if p[:1] == ("detail",) and isinstance(_at(doc, p), str)]


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def largest(sample: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    """`sample` with the text at `path` grown (with characters of every UTF-8 width) until the event is 256 KB."""
    size = len(json.dumps(sample, ensure_ascii=False).encode())
    per = len(json.dumps(WIDE, ensure_ascii=False).encode()) - 2
    event = replaced(sample, path, _at(sample, path) + WIDE * ((EVENT_MAX_BYTES - size) // per))
    assert EVENT_MAX_BYTES - 16 <= len(json.dumps(event, ensure_ascii=False).encode()) <= EVENT_MAX_BYTES
    return event


CASES = [(name, path) for name in SAMPLES for path in _text_leaves(load_event(name))]


@pytest.mark.parametrize(("name", "path"), CASES, ids=[f"{n}:{'.'.join(map(str, p))}" for n, p in CASES])
def test_the_largest_event_of_every_kind_gives_a_run_input_within_the_step_functions_limit(
        name: str, path: tuple[Any, ...]) -> None:
    outcome, sfn = handle(largest(load_event(name), path))
    for run_input in sfn.inputs:
        assert len(run_input.encode("utf-8")) <= RUN_INPUT_MAX_BYTES
        trigger = json.loads(run_input)["trigger"]
        assert len(trigger["summary"].encode()) <= SUMMARY_MAX_BYTES
        assert "\n" not in trigger["summary"]
        assert "\u202e" not in trigger["summary"]
    assert len(json.dumps(outcome).encode()) <= 64 * 1024


def test_a_node_health_reason_of_240_kb_starts_a_run_with_its_reason_cut() -> None:
    """The issue's case: a 240 KB non-ASCII HealthStatusReason became a 720 KB run input (escaped when built)."""
    event = load_event("hyperpod-node-health")
    event["detail"]["HealthSummary"]["HealthStatusReason"] = "\u4e2d" * (80 * 1024)
    outcome, sfn = handle(event)
    assert outcome["status"] == "started"
    [run_input] = sfn.inputs
    summary = json.loads(run_input)["trigger"]["summary"]
    assert summary.startswith("node i-0123456789abcdef0 of ml-cluster is Unhealthy (repair: Replace): \u4e2d")
    assert summary.endswith("…")
    assert len(run_input.encode()) < 16 * 1024


def metric(cluster: str) -> dict[str, Any]:
    return {"id": f"m{abs(hash(cluster)) % 10**8}", "returnData": True,
            "metricStat": {"metric": {"namespace": "HyperPodRebalancer", "name": "StrandedAccelerators",
                                      "dimensions": {"ClusterName": cluster}}, "period": 300, "stat": "Maximum"}}


def test_an_alarm_of_ten_thousand_unmanaged_clusters_and_one_managed_starts_that_ones_run_alone() -> None:
    """The managed cluster's run starts, and nothing is done per unmanaged metric (no lock, no Step Functions call,
    no record): the work per metric is reading its dimension."""
    event = load_event("alarm-state-change")
    event["detail"]["configuration"]["metrics"] = [metric(f"tenant-{i:05d}") for i in range(10_000)] \
        + [metric("ml-cluster")]
    sfn = Sfn()
    store = MemoryStore(now=lambda: T0)
    starter = Starter(store=store, sfn=sfn, state_machine_arn=SM, managed=("ml-cluster", "other"),
                      lock_ttl=timedelta(minutes=30), debounce=timedelta(minutes=5), clock=store.now)
    outcome = starter.handle(event).as_dict()
    assert outcome["status"] == "started"
    assert sfn.started == outcome["executions"] == ["ml-cluster-20261130T120000"]
    assert len(store.audit.records("ml-cluster")) == 1  # the trigger record of that run
    assert len(json.dumps(outcome)) < 4096


def test_an_alarm_of_ten_thousand_unmanaged_clusters_alone_is_ignored_in_a_bounded_answer() -> None:
    event = load_event("alarm-state-change")
    event["detail"]["configuration"]["metrics"] = [metric(f"tenant-{i:05d}") for i in range(10_000)]
    outcome, sfn = handle(event)
    assert outcome["status"] == "ignored"
    assert sfn.started == []
    assert outcome["reason"].startswith("not a managed cluster: tenant-00000, tenant-00001, tenant-00002")
    assert outcome["reason"].endswith("and 9,997 more")
