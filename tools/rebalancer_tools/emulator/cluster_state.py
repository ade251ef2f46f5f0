"""HyperPod cluster state moto does not model: autoscaling, the instance groups' capacity fields (spot, training
plans, ActiveOperations) and training plans (DescribeTrainingPlan). Field names are checked against botocore's
shapes, so what the emulator shows is what the SDK can carry."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from rebalancer_tools.emulator import cluster_changes as cluster_changes
from rebalancer_tools.emulator.errors import ResourceNotFound, ValidationError
from rebalancer_tools.emulator.governance import Governance
from rebalancer_tools.packaging.sdk_model import sagemaker_model


def _members(shape: str) -> frozenset[str]:
    return frozenset(getattr(sagemaker_model().shape_for(shape), "members", {}))


def set_autoscaling(g: Governance, cluster_name: str, mode: str, status: str = "InService") -> None:
    """DescribeCluster's AutoScaling {Mode, AutoScalerType: Karpenter, Status}."""
    with g.lock:
        cluster = cluster_changes.require_cluster(g, cluster_name)
        cluster.auto_scaling = {"Mode": mode, "AutoScalerType": "Karpenter", "Status": status}


def set_group_fields(g: Governance, cluster_name: str, group_name: str, **fields: Any) -> None:
    """Set ClusterInstanceGroupDetails fields on a group (CapacityRequirements, TrainingPlanArn, ActiveOperations,
    MinCount, TargetCount, ...); None removes one."""
    allowed = _members("ClusterInstanceGroupDetails")
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise ValidationError(f"{', '.join(unknown)}: not a field of ClusterInstanceGroupDetails.")
    with g.lock:
        cluster = cluster_changes.require_cluster(g, cluster_name)
        group = next((gr for gr in cluster.instance_groups if gr["InstanceGroupName"] == group_name), None)
        if group is None:
            raise ResourceNotFound(f"Instance group {group_name} not found in cluster {cluster.cluster_name}.")
        for k, v in fields.items():
            if v is None:
                group.pop(k, None)
            else:
                group[k] = copy.deepcopy(v)


def add_training_plan(g: Governance, name: str, *, end_time: dt.datetime, status: str = "Active",
                      instances: int = 0) -> str:
    arn = f"arn:{g.backend.partition}:sagemaker:{g.region}:{g.account_id}:training-plan/{name}"
    with g.lock:
        g.training_plans[name] = {"TrainingPlanArn": arn, "TrainingPlanName": name, "Status": status,
                                  "EndTime": end_time, "TotalInstanceCount": instances}
    return arn


def describe_training_plan(g: Governance, name_or_arn: str) -> dict[str, Any]:
    name = name_or_arn.rsplit("/", 1)[-1]
    with g.lock:
        plan = g.training_plans.get(name)
        if plan is None:
            raise ResourceNotFound(f"Training plan {name_or_arn} not found.")
        return copy.deepcopy(plan)
