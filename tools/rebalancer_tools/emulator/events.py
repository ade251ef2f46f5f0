"""EventBridge-shaped events for cluster changes made through the emulator's controls.

moto's EventBridge does not deliver to Lambda, so nothing is sent: the events are recorded, and e2e tests and the
demo hand them to the trigger. Shapes follow `events/hyperpod-*.json` (source `aws.sagemaker`); ids are
deterministic and times come from the emulator's clock.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from typing import Any

NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"
STATE_CHANGE = "SageMaker HyperPod Cluster State Change"


def _aware(t: dt.datetime) -> dt.datetime:
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def _event_id(account_id: str, region: str, serial: int) -> str:
    digest = hashlib.sha256(f"{account_id}:{region}:event:{serial}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def envelope(detail_type: str, detail: dict[str, Any], *, account_id: str, region: str, time: str,
             serial: int) -> dict[str, Any]:
    return {
        "version": "0",
        "id": _event_id(account_id, region, serial),
        "detail-type": detail_type,
        "source": "aws.sagemaker",
        "account": account_id,
        "time": time,
        "region": region,
        "resources": [detail["ClusterArn"]],
        "detail": detail,
    }


def node_health_detail(cluster: Any, node: Any, message: str | None) -> dict[str, Any]:
    """As AWS documents it: the node by InstanceId only (no InstanceGroupName), Tags, Healthy / Unhealthy."""
    healthy = node.status == "Running"
    return {
        "ClusterName": cluster.cluster_name,
        "ClusterArn": cluster.arn,
        "InstanceId": node.instance_id,
        "Tags": {},
        "HealthSummary": {
            "HealthStatus": "Healthy" if healthy else "Unhealthy",
            "HealthStatusReason": message or node.status,
            "RepairAction": "None" if healthy else "Replace",
            "Recommendation": "" if healthy else "The node will be replaced automatically.",
        },
    }


def state_change_detail(cluster: Any) -> dict[str, Any]:
    return {
        "ClusterArn": cluster.arn,
        "ClusterName": cluster.cluster_name,
        "ClusterStatus": cluster.status,
        "CreationTime": int(_aware(cluster.creation_time).timestamp() * 1000),
        "FailureMessage": "",
        "InstanceGroups": [
            {k: g[k] for k in ("InstanceGroupName", "InstanceType", "InstanceTypeDetails", "CurrentCount",
                               "TargetCount", "ExecutionRole", "ThreadsPerCore") if k in g} | {"Status": "InService"}
            for g in cluster.instance_groups
        ],
        "NodeRecovery": "Automatic",
    }
