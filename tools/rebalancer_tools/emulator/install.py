"""Extend moto's SageMaker backend and response class at run time (no fork): the task-governance operations,
UpdateCluster, every ClusterInstanceType of the SDK, real-shaped cluster ARNs, node health messages, working
ListClusterNodes pagination and wire faults; DynamoDB's isolation (emulator/dynamodb.py). `install()` is idempotent
and safe to call from any test or server.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import Any

from moto.core.responses import ActionResult, EmptyResult
from moto.sagemaker import models as sm_models
from moto.sagemaker.responses import SageMakerResponse

from rebalancer_tools.emulator import (
    appconfig,
    cluster_changes,
    cluster_operations,
    cluster_state,
    dynamodb,
    prerequisites,
)
from rebalancer_tools.emulator.errors import ResourceNotFound
from rebalancer_tools.emulator.faults import WIRE_FAULTS, FaultKind
from rebalancer_tools.emulator.governance import governance
from rebalancer_tools.emulator.resources import Kind
from rebalancer_tools.emulator.shapes import validate_request

_MARK = "_rebalancer_emulator_installed"
_LOCK = threading.Lock()

_SERVER_ERROR_CODES = {500: "InternalFailure", 502: "BadGateway", 503: "ServiceUnavailable", 504: "GatewayTimeout"}

Handler = Callable[[Any], Any]


# ---- the task-governance operations -------------------------------------------------------------------------

def _quota_ref(r: Any) -> dict[str, Any]:
    return {"ComputeQuotaArn": r.arn, "ComputeQuotaId": r.resource_id}


def _config_ref(r: Any) -> dict[str, Any]:
    return {"ClusterSchedulerConfigArn": r.arn, "ClusterSchedulerConfigId": r.resource_id}


def _operations() -> dict[str, Handler]:
    """Operation name → handler(response) returning an ActionResult; the request is validated before."""
    return {**_quota_operations(), **_scheduler_config_operations(), **_cluster_operations()}


def _state(resp: Any) -> Any:
    """The emulator's state behind the SageMaker backend that received the request."""
    return governance(resp.sagemaker_backend)


def _quota_operations() -> dict[str, Handler]:
    def create_quota(resp: Any) -> Any:
        return ActionResult(_quota_ref(_state(resp).create(Kind.COMPUTE_QUOTA, resp.params, "CreateComputeQuota")))

    def describe_quota(resp: Any) -> Any:
        p = resp.params
        return ActionResult(_state(resp).describe(Kind.COMPUTE_QUOTA, p["ComputeQuotaId"],
                                                  p.get("ComputeQuotaVersion")))

    def list_quotas(resp: Any) -> Any:
        items, token = _state(resp).list(Kind.COMPUTE_QUOTA, resp.params)
        return ActionResult({"ComputeQuotaSummaries": items, "NextToken": token})

    def update_quota(resp: Any) -> Any:
        r = _state(resp).update(Kind.COMPUTE_QUOTA, resp.params, "UpdateComputeQuota")
        return ActionResult({"ComputeQuotaArn": r.arn, "ComputeQuotaVersion": r.version})

    def delete_quota(resp: Any) -> Any:
        _state(resp).delete(Kind.COMPUTE_QUOTA, resp.params["ComputeQuotaId"], "DeleteComputeQuota")
        return EmptyResult()

    return {"CreateComputeQuota": create_quota, "DescribeComputeQuota": describe_quota,
            "ListComputeQuotas": list_quotas, "UpdateComputeQuota": update_quota, "DeleteComputeQuota": delete_quota}


def _scheduler_config_operations() -> dict[str, Handler]:
    def create_config(resp: Any) -> Any:
        r = _state(resp).create(Kind.SCHEDULER_CONFIG, resp.params, "CreateClusterSchedulerConfig")
        return ActionResult(_config_ref(r))

    def describe_config(resp: Any) -> Any:
        p = resp.params
        return ActionResult(_state(resp).describe(Kind.SCHEDULER_CONFIG, p["ClusterSchedulerConfigId"],
                                             p.get("ClusterSchedulerConfigVersion")))

    def list_configs(resp: Any) -> Any:
        items, token = _state(resp).list(Kind.SCHEDULER_CONFIG, resp.params)
        return ActionResult({"ClusterSchedulerConfigSummaries": items, "NextToken": token})

    def update_config(resp: Any) -> Any:
        r = _state(resp).update(Kind.SCHEDULER_CONFIG, resp.params, "UpdateClusterSchedulerConfig")
        return ActionResult({"ClusterSchedulerConfigArn": r.arn, "ClusterSchedulerConfigVersion": r.version})

    def delete_config(resp: Any) -> Any:
        _state(resp).delete(Kind.SCHEDULER_CONFIG, resp.params["ClusterSchedulerConfigId"],
                            "DeleteClusterSchedulerConfig")
        return EmptyResult()

    return {"CreateClusterSchedulerConfig": create_config, "DescribeClusterSchedulerConfig": describe_config,
            "ListClusterSchedulerConfigs": list_configs, "UpdateClusterSchedulerConfig": update_config,
            "DeleteClusterSchedulerConfig": delete_config}


def _cluster_operations() -> dict[str, Handler]:
    """The cluster calls moto lacks: UpdateCluster, training plans, cluster operations and events."""

    def update_cluster(resp: Any) -> Any:
        return ActionResult({"ClusterArn": cluster_changes.update_cluster(_state(resp), resp.params)})

    def describe_training_plan(resp: Any) -> Any:
        return ActionResult(cluster_state.describe_training_plan(_state(resp), resp.params["TrainingPlanName"]))

    def list_operations(resp: Any) -> Any:
        return ActionResult(cluster_operations.list_operations(_state(resp), resp.params))

    def describe_operation(resp: Any) -> Any:
        return ActionResult(cluster_operations.describe_operation(_state(resp), resp.params))

    def list_events(resp: Any) -> Any:
        return ActionResult(cluster_operations.list_events(_state(resp), resp.params))

    return {"UpdateCluster": update_cluster, "DescribeTrainingPlan": describe_training_plan,
            "ListClusterOperations": list_operations, "DescribeClusterOperation": describe_operation,
            "ListClusterEvents": list_events}


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def _response_method(operation: str, handler: Handler) -> Callable[[Any], Any]:
    def method(self: Any) -> Any:
        validate_request(operation, self.params)
        return handler(self)

    method.__name__ = _snake(operation)
    method.__qualname__ = f"SageMakerResponse.{method.__name__}"
    return method


# ---- wire faults: answered before any operation runs ----------------------------------------------------------

def _fault_response(self: Any, kind: FaultKind, status_code: int) -> tuple[int, dict[str, str], str]:
    if kind is FaultKind.THROTTLE:
        status, code, message = 400, "ThrottlingException", "Rate exceeded"
    else:
        status = status_code
        code = _SERVER_ERROR_CODES.get(status, "InternalFailure")
        message = "We encountered an internal error. Please try again."
    headers = dict(self.response_headers)
    headers.update({"Content-Type": "application/x-amz-json-1.1", "x-amzn-ErrorType": code, "status": str(status)})
    return status, headers, json.dumps({"__type": code, "message": message})


def _wrap_call_action(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    @functools.wraps(original)
    def call_action(self: Any) -> Any:
        operation = self._get_action()
        if operation:
            gov = governance(self.sagemaker_backend)
            params = getattr(self, "params", None) or {}
            team, name = gov.target_of(params if isinstance(params, dict) else {})
            rule = gov.faults.take(WIRE_FAULTS, operation, team=team, name=name)
            if rule is not None:
                return _fault_response(self, rule.kind, rule.status_code)
            failing = gov.faults.take(frozenset({FaultKind.NODE_FAILURE}), operation, team=team, name=name)
            if failing is not None:
                cluster_changes.set_node_status(gov, str(failing.cluster), str(failing.node), "Failure",
                                                f"Injected node failure during {operation}")
        return original(self)

    return call_action


# ---- moto backend patches --------------------------------------------------------------------------------------

def _resolving(original: Callable[..., Any]) -> Callable[..., Any]:
    """Accept a cluster ARN (`cluster/<id>`) or name; an unknown cluster is ResourceNotFound as in AWS."""

    @functools.wraps(original)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        ref = kwargs.get("cluster_name", args[0] if args else None)
        gov = governance(self)
        with gov.lock:  # control actions change nodes from other threads of the server
            cluster = gov.cluster(ref) if isinstance(ref, str) else None
            if cluster is None:
                raise ResourceNotFound(f"Cluster {ref} not found.")
            if "cluster_name" in kwargs:
                kwargs["cluster_name"] = cluster.cluster_name
            else:
                args = (cluster.cluster_name, *args[1:])
            return original(self, *args, **kwargs)

    return wrapper


def _wrap_create_cluster(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def create_cluster(self: Any, cluster_name: str, instance_groups: list[dict[str, Any]], vpc_config: Any,
                       tags: Any) -> str:
        groups = [cluster_changes.with_group_defaults(self.account_id, g) for g in instance_groups or ()]
        original(self, cluster_name=cluster_name, instance_groups=groups, vpc_config=vpc_config, tags=tags)
        cluster = self.clusters[cluster_name]
        cid = cluster_changes.cluster_id(self.account_id, self.region_name, cluster_name)
        cluster.arn = f"arn:{self.partition}:sagemaker:{self.region_name}:{self.account_id}:cluster/{cid}"
        return str(cluster.arn)

    return create_cluster


def _node_status(original: Callable[[Any], dict[str, Any]]) -> Callable[[Any], dict[str, Any]]:
    @functools.wraps(original)
    def describe(self: Any) -> dict[str, Any]:
        out = original(self)
        message = getattr(self, "status_message", None)
        out["InstanceStatus"] = {"Status": self.status, **({"Message": message} if message else {})}
        return out

    return describe


def _with_orchestrator(original: Callable[[Any], dict[str, Any]]) -> Callable[[Any], dict[str, Any]]:
    """DescribeCluster shows Orchestrator.Eks when the cluster was given one (Emulator.set_eks_cluster)."""
    @functools.wraps(original)
    def describe(self: Any) -> dict[str, Any]:
        out = original(self)
        eks = getattr(self, "eks_cluster_arn", None)
        if eks:
            out["Orchestrator"] = {"Eks": {"ClusterArn": eks}}
        auto = getattr(self, "auto_scaling", None)  # cluster_state.set_autoscaling
        if auto:
            out["AutoScaling"] = dict(auto)
        return out

    return describe


def _tagged(original: Callable[..., Any]) -> Callable[..., Any]:
    """ListTags / AddTags / DeleteTags on compute-quota and cluster-scheduler-config ARNs, which moto does not know."""
    @functools.wraps(original)
    def resource_from_arn(self: Any, arn: str) -> Any:
        r = governance(self).by_arn(arn)
        return r if r is not None else original(self, arn)

    return resource_from_arn


def _valid_instance_type(self: Any, instance_type: str) -> None:  # noqa: ARG001 (a method of moto's Cluster)
    cluster_changes.check_instance_type(instance_type)


def install() -> None:
    """Patch moto once per process."""
    with _LOCK:
        if getattr(SageMakerResponse, _MARK, False):
            return
        for operation, handler in _operations().items():
            setattr(SageMakerResponse, _snake(operation), _response_method(operation, handler))
        setattr(SageMakerResponse, "call_action", _wrap_call_action(SageMakerResponse.call_action))  # noqa: B010

        backend = sm_models.SageMakerModelBackend
        setattr(backend, "create_cluster", _wrap_create_cluster(backend.create_cluster))  # noqa: B010
        setattr(backend, "_get_resource_from_arn", _tagged(backend._get_resource_from_arn))  # noqa: B010
        for name in ("describe_cluster", "delete_cluster", "describe_cluster_node", "list_cluster_nodes"):
            setattr(backend, name, _resolving(getattr(backend, name)))
        setattr(sm_models.Cluster, "valid_cluster_node_instance_types", _valid_instance_type)  # noqa: B010
        setattr(sm_models.Cluster, "describe", _with_orchestrator(sm_models.Cluster.describe))  # noqa: B010
        node = sm_models.ClusterNode
        for name in ("describe", "summary"):
            setattr(node, name, _node_status(getattr(node, name)))
        # moto paginates ListClusterNodes on an `arn` attribute nodes lack (every page would repeat).
        setattr(node, "arn", property(lambda self: f"{self.cluster_name}/{self.instance_id}"))  # noqa: B010
        prerequisites.install()
        appconfig.install()
        dynamodb.install()
        setattr(SageMakerResponse, _MARK, True)
