from __future__ import annotations

import pytest
from pydantic import ValidationError
from support.events import load_event

from rebalancer.app.events import parse_trigger


@pytest.mark.parametrize(("name", "kind", "clusters"), [
    ("hyperpod-cluster-state-change", "cluster-state", ("ml-cluster",)),
    ("hyperpod-node-health", "node-health", ("ml-cluster",)),
    ("hyperpod-cluster-event", "cluster-event", ("ml-cluster",)),
    ("alarm-state-change", "alarm", ("ml-cluster",)),
    ("scheduled", "schedule", ()),
])
def test_every_sample_event_parses(name: str, kind: str, clusters: tuple[str, ...]) -> None:
    event = load_event(name)
    trigger = parse_trigger(event)
    assert (trigger.kind, trigger.clusters, trigger.event_id) == (kind, clusters, event["id"])
    assert trigger.relevant


def test_the_summary_says_what_happened() -> None:
    assert parse_trigger(load_event("hyperpod-node-health")).summary == \
        "node i-0123456789abcdef0 of ml-cluster is Unschedulable: GPU_XID_ERROR"
    assert parse_trigger(load_event("hyperpod-cluster-state-change")).summary == \
        "cluster ml-cluster is InService (gpu 3/4)"


def test_an_alarm_leaving_alarm_is_not_a_reason_to_run() -> None:
    event = load_event("alarm-state-change")
    event["detail"]["state"]["value"] = "OK"
    assert not parse_trigger(event).relevant


def test_an_alarm_without_a_cluster_dimension_concerns_every_cluster() -> None:
    event = load_event("alarm-state-change")
    del event["detail"]["configuration"]["metrics"][0]["metricStat"]["metric"]["dimensions"]["ClusterName"]
    assert parse_trigger(event).clusters == ()


@pytest.mark.parametrize("name", ["malformed-missing-detail", "malformed-unknown-type"])
def test_malformed_and_unknown_events_raise_a_validation_error(name: str) -> None:
    with pytest.raises(ValidationError):
        parse_trigger(load_event(name))
