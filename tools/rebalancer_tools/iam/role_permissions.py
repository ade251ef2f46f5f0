"""`rebalancer doctor`'s check of each function role, through IAM's policy simulator. Here, not in the runtime
package: no Lambda simulates policies, so the layer ships no IAM client data."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from botocore.exceptions import ClientError

from rebalancer.adapters.prerequisites import Check, denied_or_error
from rebalancer_tools.iam.catalog import SDK_ONLY, SDK_ONLY_SINCE


def check_permissions(iam: Any, function: str, role_arn: str, calls: Iterable[tuple[str, str]], *,
                      what: str = "permissions") -> Check:
    """IAM's policy simulator (iam:SimulatePrincipalPolicy) on the role, one call per resource."""
    calls = list(calls)
    name = f"{what} of {function}"
    by_resource: dict[str, list[str]] = {}
    for action, resource in calls:
        by_resource.setdefault(resource, []).append(action)
    denied = []
    try:
        for resource, actions in by_resource.items():
            kwargs: dict[str, Any] = {"PolicySourceArn": role_arn, "ActionNames": sorted(set(actions))}
            if resource != "*":
                kwargs["ResourceArns"] = [resource]
            for r in iam.simulate_principal_policy(**kwargs)["EvaluationResults"]:
                if r["EvalDecision"] != "allowed":
                    denied.append(f"{r['EvalActionName']} on {resource}")
    except ClientError as e:
        return denied_or_error(name, "iam:SimulatePrincipalPolicy", e)
    new = sorted(d for d in denied if d.split(" ", 1)[0] in SDK_ONLY)
    denied = sorted(set(denied) - set(new))
    if denied:
        return Check(name, "fail", f"{role_arn} is denied {'; '.join(denied)}",
                     "grant them in template.yaml (the function's Policies) and redeploy")
    if new:  # IAM may authorize these under other names: collect then reads ActiveOperations alone
        return Check(name, "warn", f"{role_arn} is denied {'; '.join(new)}, which IAM's authorization data does "
                     f"not list yet (the SDK has them since {SDK_ONLY_SINCE})",
                     "collect falls back to DescribeCluster's ActiveOperations (a Scaling operation still holds "
                     "quotas; a DeepHealthCheck in progress is not seen)")
    return Check(name, "ok", f"{role_arn}: {len({a for a, _ in calls})} actions allowed")
