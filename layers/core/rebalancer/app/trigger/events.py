"""Models of the events that start a run, parsed with Powertools' parser (EventBridge envelope fields + typed detail),
and what the trigger makes of them: which clusters, and why."""

import json
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from rebalancer.parsing.lookup import dig
from rebalancer.parsing.text import clean_text, cut_utf8

STATE_CHANGE = "SageMaker HyperPod Cluster State Change"
NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"
CLUSTER_EVENT = "SageMaker HyperPod Cluster Event"
ALARM = "CloudWatch Alarm State Change"
SCHEDULED = "Scheduled Event"
RUN_FINISHED = "Step Functions Execution Status Change"


# The fields below follow AWS's documented payloads ("Events that Amazon SageMaker AI sends to Amazon EventBridge",
# "SageMaker HyperPod cluster events reference"); events/ holds one of each. Only what names the cluster and says
# what happened is required: a field AWS adds, drops or gives a new value (an EventLevel, a HealthStatus) must not
# turn an event of a managed cluster into a malformed one.


def _epoch_millis(value: Any) -> Any:
    """HyperPod sends CreationTime and EventTime as epoch milliseconds; pydantic alone would guess the unit."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value / 1000, UTC)
    return value


EpochMillis = Annotated[datetime, BeforeValidator(_epoch_millis)]


class Detail(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class InstanceTypeCount(Detail):
    InstanceType: str | None = None
    CurrentCount: int | None = None


class InstanceGroupStatus(Detail):
    """A DescribeCluster instance group as the state change carries it. A flexible instance group has no
    InstanceType but InstanceTypeDetails (one entry per type)."""

    InstanceGroupName: str
    InstanceType: str | None = None
    InstanceTypeDetails: tuple[InstanceTypeCount, ...] | None = None
    CurrentCount: int | None = None
    TargetCount: int | None = None
    Status: str | None = None


class ClusterStateChange(Detail):
    ClusterArn: str
    ClusterName: str
    ClusterStatus: str
    CreationTime: EpochMillis | None = None
    FailureMessage: str | None = None
    InstanceGroups: tuple[InstanceGroupStatus, ...] = ()


class HealthSummary(Detail):
    HealthStatus: str
    HealthStatusReason: str | None = None
    RepairAction: str | None = None
    Recommendation: str | None = None


class NodeHealth(Detail):
    """No InstanceGroupName: the documented payload names the node by InstanceId only."""

    ClusterName: str
    InstanceId: str
    HealthSummary: HealthSummary
    ClusterArn: str | None = None
    Tags: dict[str, Any] | None = None


class ClusterEventDetails(Detail):
    """Documented as required: EventId (a UUID), ClusterArn, ClusterName, EventTime (epoch ms), ResourceType
    (Cluster | InstanceGroup | Instance), EventLevel (Info | Warn | Error); the EventBridge page's own example has
    no EventLevel, so only the cluster is required here."""

    ClusterName: str
    EventId: str | None = None
    ClusterArn: str | None = None
    InstanceGroupName: str | None = None
    InstanceId: str | None = None
    ResourceType: str | None = None
    EventTime: EpochMillis | None = None
    EventLevel: str | None = None
    Description: str | None = None
    EventDetails: dict[str, Any] | None = None


class ClusterEvent(Detail):
    EventDetails: ClusterEventDetails


class AlarmState(Detail):
    value: Literal["OK", "ALARM", "INSUFFICIENT_DATA"]
    reason: str | None = None
    timestamp: str | None = None


class AlarmStateChange(Detail):
    alarmName: str  # noqa: N815 (the event spells it so)
    state: AlarmState
    previousState: AlarmState | None = None  # noqa: N815
    configuration: dict[str, Any] = Field(default_factory=dict)

    def cluster_names(self) -> tuple[str, ...]:
        """ClusterName dimensions of the alarm's metrics; empty when the alarm is not about one cluster."""
        metrics = self.configuration.get("metrics")
        names: list[str] = []
        for metric in metrics if isinstance(metrics, list) else []:
            name = dig(metric, "metricStat", "metric", "dimensions", "ClusterName")
            if isinstance(name, str) and name:
                names.append(name)
        return tuple(dict.fromkeys(names))


class StateChangeEvent(EventBridgeModel):
    source: Literal["aws.sagemaker"]
    detail_type: Literal["SageMaker HyperPod Cluster State Change"] = Field(alias="detail-type")
    detail: ClusterStateChange


class NodeHealthEvent(EventBridgeModel):
    source: Literal["aws.sagemaker"]
    detail_type: Literal["SageMaker HyperPod Cluster Node Health Event"] = Field(alias="detail-type")
    detail: NodeHealth


class HyperPodEvent(EventBridgeModel):
    source: Literal["aws.sagemaker"]
    detail_type: Literal["SageMaker HyperPod Cluster Event"] = Field(alias="detail-type")
    detail: ClusterEvent


class AlarmEvent(EventBridgeModel):
    source: Literal["aws.cloudwatch"]
    detail_type: Literal["CloudWatch Alarm State Change"] = Field(alias="detail-type")
    detail: AlarmStateChange


class ScheduledEvent(EventBridgeModel):
    source: Literal["aws.events"]
    detail_type: Literal["Scheduled Event"] = Field(alias="detail-type")
    detail: dict[str, Any] = Field(default_factory=dict)


class ExecutionStatus(Detail):
    executionArn: str  # noqa: N815 (the event spells it so)
    stateMachineArn: str  # noqa: N815
    name: str
    status: str
    input: str | None = None

    def cluster_name(self) -> str | None:
        """The `cluster_name` of the run's input (what the trigger started it with), or None."""
        try:
            doc = json.loads(self.input or "")
        except ValueError:
            return None
        name = doc.get("cluster_name") if isinstance(doc, dict) else None
        return name if isinstance(name, str) and name else None


class RunFinishedEvent(EventBridgeModel):
    """A run of our state machine ended: the trigger starts the follow-up a change during the run asked for."""

    source: Literal["aws.states"]
    detail_type: Literal["Step Functions Execution Status Change"] = Field(alias="detail-type")
    detail: ExecutionStatus


TriggerEvent = Annotated[StateChangeEvent | NodeHealthEvent | HyperPodEvent | AlarmEvent | ScheduledEvent
                         | RunFinishedEvent, Field(discriminator="detail_type")]


# A run's input must stay within Step Functions' 256 KB (UTF-8) whatever the event carries: EventBridge delivers
# events of up to 256 KB, and a HealthStatusReason or a Description may be most of that. The summary is free text
# for people (cleaned, then cut in bytes); names and ids are compared with ours, so one too long is malformed.
SUMMARY_MAX_BYTES = 2048
ID_MAX_BYTES = 256  # event ids, cluster and execution names (HyperPod: 63, Step Functions: 80), ARNs of them


def summary_text(text: str) -> str:
    """Event text as it is recorded and carried: one clean line of at most SUMMARY_MAX_BYTES of UTF-8, reading at
    most a few times that of `text` however long it is."""
    return cut_utf8(clean_text(text, SUMMARY_MAX_BYTES), SUMMARY_MAX_BYTES)


def id_text(text: str) -> str:
    """An id from outside (an event's) as it is recorded: one clean line of at most ID_MAX_BYTES."""
    return cut_utf8(clean_text(text, ID_MAX_BYTES), ID_MAX_BYTES)


def _identifier(text: str) -> str:
    if len(text.encode("utf-8", "replace")) > ID_MAX_BYTES:
        raise ValueError(f"longer than {ID_MAX_BYTES} bytes: {cut_utf8(text, 60)!r}")
    return text


Summary = Annotated[str, AfterValidator(summary_text)]
Identifier = Annotated[str, AfterValidator(_identifier)]


class Trigger(BaseModel):
    """Why a run starts. `clusters` is empty when the event concerns every managed cluster (schedule, alarm without
    a ClusterName dimension). `relevant` is False for events that do not call for a run (an alarm leaving ALARM)."""

    model_config = ConfigDict(frozen=True)

    event_id: Identifier
    kind: str
    # Every cluster the event names, however many (an alarm's metrics may name thousands, ours among them); the
    # trigger keeps the managed ones in one pass.
    clusters: tuple[Identifier, ...] = ()
    summary: Summary
    relevant: bool = True
    finished: Identifier | None = None  # a run-finished event: the name of the execution that ended
    state_machine_arn: Identifier | None = None
    at: datetime | None = None  # the event's time (EventBridge's `time`)


def event_id_of(event: Any) -> str:
    return id_text(str(event.get("id", "(no id)"))) if isinstance(event, dict) else "(not an object)"


def parse_trigger(event: Any) -> Trigger:
    """Raises pydantic's ValidationError (or Powertools' parser errors) for malformed or unknown events."""
    parsed: Any = parse(event=event, model=TriggerEvent)  # type: ignore[call-overload]
    return _trigger_of(parsed).model_copy(update={"at": parsed.time})


def _trigger_of(parsed: Any) -> Trigger:
    d = parsed.detail
    match parsed:
        case StateChangeEvent():
            groups = ", ".join(f"{g.InstanceGroupName} {g.CurrentCount}/{g.TargetCount}" for g in d.InstanceGroups
                               if g.CurrentCount is not None or g.TargetCount is not None)
            return Trigger(event_id=parsed.id, kind="cluster-state", clusters=(d.ClusterName,),
                           summary=f"cluster {d.ClusterName} is {d.ClusterStatus}" + (f" ({groups})" if groups else ""))
        case NodeHealthEvent():
            h = d.HealthSummary
            repair = h.RepairAction if h.RepairAction not in (None, "", "None") else None
            return Trigger(event_id=parsed.id, kind="node-health", clusters=(d.ClusterName,),
                           summary=f"node {d.InstanceId} of {d.ClusterName} is {h.HealthStatus}"
                                   + (f" (repair: {repair})" if repair else "")
                                   + (f": {h.HealthStatusReason}" if h.HealthStatusReason else ""))
        case HyperPodEvent():
            e = d.EventDetails
            level = f"{e.EventLevel} event" if e.EventLevel else "event"
            what = e.Description or e.EventId or e.ResourceType or "no description"
            return Trigger(event_id=parsed.id, kind="cluster-event", clusters=(e.ClusterName,),
                           summary=f"{level} on {e.ClusterName}: {what}")
        case AlarmEvent():
            return Trigger(event_id=parsed.id, kind="alarm", clusters=d.cluster_names(),
                           summary=f"alarm {d.alarmName} is {d.state.value}", relevant=d.state.value == "ALARM")
        case RunFinishedEvent():
            cluster = d.cluster_name()
            return Trigger(event_id=parsed.id, kind="run-finished", clusters=(cluster,) if cluster else (),
                           summary=f"run {d.name} is {d.status}", finished=d.name,
                           state_machine_arn=d.stateMachineArn, relevant=bool(cluster) and d.status != "RUNNING")
        case _:
            return Trigger(event_id=parsed.id, kind="schedule", summary="periodic reconciliation")
