"""What the trigger saw of each cluster: every HyperPod event it receives goes into the audit trail, and after a
gap in what EventBridge delivered, the cluster's own record of what happened (ListClusterEvents) fills it.

The gap: the schedule delivers an event for every managed cluster once per period (`ScheduleRate`, 15 minutes by
default), so the trigger hears of each cluster at least that often while EventBridge delivers. A silence of two
periods (`EVENT_GAP_SECONDS`, 1800) means at least one scheduled event went missing, and with it possibly HyperPod's
own; one period late is within EventBridge's ordinary delivery jitter and retries. The replay records, it does not
decide: the run the event starts reads the cluster as it is now.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Protocol

from rebalancer.adapters.aws import aws_call
from rebalancer.app.observability import logger
from rebalancer.app.trigger.events import SUMMARY_MAX_BYTES, Trigger, id_text, summary_text
from rebalancer.app.workflow.audit import AuditLog, cluster_event_seen
from rebalancer.errors import RebalancerError
from rebalancer.parsing.text import cut_utf8

# HyperPod's own events: each is recorded as seen (the schedule, alarms and run ends are not cluster events).
CLUSTER_KINDS = frozenset({"cluster-state", "node-health", "cluster-event"})
REPLAY_MAX_EVENTS = 1000  # ten pages: a longer outage is summarised by its count, the run reads the cluster anyway


class EventMarks(Protocol):
    """The latest cluster event time seen: rebalancer.adapters.dynamodb.sightings; memory_store.MemorySightings."""

    def last_event(self, cluster_name: str) -> datetime | None: ...
    def saw_event(self, cluster_name: str, at: datetime) -> None: ...


class Watch:
    __slots__ = ("audit", "gap", "marks", "sagemaker")

    def __init__(self, marks: EventMarks, audit: AuditLog, sagemaker: Callable[[], Any] | None,
                 gap: timedelta) -> None:
        self.marks = marks
        self.audit = audit
        # Makes the boto3 SageMaker client (ListClusterEvents) when a gap is first replayed, not at every cold
        # start: most events come without a gap before them. None: gaps are not replayed.
        self.sagemaker = sagemaker
        self.gap = gap

    def saw(self, cluster: str, trigger: Trigger) -> int:
        """Record the event for `cluster` and replay the gap before it, if any; the number of events replayed."""
        at = trigger.at
        if at is None:
            return 0
        replayed = 0
        last = self.marks.last_event(cluster)
        if self.sagemaker is not None and last is not None and at - last > self.gap:
            replayed = self.replay(self.sagemaker, cluster, last, at)
        if trigger.kind in CLUSTER_KINDS:
            cluster_event_seen(self.audit, cluster, via="EventBridge", event_id=trigger.event_id, at=at,
                               summary=trigger.summary)
        self.marks.saw_event(cluster, at)
        return replayed

    def replay(self, sagemaker: Callable[[], Any], cluster: str, since: datetime, until: datetime) -> int:
        """ListClusterEvents between the last event seen and this one, each recorded; a failure is logged (the
        run still starts), and the mark moves on, so the next event does not list the same gap again."""
        try:
            events = list_events(sagemaker(), cluster, since, until)
        except RebalancerError as e:
            logger.warning("cluster events after a gap not read", extra={"cluster": cluster, "error": str(e)})
            return 0
        for event in events[:REPLAY_MAX_EVENTS]:
            at = event.get("EventTime")
            cluster_event_seen(self.audit, cluster, via="ListClusterEvents",
                               event_id=id_text(str(event.get("EventId"))), at=at if isinstance(at, datetime) else None,
                               summary=_summary(event))
        logger.info("events replayed after a gap", extra={"cluster": cluster, "since": since.isoformat(),
                                                          "events": len(events)})
        return len(events)



def list_events(sagemaker: Any, cluster: str, since: datetime, until: datetime) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with aws_call("ListClusterEvents", f"cluster {cluster}"):
        pages = sagemaker.get_paginator("list_cluster_events").paginate(
            ClusterName=cluster, EventTimeAfter=since, EventTimeBefore=until, SortBy="EventTime",
            SortOrder="Ascending", PaginationConfig={"PageSize": 100, "MaxItems": REPLAY_MAX_EVENTS})
        for page in pages:
            out += page.get("Events", [])
    return out


def _summary(event: dict[str, Any]) -> str:
    """`Warn on InstanceGroup workers (i-0abc…): Description (operation …)`, from a ClusterEventSummary: cleaned and
    cut as an EventBridge event's summary is (a Description may be hundreds of KB, with control characters)."""
    where = "".join(f" {id_text(str(event[k]))}" for k in ("InstanceGroupName", "InstanceId") if event.get(k))
    level = id_text(str(event.get("EventLevel") or "Info"))
    head = f"{level} on {id_text(str(event.get('ResourceType') or 'Cluster'))}{where}: "
    tail = f" (operation {id_text(str(event['OperationId']))})" if event.get("OperationId") else ""
    room = SUMMARY_MAX_BYTES - len(head.encode()) - len(tail.encode())  # ≥ 700 B: five ids of ≤ 256 B at most
    return head + cut_utf8(summary_text(str(event.get("Description") or "no description")), room) + tail
