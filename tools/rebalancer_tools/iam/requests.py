"""What IAM authorizes for one API request: the (action, resource ARN) pairs AWS checks, as the Service
Authorization Reference describes them (rebalancer_tools.iam.catalog), for the operations the functions call.

An operation not listed here whose action has no resource type is authorized on "*"; any other is an error naming
the operation, so a new call cannot slip past the check unnoticed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rebalancer_tools.iam import catalog

Pair = tuple[str, str]  # (service:Action, resource ARN or "*")


@dataclass(frozen=True, slots=True)
class Where:
    """The request's partition, region and account, and lookups into the emulated account."""

    region: str
    account: str
    cluster_arn: Callable[[str], str | None]  # SageMaker cluster name or ARN → its ARN
    eks_cluster_of: Callable[[str], str | None]  # SageMaker cluster ARN → its EKS cluster's name
    secret_arn: Callable[[str], str | None]  # secret name or ARN → its ARN
    partition: str = "aws"
    # AppConfig Data request parameters (identifiers, or a session's token) → application/…/configuration/… in ids
    appconfig_configuration: Callable[[Mapping[str, Any]], str | None] = lambda _params: None

    def arn(self, service: str, resource: str) -> str:
        return f"arn:{self.partition}:{service}:{self.region}:{self.account}:{resource}"


class UnknownOperation(Exception):
    """No rule says which resource this operation is authorized on."""


# Write requests authorized per item: AWS checks the item's own action (TransactWriteItems is no IAM action).
_TRANSACT = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem"}
_ON_CLUSTER = frozenset({"DescribeCluster", "ListClusterNodes", "DescribeClusterNode", "ListClusterOperations",
                         "DescribeClusterOperation", "ListClusterEvents", "DescribeClusterEvent"})
_CREATES = {"CreateComputeQuota": "compute-quota", "CreateClusterSchedulerConfig": "cluster-scheduler-config"}


def authorized(service: str, operation: str, params: Mapping[str, Any], where: Where) -> list[Pair]:
    """The pairs IAM checks for `operation` of `service` (botocore's names: `sagemaker`, `dynamodb`, ...)."""
    prefix = {"stepfunctions": "states"}.get(service, service)
    rule = _RULES.get(prefix)
    pairs = rule(operation, params, where) if rule else None
    if pairs is not None:
        return pairs
    info = catalog.action(f"{prefix}:{operation}")
    if info is not None and not info.arn_formats:
        return [(info.name, "*")]
    raise UnknownOperation(f"no IAM resource rule for {prefix}:{operation}: add one to rebalancer_tools.iam.requests")


def _dynamodb(op: str, p: Mapping[str, Any], w: Where) -> list[Pair] | None:
    def table(name: str) -> str:
        return w.arn("dynamodb", f"table/{name}")

    if op == "TransactWriteItems":
        out = []
        for item in p.get("TransactItems", []):
            ((kind, body),) = item.items()
            out.append((f"dynamodb:{_TRANSACT[kind]}", table(body["TableName"])))
        return out
    if op == "TransactGetItems":
        return [("dynamodb:GetItem", table(i["Get"]["TableName"])) for i in p.get("TransactItems", [])]
    if op in ("BatchWriteItem", "BatchGetItem"):
        return [(f"dynamodb:{op}", table(name)) for name in p.get("RequestItems", {})]
    if "TableName" in p:
        return [(f"dynamodb:{op}", table(p["TableName"]))]
    return None


def _ssm(op: str, p: Mapping[str, Any], w: Where) -> list[Pair] | None:
    names = [p["Name"]] if "Name" in p else list(p.get("Names", []))
    if not names:
        return None
    return [(f"ssm:{op}", w.arn("ssm", "parameter/" + str(n).lstrip("/"))) for n in names]


def _secretsmanager(op: str, p: Mapping[str, Any], w: Where) -> list[Pair] | None:
    if "SecretId" not in p:
        return None
    ref = str(p["SecretId"])
    return [(f"secretsmanager:{op}", w.secret_arn(ref) or w.arn("secretsmanager", f"secret:{ref}"))]


def _sns(op: str, p: Mapping[str, Any], _w: Where) -> list[Pair] | None:
    arn = p.get("TopicArn") or p.get("TargetArn")
    return [(f"sns:{op}", str(arn))] if arn else None


def _states(op: str, p: Mapping[str, Any], _w: Where) -> list[Pair] | None:
    for key in ("stateMachineArn", "executionArn"):
        if key in p:
            return [(f"states:{op}", str(p[key]))]
    return None


def _eks(op: str, p: Mapping[str, Any], w: Where) -> list[Pair] | None:
    name = p.get("name") or p.get("clusterName")
    if not name:
        return None
    if op in ("DescribeAddon", "ListAddons") and p.get("addonName"):
        return [(f"eks:{op}", w.arn("eks", f"addon/{name}/{p['addonName']}/uuid"))]
    if op in ("DescribeAccessEntry", "ListAssociatedAccessPolicies") and p.get("principalArn"):
        return [(f"eks:{op}", _access_entry(w, str(name), str(p["principalArn"])))]
    return [(f"eks:{op}", w.arn("eks", f"cluster/{name}"))]


def _access_entry(w: Where, cluster: str, principal: str) -> str:
    kind, _, name = principal.rpartition(":")[2].partition("/")
    account = principal.split(":")[4] if principal.count(":") >= 5 else w.account
    return w.arn("eks", f"access-entry/{cluster}/{kind}/{account}/{name.rsplit('/', 1)[-1]}/uuid")


def _sagemaker(op: str, p: Mapping[str, Any], w: Where) -> list[Pair] | None:
    action = f"sagemaker:{op}"
    if op in ("ListTags", "AddTags", "DeleteTags") and "ResourceArn" in p:
        return [(action, str(p["ResourceArn"]))]
    if "ComputeQuotaId" in p:
        return [(action, w.arn("sagemaker", f"compute-quota/{p['ComputeQuotaId']}"))]
    if "ClusterSchedulerConfigId" in p:
        return [(action, w.arn("sagemaker", f"cluster-scheduler-config/{p['ClusterSchedulerConfigId']}"))]
    if op in _CREATES:
        cluster = w.cluster_arn(str(p.get("ClusterArn", ""))) or str(p.get("ClusterArn", ""))
        new = w.arn("sagemaker", f"{_CREATES[op]}/(new)")
        pairs = [(action, cluster), (action, new), ("sagemaker:AddTags", new), ("sagemaker:DescribeCluster", cluster)]
        return pairs + _eks_dependents(w, cluster)
    if op in _ON_CLUSTER:
        ref = str(p.get("ClusterName", ""))
        return [(action, w.cluster_arn(ref) or w.arn("sagemaker", f"cluster/{ref}"))]
    return None


def _eks_dependents(w: Where, cluster_arn: str) -> list[Pair]:
    """The EKS dependent actions of a task-governance Create: SageMaker reads the EKS cluster and associates an
    access policy on its access entries (which entry AWS does not document; any entry of that cluster here)."""
    eks = w.eks_cluster_of(cluster_arn)
    if eks is None:
        return []
    entry = w.arn("eks", f"access-entry/{eks}/role/{w.account}/hyperpod-task-governance/uuid")
    return [("eks:DescribeCluster", w.arn("eks", f"cluster/{eks}")), ("eks:AssociateAccessPolicy", entry),
            ("eks:ListAssociatedAccessPolicies", entry)]


def _appconfig(op: str, p: Mapping[str, Any], w: Where) -> list[Pair] | None:
    """AppConfig Data: both calls are authorized on the configuration (application, environment and profile ids),
    whether the session was started with names or ids; GetLatestConfiguration's is its session's."""
    if op not in ("StartConfigurationSession", "GetLatestConfiguration"):
        return None
    arn = w.appconfig_configuration(p)
    return [(f"appconfig:{op}", arn or w.arn("appconfig", "application/(unknown)/environment/(unknown)/"
                                                        "configuration/(unknown)"))]


def _by_catalog(_op: str, _p: Mapping[str, Any], _w: Where) -> list[Pair] | None:
    """The operations of this service that the functions call have no resource type ("*")."""
    return None


_RULES: dict[str, Callable[[str, Mapping[str, Any], Where], list[Pair] | None]] = {
    "dynamodb": _dynamodb, "ssm": _ssm, "secretsmanager": _secretsmanager, "sns": _sns, "states": _states,
    "eks": _eks, "sagemaker": _sagemaker, "cloudwatch": _by_catalog, "sts": _by_catalog, "appconfig": _appconfig,
}
