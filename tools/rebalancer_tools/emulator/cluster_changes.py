"""Cluster changes moto does not offer: node health, instance-group resizing, UpdateCluster, real-shaped ARNs.

Each change is followed by an invariant record (operation `control:...`), since losing a node can put the quotas
above the healthy capacity without any quota write.
"""

from __future__ import annotations

import hashlib
from typing import Any

from moto.sagemaker.models import ClusterNode

from rebalancer_tools.emulator import events
from rebalancer_tools.emulator.errors import ResourceNotFound, ValidationError
from rebalancer_tools.emulator.governance import Governance
from rebalancer_tools.packaging.sdk_model import cluster_instance_types, sagemaker_model

DEFAULT_ROLE = "arn:aws:iam::{account}:role/hyperpod-emulator-execution"
DEFAULT_LIFECYCLE = {"SourceS3Uri": "s3://sagemaker-emulator-lifecycle/scripts/", "OnCreate": "on_create.sh"}


def node_statuses() -> tuple[str, ...]:
    shape = sagemaker_model().shape_for("ClusterInstanceStatus")
    return tuple(getattr(shape, "enum", ()))


def cluster_id(account_id: str, region: str, name: str) -> str:
    """The 12-character id in a HyperPod cluster ARN (`cluster/abcdef012345`), deterministic per name."""
    return hashlib.sha256(f"{account_id}:{region}:cluster:{name}".encode()).hexdigest()[:12]


def check_instance_type(instance_type: str) -> None:
    allowed = cluster_instance_types()
    if instance_type not in allowed:
        raise ValidationError(f"Value '{instance_type}' at 'InstanceType' failed to satisfy constraint: Member must "
                              f"satisfy enum value set: [{', '.join(allowed)}]")


def require_cluster(g: Governance, name_or_arn: str) -> Any:
    cluster = g.cluster(name_or_arn)
    if cluster is None:
        raise ResourceNotFound(f"Cluster {name_or_arn} not found.")
    return cluster


def _group(cluster: Any, group_name: str) -> dict[str, Any]:
    for group in cluster.instance_groups:
        if group["InstanceGroupName"] == group_name:
            live: dict[str, Any] = group  # the dict moto describes, changed in place
            return live
    raise ResourceNotFound(f"Instance group {group_name} not found in cluster {cluster.cluster_name}.")


def _node(cluster: Any, node_id: str) -> Any:
    node = cluster.nodes.get(node_id)
    if node is None:
        raise ResourceNotFound(f"Node {node_id} not found in cluster {cluster.cluster_name}.")
    return node


def set_node_status(g: Governance, cluster_name: str, node_id: str, status: str, message: str | None = None) -> None:
    if status not in node_statuses():
        raise ValidationError(f"Node status {status!r} is not one of {', '.join(node_statuses())}.")
    with g.lock:
        cluster = require_cluster(g, cluster_name)
        node = _node(cluster, node_id)
        node.status = status
        node.status_message = message
        g.check_invariant("control:node-status", cluster.arn, node_id)
        g.emit(events.NODE_HEALTH, events.node_health_detail(cluster, node, message))


def _add_nodes(g: Governance, cluster: Any, group: dict[str, Any], count: int) -> None:
    prefix = f"{group['InstanceGroupName']}-"
    used = [int(n.removeprefix(prefix)) for n in cluster.nodes if n.startswith(prefix)
            and n.removeprefix(prefix).isascii() and n.removeprefix(prefix).isdigit()]
    start = max(used, default=-1) + 1
    for i in range(start, start + count):
        node_id = f"{prefix}{i}"
        cluster.nodes[node_id] = ClusterNode(
            region_name=g.region, account_id=g.account_id, cluster_name=cluster.cluster_name,
            instance_group_name=group["InstanceGroupName"], instance_type=group["InstanceType"],
            life_cycle_config=group["LifeCycleConfig"], execution_role=group["ExecutionRole"],
            node_id=node_id, threads_per_core=group.get("ThreadsPerCore"),
        )


def _group_nodes(cluster: Any, group_name: str) -> list[Any]:
    return [n for n in cluster.nodes.values() if n.instance_group_name == group_name]


def _index(node_id: str) -> int:
    tail = node_id.rsplit("-", 1)[-1]
    return int(tail) if tail.isascii() and tail.isdigit() else 0


def resize_instance_group(g: Governance, cluster_name: str, group_name: str, count: int) -> None:
    """Grow with new Running nodes, or shrink by removing unhealthy nodes first, then the newest."""
    if count < 0:
        raise ValidationError(f"InstanceCount must be ≥ 0, got {count}.")
    with g.lock:
        cluster = require_cluster(g, cluster_name)
        group = _group(cluster, group_name)
        nodes = _group_nodes(cluster, group_name)
        if count > len(nodes):
            _add_nodes(g, cluster, group, count - len(nodes))
        else:
            by_doom = sorted(nodes, key=lambda n: (n.status == "Running", -_index(n.instance_id)))
            doomed = by_doom[: len(nodes) - count]
            for n in doomed:
                del cluster.nodes[n.instance_id]
        group["CurrentCount"] = group["TargetCount"] = count
        g.check_invariant("control:resize", cluster.arn, group_name)
        g.emit(events.STATE_CHANGE, events.state_change_detail(cluster))


def add_instance_group(g: Governance, cluster_name: str, spec: dict[str, Any]) -> None:
    with g.lock:
        cluster = require_cluster(g, cluster_name)
        name = spec["InstanceGroupName"]
        if any(gr["InstanceGroupName"] == name for gr in cluster.instance_groups):
            raise ValidationError(f"Instance group {name} already exists in cluster {cluster.cluster_name}.")
        check_instance_type(spec["InstanceType"])
        group = with_group_defaults(g.account_id, spec)
        count = group.pop("InstanceCount")
        group["CurrentCount"] = group["TargetCount"] = 0
        cluster.instance_groups.append(group)
        resize_instance_group(g, cluster.arn, name, count)


def delete_instance_group(g: Governance, cluster_name: str, group_name: str) -> None:
    with g.lock:
        cluster = require_cluster(g, cluster_name)
        group = _group(cluster, group_name)
        for n in _group_nodes(cluster, group_name):
            del cluster.nodes[n.instance_id]
        cluster.instance_groups.remove(group)
        g.check_invariant("control:delete-group", cluster.arn, group_name)
        g.emit(events.STATE_CHANGE, events.state_change_detail(cluster))


def with_group_defaults(account_id: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Fill what moto's CreateCluster insists on and AWS does not (ThreadsPerCore) or what tests rarely care about."""
    out = dict(spec)
    out.setdefault("ThreadsPerCore", 1)
    out.setdefault("ExecutionRole", DEFAULT_ROLE.format(account=account_id))
    out.setdefault("LifeCycleConfig", dict(DEFAULT_LIFECYCLE))
    return out


def update_cluster(g: Governance, params: dict[str, Any]) -> str:
    """UpdateCluster as far as instance groups go: resize existing groups, add new ones, delete listed ones."""
    with g.lock:
        cluster = require_cluster(g, params["ClusterName"])
        existing = {gr["InstanceGroupName"]: gr for gr in cluster.instance_groups}
        for spec in params.get("InstanceGroups") or ():
            name = spec["InstanceGroupName"]
            if name in existing:
                if spec.get("InstanceType") and spec["InstanceType"] != existing[name]["InstanceType"]:
                    raise ValidationError(f"Instance group {name} is {existing[name]['InstanceType']}; its "
                                          f"instance type cannot change to {spec['InstanceType']}.")
                resize_instance_group(g, cluster.arn, name, spec["InstanceCount"])
            else:
                if not spec.get("InstanceType"):
                    raise ValidationError(f"Instance group {name} is new: InstanceType is required.")
                add_instance_group(g, cluster.arn, spec)
        for name in params.get("InstanceGroupsToDelete") or ():
            delete_instance_group(g, cluster.arn, name)
        return str(cluster.arn)
