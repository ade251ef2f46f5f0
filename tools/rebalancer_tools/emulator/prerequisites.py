"""What moto lacks for `rebalancer doctor`, added the way install.py extends SageMaker: EKS add-ons
(CreateAddon, DescribeAddon) and access entries (CreateAccessEntry, DescribeAccessEntry) on moto's EKS clusters, and
IAM's policy simulator (SimulatePrincipalPolicy) evaluating a role's policies with moto's policy evaluator.

Add-ons are ACTIVE once created; `set_addon_status` makes one DEGRADED (or anything else) with a health issue.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from urllib.parse import unquote

from moto.core.responses import ActionResult
from moto.eks import urls as eks_urls
from moto.eks.exceptions import ResourceNotFoundException
from moto.eks.models import eks_backends
from moto.eks.responses import EKSResponse
from moto.iam.responses import IamResponse

_PATHS = {
    "{0}/clusters/(?P<name>[^/]+)/addons$": "addons",
    "{0}/clusters/(?P<name>[^/]+)/addons/(?P<addonName>[^/]+)$": "addon",
    "{0}/clusters/(?P<name>[^/]+)/access-entries$": "access-entries",
    "{0}/clusters/(?P<name>[^/]+)/access-entries/(?P<principalArn>[^/]+)$": "access-entry",
}


def _cluster(resp: Any) -> Any:
    name = unquote(str(resp._get_param("name")))
    backend = eks_backends[resp.current_account][resp.region]
    cluster = backend.clusters.get(name)
    if cluster is None:
        raise ResourceNotFoundException(clusterName=name, message=f"No cluster found for name: {name}.")
    return cluster


def _addons(cluster: Any) -> dict[str, dict[str, Any]]:
    if not hasattr(cluster, "rebalancer_addons"):
        cluster.rebalancer_addons = {}
    addons: dict[str, dict[str, Any]] = cluster.rebalancer_addons
    return addons


def _entries(cluster: Any) -> dict[str, dict[str, Any]]:
    if not hasattr(cluster, "rebalancer_access_entries"):
        cluster.rebalancer_access_entries = {}
    entries: dict[str, dict[str, Any]] = cluster.rebalancer_access_entries
    return entries


def put_addon(cluster: Any, name: str, version: str | None) -> dict[str, Any]:
    now = dt.datetime.now(dt.UTC)
    addon = {"addonName": name, "clusterName": cluster.name, "status": "ACTIVE",
             "addonVersion": version or "v1.0.0-eksbuild.1",
             "addonArn": f"{cluster.arn.replace(':cluster/', ':addon/')}/{name}/0",
             "health": {"issues": []}, "createdAt": now, "modifiedAt": now}
    _addons(cluster)[name] = addon
    return addon


def put_access_entry(cluster: Any, principal: str, groups: list[str], kind: str = "STANDARD") -> dict[str, Any]:
    now = dt.datetime.now(dt.UTC)
    entry = {"clusterName": cluster.name, "principalArn": principal, "kubernetesGroups": list(groups),
             "accessEntryArn": f"{cluster.arn.replace(':cluster/', ':access-entry/')}/role/0/x/0",
             "createdAt": now, "modifiedAt": now, "type": kind, "username": principal}
    _entries(cluster)[principal] = entry
    return entry


def create_addon(self: Any) -> ActionResult:
    addon = put_addon(_cluster(self), str(self._get_param("addonName")), self._get_param("addonVersion"))
    return ActionResult({"addon": addon})


def describe_addon(self: Any) -> ActionResult:
    cluster = _cluster(self)
    name = unquote(str(self._get_param("addonName")))
    addon = _addons(cluster).get(name)
    if addon is None:
        raise ResourceNotFoundException(clusterName=cluster.name, addonName=name,
                                        message=f"No addon: {name} found in cluster: {cluster.name}")
    return ActionResult({"addon": addon})


def create_access_entry(self: Any) -> ActionResult:
    entry = put_access_entry(_cluster(self), str(self._get_param("principalArn")),
                             list(self._get_param("kubernetesGroups") or []), self._get_param("type") or "STANDARD")
    return ActionResult({"accessEntry": entry})


def describe_access_entry(self: Any) -> ActionResult:
    cluster = _cluster(self)
    principal = unquote(str(self._get_param("principalArn")))
    entry = _entries(cluster).get(principal)
    if entry is None:
        raise ResourceNotFoundException(clusterName=cluster.name, principalArn=principal,
                                        message=f"The specified principalArn could not be found: {principal}")
    return ActionResult({"accessEntry": entry})


def simulate_principal_policy(self: Any) -> ActionResult:
    """Each action on each resource (or "*") against the role's inline and attached policies."""
    from moto.iam.access_control import IAMPolicy, PermissionResult

    role = self.backend.get_role_by_arn(self._get_param("PolicySourceArn"))
    documents = [doc for _name, doc in (self.backend.get_role_policy(role.name, n)
                                        for n in self.backend.list_role_policies(role.name))]
    attached, _ = self.backend.list_attached_role_policies(role.name)
    documents += [next(v.document for v in p.versions if v.is_default) for p in attached]
    results = []
    for action in self._get_param("ActionNames", []):
        for resource in self._get_param("ResourceArns", []) or ["*"]:
            outcomes = [IAMPolicy(d if isinstance(d, str) else json.dumps(d)).is_action_permitted(action, resource)
                        for d in documents]
            decision = ("explicitDeny" if PermissionResult.DENIED in outcomes else
                        "allowed" if PermissionResult.PERMITTED in outcomes else "implicitDeny")
            results.append({"EvalActionName": action, "EvalResourceName": resource, "EvalDecision": decision})
    return ActionResult({"EvaluationResults": results, "IsTruncated": False})


def install() -> None:
    """Called by rebalancer_tools.emulator.install.install (once, before moto builds its URL maps)."""
    for pattern in _PATHS:
        eks_urls.url_paths.setdefault(pattern, eks_urls.response.dispatch)
    for fn in (create_addon, describe_addon, create_access_entry, describe_access_entry):
        setattr(EKSResponse, fn.__name__, fn)
    setattr(IamResponse, "simulate_principal_policy", simulate_principal_policy)  # noqa: B010


def provision(account: str, region: str, eks_cluster: str, *, addon: str, addon_version: str | None,
              access_entries: dict[str, list[str]]) -> None:
    """An EKS cluster with the add-on (unless `addon_version` is None) and the access entries, in moto's backend."""
    backend = eks_backends[account][region]
    cluster = backend.clusters.get(eks_cluster) or backend.create_cluster(
        name=eks_cluster, role_arn=f"arn:aws:iam::{account}:role/eks-cluster", resources_vpc_config={})
    if addon_version is not None:
        put_addon(cluster, addon, addon_version)
    for role_arn, groups in access_entries.items():
        put_access_entry(cluster, role_arn, groups)


def set_addon_status(account: str, region: str, eks_cluster: str, addon: str, status: str,
                     issue: str | None = None) -> None:
    cluster = eks_backends[account][region].clusters[eks_cluster]
    found = _addons(cluster)[addon]
    found["status"] = status
    found["health"] = {"issues": [{"code": "Other", "message": issue}]} if issue else {"issues": []}


def remove_addon(account: str, region: str, eks_cluster: str, addon: str) -> dict[str, Any] | None:
    """Uninstall an add-on; returns what it was (to put back with `restore_addon`)."""
    return _addons(eks_backends[account][region].clusters[eks_cluster]).pop(addon, None)


def restore_addon(account: str, region: str, eks_cluster: str, addon: dict[str, Any]) -> None:
    _addons(eks_backends[account][region].clusters[eks_cluster])[addon["addonName"]] = addon


def remove_access_entry(account: str, region: str, eks_cluster: str, principal: str) -> dict[str, Any] | None:
    return _entries(eks_backends[account][region].clusters[eks_cluster]).pop(principal, None)


def restore_access_entry(account: str, region: str, eks_cluster: str, entry: dict[str, Any]) -> None:
    _entries(eks_backends[account][region].clusters[eks_cluster])[entry["principalArn"]] = entry
