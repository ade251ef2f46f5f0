"""The events that start a run, read field by field (EventBridge envelope + the detail of each kind we subscribe to),
and what the trigger makes of them: which clusters, and why.

Plain code rather than pydantic models: the trigger runs on every HyperPod event, alarm and schedule tick, and its
cold start would otherwise be mostly pydantic's import and the schema building of a dozen models it reads a few
strings from. The reading is the one those models made (tests/support/event_models.py keeps them, and the tests
check the two agree): the envelope's fields as Powertools' EventBridgeModel requires them, the detail-type picks
the kind, each kind's required fields must be there with the right type, optional ones may be null, numbers in
strings count as numbers, unknown fields are kept out of the way rather than refused.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

STATE_CHANGE = "SageMaker HyperPod Cluster State Change"
NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"
CLUSTER_EVENT = "SageMaker HyperPod Cluster Event"
ALARM = "CloudWatch Alarm State Change"
SCHEDULED = "Scheduled Event"
RUN_FINISHED = "Step Functions Execution Status Change"
SOURCES = {STATE_CHANGE: "aws.sagemaker", NODE_HEALTH: "aws.sagemaker", CLUSTER_EVENT: "aws.sagemaker",
           ALARM: "aws.cloudwatch", SCHEDULED: "aws.events", RUN_FINISHED: "aws.states"}
ALARM_STATES = ("OK", "ALARM", "INSUFFICIENT_DATA")
INTEGER_TEXT = re.compile(r"\s*[+-]?\d+(_\d+)*(\.0*)?\s*")
NUMBER_TEXT = re.compile(r"[+-]?\d+(\.\d+)?")
MAX_UNIX_SECONDS = 253_402_300_799  # 9999-12-31T23:59:59Z
MS_THRESHOLD = 20_000_000_000  # a unix time above this is in milliseconds (as pydantic reads them)


class MalformedEvent(ValueError):
    """An event the trigger cannot read; the message names the field (`detail.ClusterName: field required`)."""

    def __init__(self, path: str, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path = path


# --- typed reads of one field --------------------------------------------------------------------------------------
# The fields below follow AWS's documented payloads ("Events that Amazon SageMaker AI sends to Amazon EventBridge",
# "SageMaker HyperPod cluster events reference"); events/ holds one of each. Only what names the cluster and says
# what happened is required: a field AWS adds, drops or gives a new value (an EventLevel, a HealthStatus) must not
# turn an event of a managed cluster into a malformed one.

class Fields:
    """One JSON object of the event, read at `path`. A field is required (present, not null), optional (may be
    missing or null), or defaulted (may be missing, not null: a list or an object the event may leave out)."""

    def __init__(self, value: Any, path: str):
        if not isinstance(value, dict):
            raise MalformedEvent(path or "(event)", f"expected an object, got {type(value).__name__}")
        self.doc, self.path = value, path

    def _at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def _get(self, key: str, *, missing: bool, null: bool) -> Any:
        if key not in self.doc:
            if missing:
                return None
            raise MalformedEvent(self._at(key), "field required")
        value = self.doc[key]
        if value is None and not null:
            raise MalformedEvent(self._at(key), "must not be null")
        return value

    def text(self, key: str, *, optional: bool = False) -> Any:
        value = self._get(key, missing=optional, null=optional)
        if value is not None and not isinstance(value, str):
            raise MalformedEvent(self._at(key), f"expected a string, got {type(value).__name__}")
        return value

    def integer(self, key: str) -> int | None:
        """Optional; a whole number, also as a float without fraction or in a string ("3")."""
        value = self._get(key, missing=True, null=True)
        if value is None or isinstance(value, int):
            return None if value is None else int(value)
        if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 2**63:
            return int(value)
        if isinstance(value, str) and INTEGER_TEXT.fullmatch(value):
            return int(value.strip().replace("_", "").split(".")[0])
        raise MalformedEvent(self._at(key), f"expected a whole number, got {value!r:.40}")

    def time(self, key: str, *, optional: bool = True, epoch_millis: bool = False) -> None:
        """A time: ISO 8601 text, or a unix time (seconds or milliseconds; with epoch_millis, a number is always
        milliseconds, as HyperPod sends CreationTime and EventTime). Checked, not kept: no decision reads it."""
        value = self._get(key, missing=optional, null=optional)
        if value is not None and not _is_time(value, epoch_millis):
            raise MalformedEvent(self._at(key), f"expected a time, got {value!r:.40}")

    def obj(self, key: str, *, optional: bool = False) -> Fields | None:
        value = self._get(key, missing=optional, null=optional)
        return None if value is None else Fields(value, self._at(key))

    def mapping(self, key: str, *, defaulted: bool = False) -> dict[str, Any]:
        """Optional (null allowed), or defaulted (missing allowed, null not)."""
        value = self._get(key, missing=True, null=not defaulted)
        if value is not None and not isinstance(value, dict):
            raise MalformedEvent(self._at(key), f"expected an object, got {type(value).__name__}")
        return value or {}

    def objects(self, key: str, *, defaulted: bool = False) -> list[Fields]:
        """Optional (null allowed), or defaulted (missing allowed, null not)."""
        return [Fields(v, f"{self._at(key)}.{i}") for i, v in enumerate(self._list(key, missing=True,
                                                                                  null=not defaulted))]

    def texts(self, key: str) -> None:
        """Required: a list of strings."""
        for i, value in enumerate(self._list(key, missing=False, null=False)):
            if not isinstance(value, str):
                raise MalformedEvent(f"{self._at(key)}.{i}", f"expected a string, got {type(value).__name__}")

    def _list(self, key: str, *, missing: bool, null: bool) -> list[Any]:
        value = self._get(key, missing=missing, null=null)
        if value is None:
            return []
        if not isinstance(value, list | tuple):
            raise MalformedEvent(self._at(key), f"expected a list, got {type(value).__name__}")
        return list(value)


def _is_time(value: Any, epoch_millis: bool) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        if not math.isfinite(value):
            return False
        seconds = value / 1000 if epoch_millis or abs(value) > MS_THRESHOLD else value
        return abs(seconds) <= MAX_UNIX_SECONDS
    if not isinstance(value, str):
        return False
    if NUMBER_TEXT.fullmatch(value):
        return _is_time(float(value), False)
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return True


# --- what the trigger makes of an event ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Trigger:
    """Why a run starts. `clusters` is empty when the event concerns every managed cluster (schedule, alarm without
    a ClusterName dimension). `relevant` is False for events that do not call for a run (an alarm leaving ALARM)."""

    event_id: str
    kind: str
    summary: str
    clusters: tuple[str, ...] = ()
    relevant: bool = True
    finished: str | None = None  # a run-finished event: the name of the execution that ended
    state_machine_arn: str | None = None


def event_id_of(event: Any) -> str:
    return str(event.get("id", "(no id)")) if isinstance(event, dict) else "(not an object)"


def parse_trigger(event: Any) -> Trigger:
    """Raises MalformedEvent (a ValueError naming the field) for malformed or unknown events."""
    envelope = Fields(event, "")
    if "detail-type" not in envelope.doc:
        raise MalformedEvent("detail-type", "field required")
    kind = envelope.doc["detail-type"]
    if not isinstance(kind, str) or kind not in SOURCES:
        raise MalformedEvent("detail-type", f"not an event the trigger subscribes to: {kind!r:.80}")
    event_id = _envelope(envelope, kind)
    reader = _READERS[kind]
    if kind == SCHEDULED:
        return reader(event_id, Fields(envelope.mapping("detail", defaulted=True), "detail"))
    detail = envelope.obj("detail")
    assert detail is not None  # required above
    return reader(event_id, detail)


def _envelope(envelope: Fields, kind: str) -> str:
    """The EventBridge envelope's fields (as Powertools' EventBridgeModel requires them); the event's id."""
    if envelope.text("source") != SOURCES[kind]:
        raise MalformedEvent("source", f"expected {SOURCES[kind]!r} for a {kind!r} event")
    event_id: str = envelope.text("id")
    for key in ("version", "account", "region"):
        envelope.text(key)
    envelope.text("replay-name", optional=True)
    envelope.time("time", optional=False)
    envelope.texts("resources")
    return event_id


def _state_change(event_id: str, d: Fields) -> Trigger:
    d.text("ClusterArn")
    name: str = d.text("ClusterName")
    status: str = d.text("ClusterStatus")
    d.time("CreationTime", epoch_millis=True)
    d.text("FailureMessage", optional=True)
    counts = []
    for g in d.objects("InstanceGroups", defaulted=True):
        group: str = g.text("InstanceGroupName")
        g.text("InstanceType", optional=True)
        for t in g.objects("InstanceTypeDetails"):
            t.text("InstanceType", optional=True)
            t.integer("CurrentCount")
        current, target = g.integer("CurrentCount"), g.integer("TargetCount")
        g.text("Status", optional=True)
        if current is not None or target is not None:
            counts.append(f"{group} {current}/{target}")
    groups = ", ".join(counts)
    return Trigger(event_id=event_id, kind="cluster-state", clusters=(name,),
                   summary=f"cluster {name} is {status}" + (f" ({groups})" if groups else ""))


def _node_health(event_id: str, d: Fields) -> Trigger:
    name: str = d.text("ClusterName")
    node: str = d.text("InstanceId")
    h = d.obj("HealthSummary")
    assert h is not None
    status: str = h.text("HealthStatus")
    reason = h.text("HealthStatusReason", optional=True)
    repair = h.text("RepairAction", optional=True)
    h.text("Recommendation", optional=True)
    d.text("ClusterArn", optional=True)
    d.mapping("Tags")
    repair = repair if repair not in (None, "", "None") else None
    return Trigger(event_id=event_id, kind="node-health", clusters=(name,),
                   summary=f"node {node} of {name} is {status}" + (f" (repair: {repair})" if repair else "")
                           + (f": {reason}" if reason else ""))


def _cluster_event(event_id: str, d: Fields) -> Trigger:
    e = d.obj("EventDetails")
    assert e is not None
    name: str = e.text("ClusterName")
    found = {key: e.text(key, optional=True) for key in ("EventId", "ClusterArn", "InstanceGroupName", "InstanceId",
                                                         "ResourceType", "EventLevel", "Description")}
    e.time("EventTime", epoch_millis=True)
    e.mapping("EventDetails")
    level = f"{found['EventLevel']} event" if found["EventLevel"] else "event"
    what = found["Description"] or found["EventId"] or found["ResourceType"] or "no description"
    return Trigger(event_id=event_id, kind="cluster-event", clusters=(name,), summary=f"{level} on {name}: {what}")


def _alarm_state(s: Fields) -> str:
    value = s.text("value")
    if value not in ALARM_STATES:
        raise MalformedEvent(f"{s.path}.value", f"expected one of {', '.join(ALARM_STATES)}, got {value!r:.40}")
    s.text("reason", optional=True)
    s.text("timestamp", optional=True)
    return str(value)


def _alarm(event_id: str, d: Fields) -> Trigger:
    alarm: str = d.text("alarmName")
    state = d.obj("state")
    assert state is not None
    value = _alarm_state(state)
    previous = d.obj("previousState", optional=True)
    if previous is not None:
        _alarm_state(previous)
    configuration = d.mapping("configuration", defaulted=True)
    return Trigger(event_id=event_id, kind="alarm", clusters=_alarm_clusters(configuration),
                   summary=f"alarm {alarm} is {value}", relevant=value == "ALARM")


def _alarm_clusters(configuration: dict[str, Any]) -> tuple[str, ...]:
    """ClusterName dimensions of the alarm's metrics; empty when the alarm is not about one cluster."""
    metrics = configuration.get("metrics")
    names: list[str] = []
    for metric in metrics if isinstance(metrics, list) else []:
        name = _dig(metric, "metricStat", "metric", "dimensions", "ClusterName")
        if isinstance(name, str) and name:
            names.append(name)
    return tuple(dict.fromkeys(names))


def _dig(value: Any, *keys: str) -> Any:
    """value[k1][k2]…, or None where a level is missing or not an object (alarm metrics come in several shapes:
    metricStat, expression, anomaly detection)."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _schedule(event_id: str, _d: Fields) -> Trigger:
    return Trigger(event_id=event_id, kind="schedule", summary="periodic reconciliation")


def _run_finished(event_id: str, d: Fields) -> Trigger:
    d.text("executionArn")
    state_machine: str = d.text("stateMachineArn")
    name: str = d.text("name")
    status: str = d.text("status")
    cluster = _input_cluster(d.text("input", optional=True))
    return Trigger(event_id=event_id, kind="run-finished", clusters=(cluster,) if cluster else (),
                   summary=f"run {name} is {status}", finished=name, state_machine_arn=state_machine,
                   relevant=bool(cluster) and status != "RUNNING")


def _input_cluster(run_input: str | None) -> str | None:
    """The `cluster_name` of the run's input (what the trigger started it with), or None."""
    try:
        doc = json.loads(run_input or "")
    except ValueError:
        return None
    name = doc.get("cluster_name") if isinstance(doc, dict) else None
    return name if isinstance(name, str) and name else None


_READERS = {STATE_CHANGE: _state_change, NODE_HEALTH: _node_health, CLUSTER_EVENT: _cluster_event, ALARM: _alarm,
            SCHEDULED: _schedule, RUN_FINISHED: _run_finished}
