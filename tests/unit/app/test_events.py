from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest
from aws_lambda_powertools.utilities.parser import parse
from pydantic import ValidationError
from support.events import load_event

from rebalancer.app.trigger.events import TriggerEvent, parse_trigger


@pytest.mark.parametrize(("name", "kind", "clusters"), [
    ("hyperpod-cluster-state-change", "cluster-state", ("ml-cluster",)),
    ("hyperpod-node-health", "node-health", ("ml-cluster",)),
    ("hyperpod-cluster-event", "cluster-event", ("ml-cluster",)),
    ("alarm-state-change", "alarm", ()),  # the stack's alarms have no ClusterName dimension: every cluster
    ("scheduled", "schedule", ()),
])
def test_every_sample_event_parses(name: str, kind: str, clusters: tuple[str, ...]) -> None:
    event = load_event(name)
    trigger = parse_trigger(event)
    assert (trigger.kind, trigger.clusters, trigger.event_id) == (kind, clusters, event["id"])
    assert trigger.relevant


def test_the_summary_says_what_happened() -> None:
    assert parse_trigger(load_event("hyperpod-node-health")).summary == (
        "node i-0123456789abcdef0 of ml-cluster is Unhealthy (repair: Replace): HyperPod Health Monitoring Agent "
        "(HMA) has detected fault type NvidiaGpuXidError on this node and is unhealthy.")
    assert parse_trigger(load_event("hyperpod-cluster-state-change")).summary == \
        "cluster ml-cluster is InService (gpu 3/4)"
    assert parse_trigger(load_event("hyperpod-cluster-event")).summary == \
        "Error event on ml-cluster: Instance creation in Cluster ml-cluster and InstanceGroup gpu failed"


def test_an_alarm_leaving_alarm_is_not_a_reason_to_run() -> None:
    event = load_event("alarm-state-change")
    event["detail"]["state"]["value"] = "OK"
    assert not parse_trigger(event).relevant


def test_an_alarm_with_a_cluster_dimension_concerns_that_cluster_only() -> None:
    event = load_event("alarm-state-change")
    assert parse_trigger(event).clusters == ()
    event["detail"]["configuration"]["metrics"][0]["metricStat"]["metric"]["dimensions"]["ClusterName"] = "ml-cluster"
    assert parse_trigger(event).clusters == ("ml-cluster",)


@pytest.mark.parametrize("name", ["malformed-missing-detail", "malformed-unknown-type"])
def test_malformed_and_unknown_events_raise_a_validation_error(name: str) -> None:
    with pytest.raises(ValidationError):
        parse_trigger(load_event(name))


# --- the documented payloads and their variants --------------------------------------------------------------------
# "Events that Amazon SageMaker AI sends to Amazon EventBridge" and "SageMaker HyperPod cluster events reference"
# (docs.aws.amazon.com/sagemaker/latest/dg/): the samples in events/ follow them field for field.

def test_the_samples_carry_the_documented_fields() -> None:
    health = load_event("hyperpod-node-health")["detail"]
    assert set(health) == {"ClusterName", "ClusterArn", "InstanceId", "Tags", "HealthSummary"}
    assert set(health["HealthSummary"]) == {"HealthStatus", "HealthStatusReason", "RepairAction", "Recommendation"}
    event = load_event("hyperpod-cluster-event")["detail"]["EventDetails"]
    assert isinstance(event["EventTime"], int)
    assert event["EventTime"] > 10**12  # epoch milliseconds
    assert re.fullmatch(r"[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}", event["EventId"])
    assert {"EventId", "ClusterArn", "ClusterName", "EventTime", "ResourceType", "EventLevel"} <= set(event)
    state = load_event("hyperpod-cluster-state-change")["detail"]
    assert isinstance(state["CreationTime"], int)
    assert state["FailureMessage"] == ""


def test_epoch_millisecond_times_are_read_as_milliseconds() -> None:
    event = parse(event=load_event("hyperpod-cluster-event"), model=TriggerEvent)  # type: ignore[call-overload]
    assert event.detail.EventDetails.EventTime == datetime(2026, 11, 30, 12, 2, tzinfo=UTC)
    state = parse(event=load_event("hyperpod-cluster-state-change"), model=TriggerEvent)  # type: ignore[call-overload]
    assert state.detail.CreationTime == datetime(2026, 11, 30, tzinfo=UTC)


def _cluster_event(**changes: Any) -> dict[str, Any]:
    event = load_event("hyperpod-cluster-event")
    details = event["detail"]["EventDetails"]
    for key, value in changes.items():
        if value is None:
            details.pop(key, None)
        else:
            details[key] = value
    return event


@pytest.mark.parametrize(("changes", "summary"), [
    # the EventBridge page's own example: a lifecycle-script event, no EventLevel
    ({"EventLevel": None, "EventTime": 1745858447412,
      "EventDetails": {"EventMetadata": {"Instance": {"LcsExecutionState": "Started"}}},
      "Description": "Instance lifecycle script execution for EC2InstanceId i-0123456789abcdef0 has Started"},
     "event on ml-cluster: Instance lifecycle script execution for EC2InstanceId i-0123456789abcdef0 has Started"),
    # a cluster-scoped event carries neither instance group nor instance
    ({"ResourceType": "Cluster", "InstanceGroupName": None, "InstanceId": None, "EventLevel": "Info",
      "EventDetails": None, "Description": "Cluster ml-cluster Update completed successfully"},
     "Info event on ml-cluster: Cluster ml-cluster Update completed successfully"),
    ({"ResourceType": "InstanceGroup", "InstanceId": None, "EventLevel": "Warn", "Description": None},
     "Warn event on ml-cluster: 4f9d2c1b-7e6a-4b5c-9d8e-0f1a2b3c4d5e"),
    # a level AWS may add later is carried, not rejected
    ({"EventLevel": "Critical"}, "Critical event on ml-cluster: Instance creation in Cluster ml-cluster and "
                                 "InstanceGroup gpu failed"),
    ({"EventTime": "2026-11-30T12:02:00Z"}, "Error event on ml-cluster: Instance creation in Cluster ml-cluster and "
                                            "InstanceGroup gpu failed"),
])
def test_documented_cluster_event_variants_start_a_run(changes: dict[str, Any], summary: str) -> None:
    trigger = parse_trigger(_cluster_event(**changes))
    assert (trigger.kind, trigger.clusters, trigger.summary, trigger.relevant) == (
        "cluster-event", ("ml-cluster",), summary, True)


@pytest.mark.parametrize(("health", "summary"), [
    # the documented example: unhealthy, nothing repaired automatically
    ({"HealthStatus": "Unhealthy", "HealthStatusReason": "fault type NvidiaErrorTerminate", "RepairAction": "None",
      "Recommendation": "Please Replace the Faulty Node."},
     "node i-0123456789abcdef0 of ml-cluster is Unhealthy: fault type NvidiaErrorTerminate"),
    # a node coming back is capacity coming back: also a reason to run
    ({"HealthStatus": "Healthy"}, "node i-0123456789abcdef0 of ml-cluster is Healthy"),
    ({"HealthStatus": "UnschedulablePendingReboot", "RepairAction": "Reboot"},
     "node i-0123456789abcdef0 of ml-cluster is UnschedulablePendingReboot (repair: Reboot)"),
])
def test_documented_node_health_variants_start_a_run(health: dict[str, Any], summary: str) -> None:
    event = load_event("hyperpod-node-health")
    event["detail"]["HealthSummary"] = health
    trigger = parse_trigger(event)
    assert (trigger.kind, trigger.clusters, trigger.summary, trigger.relevant) == (
        "node-health", ("ml-cluster",), summary, True)


def test_a_node_health_event_naming_its_instance_group_still_parses() -> None:
    event = load_event("hyperpod-node-health")
    event["detail"]["InstanceGroupName"] = "gpu"  # the pre-documentation shape; extra fields are kept
    assert parse_trigger(event).clusters == ("ml-cluster",)


def test_a_state_change_of_a_flexible_instance_group_parses() -> None:
    event = load_event("hyperpod-cluster-state-change")
    group = event["detail"]["InstanceGroups"][0]
    del group["InstanceType"]
    group["InstanceRequirements"] = {"InstanceTypes": ["ml.p5.48xlarge", "ml.p5e.48xlarge"]}
    group["InstanceTypeDetails"] = [{"InstanceType": "ml.p5.48xlarge", "CurrentCount": 2},
                                    {"InstanceType": "ml.p5e.48xlarge", "CurrentCount": 1}]
    assert parse_trigger(event).summary == "cluster ml-cluster is InService (gpu 3/4)"


def test_a_failed_cluster_state_change_with_its_failure_message_parses() -> None:
    event = load_event("hyperpod-cluster-state-change")
    event["detail"].update(ClusterStatus="Failed", FailureMessage="Insufficient capacity")
    event["detail"]["InstanceGroups"][0].update(Status="Failed", CurrentCount=0, TargetCount=2)
    assert parse_trigger(event).summary == "cluster ml-cluster is Failed (gpu 0/2)"


def test_documented_alarm_variants() -> None:
    single = load_event("alarm-state-change")
    math = load_event("alarm-state-change")  # metric math: an expression entry has no metricStat
    math["detail"]["configuration"]["metrics"].insert(
        0, {"expression": "SUM(METRICS())", "id": "e1", "label": "Total", "returnData": True})
    composite = load_event("alarm-state-change")  # composite alarms carry an alarmRule and no metrics
    composite["detail"]["configuration"] = {"alarmRule": "ALARM(a) OR ALARM(b)", "description": "any"}
    for event in (single, math, composite):
        trigger = parse_trigger(event)
        assert (trigger.kind, trigger.clusters, trigger.relevant) == ("alarm", (), True)
    math["detail"]["configuration"]["metrics"][1]["metricStat"]["metric"]["dimensions"]["ClusterName"] = "ml-cluster"
    assert parse_trigger(math).clusters == ("ml-cluster",)


@pytest.mark.parametrize(("path", "field"), [
    (("detail", "ClusterName"), "ClusterName"),
    (("detail", "InstanceId"), "InstanceId"),
    (("detail", "HealthSummary", "HealthStatus"), "HealthStatus"),
])
def test_a_node_health_event_without_what_names_the_node_is_malformed(path: tuple[str, ...], field: str) -> None:
    event = load_event("hyperpod-node-health")
    target = event
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    with pytest.raises(ValidationError, match=field):
        parse_trigger(event)
