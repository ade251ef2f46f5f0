"""Cluster operations and cluster events, which moto lacks: ListClusterOperations / DescribeClusterOperation
(Scaling, DeepHealthCheck) and ListClusterEvents, in the shapes of botocore's SageMaker model
(ClusterOperationSummary, DescribeClusterOperationResponse, ClusterEventSummary).

Operations are started and finished by the controls (`start_operation`, `finish_operation`); a Scaling operation
also shows in its groups' `ActiveOperations` (`{"Scaling": 1}`, as the model documents), a DeepHealthCheck only
here. The events ListClusterEvents returns are the cluster changes the emulator's controls made (the EventBridge
log, `Governance.events`) and the operations' start and end: what an EventBridge outage would have hidden.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import uuid
from typing import Any

from rebalancer_tools.emulator import cluster_changes, events
from rebalancer_tools.emulator.errors import ResourceNotFound, ValidationError
from rebalancer_tools.emulator.governance import Governance
from rebalancer_tools.packaging.sdk_model import sagemaker_model


def _enum(shape: str) -> tuple[str, ...]:
    return tuple(getattr(sagemaker_model().shape_for(shape), "enum", ()))


def _uuid(*parts: str) -> str:
    digest = hashlib.sha256(":".join(parts).encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def _now(g: Governance) -> dt.datetime:
    t = g.clock()
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def _operations(cluster: Any) -> dict[str, dict[str, Any]]:
    ops: dict[str, dict[str, Any]] | None = getattr(cluster, "operations", None)
    if ops is None:
        ops = cluster.operations = {}
    return ops


def _op_events(cluster: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] | None = getattr(cluster, "operation_events", None)
    if out is None:
        out = cluster.operation_events = []
    return out


def start_operation(g: Governance, cluster_name: str, kind: str, groups: dict[str, int | None], *,
                    instance_ids: tuple[str, ...] = ()) -> str:
    """Start a `Scaling` (groups: name → desired TargetCount) or `DeepHealthCheck` (groups: names; `instance_ids`
    the nodes checked, none: the whole group) operation. Returns its OperationId."""
    if kind not in _enum("ClusterOperationType"):
        raise ValidationError(f"Operation type {kind!r} is not one of {', '.join(_enum('ClusterOperationType'))}.")
    with g.lock:
        cluster = cluster_changes.require_cluster(g, cluster_name)
        live = {gr["InstanceGroupName"]: gr for gr in cluster.instance_groups}
        for name in groups:
            if name not in live:
                raise ResourceNotFound(f"Instance group {name} not found in cluster {cluster.cluster_name}.")
        ops = _operations(cluster)
        op_id = _uuid(g.account_id, g.region, cluster.arn, "operation", str(len(ops) + 1))
        op = {"OperationId": op_id, "ClusterArn": cluster.arn, "Type": kind, "Status": "InProgress",
              "CreationTime": _now(g)}
        if kind == "Scaling":
            op["ScalingDetails"] = [_scaling(live[name], target) for name, target in groups.items()]
            for name in groups:
                live[name]["ActiveOperations"] = {"Scaling": 1}
        else:
            op["DeepHealthCheckDetails"] = [
                {"InstanceGroupName": name, "DeepHealthChecks": ["InstanceStress", "InstanceConnectivity"],
                 **({"InstanceIds": [i for i in instance_ids if cluster.nodes.get(i) and
                                     cluster.nodes[i].instance_group_name == name]} if instance_ids else {})}
                for name in groups]
        ops[op_id] = op
        _record(g, cluster, op, f"{kind} operation started on {', '.join(groups)}")
        return op_id


def _scaling(group: dict[str, Any], target: int | None) -> dict[str, Any]:
    current = {"CurrentCount": group.get("CurrentCount", 0), "TargetCount": group.get("TargetCount", 0)}
    desired = {**current, "TargetCount": target if target is not None else current["TargetCount"]}
    return {"InstanceGroupName": group["InstanceGroupName"], "Status": "InProgress", "Original": current,
            "Desired": desired}


def finish_operation(g: Governance, cluster_name: str, op_id: str, status: str = "Done") -> None:
    with g.lock:
        cluster = cluster_changes.require_cluster(g, cluster_name)
        op = _operation(cluster, op_id)
        op["Status"] = status
        for detail in op.get("ScalingDetails", ()):
            detail["Status"] = status
            group = next((gr for gr in cluster.instance_groups
                          if gr["InstanceGroupName"] == detail["InstanceGroupName"]), None)
            if group is not None:
                group.pop("ActiveOperations", None)
        _record(g, cluster, op, f"{op['Type']} operation {status}")


def _operation(cluster: Any, op_id: str) -> dict[str, Any]:
    op = _operations(cluster).get(op_id)
    if op is None:
        raise ResourceNotFound(f"Operation {op_id} not found in cluster {cluster.cluster_name}.")
    return op


def _record(g: Governance, cluster: Any, op: dict[str, Any], description: str) -> None:
    log = _op_events(cluster)
    log.append({"EventId": _uuid(g.account_id, g.region, cluster.arn, "op-event", str(len(log) + 1)),
                "ClusterArn": cluster.arn, "ClusterName": cluster.cluster_name, "ResourceType": "Cluster",
                "EventTime": _now(g), "Description": description, "EventLevel": "Info",
                "OperationId": op["OperationId"]})


def list_operations(g: Governance, params: dict[str, Any]) -> dict[str, Any]:
    with g.lock:
        cluster = cluster_changes.require_cluster(g, params["ClusterName"])
        ops = list(_operations(cluster).values())
        for key in ("Status", "Type"):
            if params.get(key):
                ops = [o for o in ops if o[key] == params[key]]
        ops = _in_window(ops, "CreationTime", params.get("CreationTimeAfter"), params.get("CreationTimeBefore"))
        ops.sort(key=lambda o: (o["CreationTime"], o["OperationId"]), reverse=params.get("SortOrder") == "Descending")
        page, token = _page(ops, params)
        fields = ("OperationId", "ClusterArn", "Type", "Status", "CreationTime")
        return {"ClusterOperationSummaries": [{k: o[k] for k in fields} for o in page],
                **({"NextToken": token} if token else {})}


def describe_operation(g: Governance, params: dict[str, Any]) -> dict[str, Any]:
    with g.lock:
        cluster = cluster_changes.require_cluster(g, params["ClusterName"])
        return copy.deepcopy(_operation(cluster, params["OperationId"]))


def cluster_events(g: Governance, cluster: Any) -> list[dict[str, Any]]:
    """Every ClusterEventSummary of the cluster: its EventBridge log and its operations' starts and ends."""
    out = [copy.deepcopy(e) for e in _op_events(cluster)]
    for e in g.events:
        d = e["detail"]
        if d.get("ClusterArn") != cluster.arn:
            continue
        time = dt.datetime.strptime(e["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
        summary = {"EventId": e["id"], "ClusterArn": cluster.arn, "ClusterName": cluster.cluster_name,
                   "EventTime": time, "EventLevel": "Info"}
        if e["detail-type"] == events.NODE_HEALTH:
            summary |= {"ResourceType": "Instance", "InstanceId": d["InstanceId"],
                        "Description": f"node {d['InstanceId']}: {d['HealthSummary']['HealthStatusReason']}",
                        "EventLevel": "Info" if d["HealthSummary"]["HealthStatus"] == "Healthy" else "Warn"}
        else:
            summary |= {"ResourceType": "Cluster", "Description": f"cluster is {d.get('ClusterStatus')}"}
        out.append(summary)
    return out


def list_events(g: Governance, params: dict[str, Any]) -> dict[str, Any]:
    with g.lock:
        cluster = cluster_changes.require_cluster(g, params["ClusterName"])
        found = cluster_events(g, cluster)
    for key, field in (("InstanceGroupName", "InstanceGroupName"), ("NodeId", "InstanceId"),
                       ("ResourceType", "ResourceType"), ("OperationId", "OperationId")):
        if params.get(key):
            found = [e for e in found if e.get(field) == params[key]]
    found = _in_window(found, "EventTime", params.get("EventTimeAfter"), params.get("EventTimeBefore"))
    found.sort(key=lambda e: (e["EventTime"], e["EventId"]), reverse=params.get("SortOrder") == "Descending")
    page, token = _page(found, params)
    return {"Events": page, **({"NextToken": token} if token else {})}


def _as_time(value: Any) -> dt.datetime:
    if isinstance(value, int | float):
        return dt.datetime.fromtimestamp(value, dt.UTC)
    t: dt.datetime = dt.datetime.fromisoformat(value) if isinstance(value, str) else value
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def _in_window(items: list[dict[str, Any]], key: str, after: Any, before: Any) -> list[dict[str, Any]]:
    if after is not None:
        items = [i for i in items if i[key] > _as_time(after)]
    if before is not None:
        items = [i for i in items if i[key] < _as_time(before)]
    return items


def _page(items: list[dict[str, Any]], params: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    token = params.get("NextToken")
    try:
        start = int(token) if token else 0
    except ValueError:
        raise ValidationError(f"Invalid pagination token {token!r}.") from None
    size = params.get("MaxResults") or 100
    end = start + size
    return items[start:end], str(end) if end < len(items) else None
