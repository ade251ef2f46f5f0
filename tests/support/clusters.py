"""Small cluster snapshots for tests, and a stand-in for SageMaker applying a plan's requests to them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from botocore.validate import ParamValidator

from rebalancer.domain.plan import Hold, Plan, QuotaRequest
from rebalancer.domain.policy import Policy
from rebalancer.domain.pools import PoolKey, held
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.domain.snapshot import Snapshot
from rebalancer_tools.packaging.sdk_model import sagemaker_model
from support.clock import T0

# A claim in its cooldown (rebalancer.engine.stability.cooling_down makes them from a quota's last change).
COOLING = Hold(rule="cooldown", text="cooldown until Mon 30 Nov 12:30 UTC (last changed 0 min ago, cooldown 30 min)")

ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/test01"


def _entry(pool: str, amount: float) -> dict[str, Any]:
    key = PoolKey.parse(pool)
    if key.mig_profile:
        return {"InstanceType": key.instance_type, "AcceleratorPartition": {"Type": key.mig_profile,
                                                                            "Count": int(amount)}}
    if key.resource == "vcpu":
        return {"InstanceType": key.instance_type, "VCpu": float(amount)}
    return {"InstanceType": key.instance_type, "Accelerators": int(amount)}


def quota(team: str, resources: Mapping[str, float] | list[dict[str, Any]], *, version: int = 1,
          modified: datetime | None = None, weight: int | None = 10, **extra: Any) -> dict[str, Any]:
    """A DescribeComputeQuota response. `resources` is {pool: amount} or raw ComputeQuotaResources entries."""
    entries = resources if isinstance(resources, list) else [_entry(p, a) for p, a in resources.items()]
    target: dict[str, Any] = {"TeamName": team}
    if weight is not None:
        target["FairShareWeight"] = weight
    return {
        "ComputeQuotaId": f"cq-{team}", "Name": f"{team}-quota", "ComputeQuotaVersion": version,
        "Status": "Created", "ClusterArn": ARN, "ActivationState": "Enabled",
        "ComputeQuotaConfig": {"ComputeQuotaResources": entries,
                               "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 50},
                               "PreemptTeamTasks": "LowerPriority"},
        "ComputeQuotaTarget": target,
        "CreationTime": "2026-01-01T00:00:00Z",
        "LastModifiedTime": (modified or datetime(2026, 1, 1, tzinfo=UTC)).isoformat(),
        **extra,
    }


def snapshot(nodes: Mapping[str, tuple[int, int] | int], *,
             quotas: Mapping[str, Mapping[str, float]] | None = None,
             raw_quotas: list[dict[str, Any]] | None = None,
             pending: Mapping[str, Mapping[str, float]] | None = None,
             in_use: Mapping[str, Mapping[str, float]] | None = None,
             modified: Mapping[str, datetime] | None = None,
             mig: Mapping[str, Mapping[str, int]] | None = None,
             taken_at: datetime = T0) -> Snapshot:
    """`nodes`: {type: healthy} or {type: (healthy, failed)}; quotas/pending/in_use: {team: {pool: amount}}."""
    groups, node_list = [], []
    for g, (t, n) in enumerate(sorted(nodes.items())):
        healthy, failed = (n, 0) if isinstance(n, int) else n
        name = f"group{g}"
        groups.append({"InstanceGroupName": name, "InstanceType": t, "CurrentCount": healthy + failed})
        for k in range(healthy + failed):
            node_list.append({"InstanceGroupName": name, "InstanceId": f"i-{g:03d}{k:05d}", "InstanceType": t,
                              "InstanceStatus": {"Status": "Running" if k < healthy else "Failure"}})
    qs = [quota(team, res, modified=(modified or {}).get(team)) for team, res in (quotas or {}).items()]
    demand: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for part, table in (("pending", pending), ("in_use", in_use)):
        for team, pools in (table or {}).items():
            for pool, amount in pools.items():
                resource = PoolKey.parse(pool).resource
                demand.setdefault(team, {}).setdefault(pool, {}).setdefault(part, {})[resource] = amount
    return Snapshot.model_validate({
        "taken_at": taken_at.isoformat(),
        "cluster": {"ClusterName": "test", "ClusterArn": ARN, "InstanceGroups": groups},
        "nodes": node_list, "quotas": qs + list(raw_quotas or []), "demand": demand, "mig": mig or {},
    })


def apply_request(snap: Snapshot, request: QuotaRequest, now: datetime) -> Snapshot:
    """What SageMaker does with one request (version check included), as a new snapshot."""
    p = request.parameters
    quotas = [q.model_dump(mode="json", exclude_none=True) for q in snap.quotas]
    if request.operation == "CreateComputeQuota":
        team = p["ComputeQuotaTarget"]["TeamName"]
        assert all(q["ComputeQuotaTarget"]["TeamName"] != team for q in quotas), f"{team} already has a quota"
        quotas.append({"ComputeQuotaId": f"cq-new-{team}", "Name": p["Name"], "ComputeQuotaVersion": 1,
                       "Status": "Created", "ClusterArn": p["ClusterArn"],
                       "ComputeQuotaConfig": p["ComputeQuotaConfig"], "ComputeQuotaTarget": p["ComputeQuotaTarget"],
                       "ActivationState": p.get("ActivationState", "Enabled"), "CreationTime": now.isoformat(),
                       "LastModifiedTime": now.isoformat()})
    else:
        q = next(q for q in quotas if q["ComputeQuotaId"] == p["ComputeQuotaId"])
        assert q["ComputeQuotaVersion"] == p["TargetVersion"], "stale TargetVersion"
        q.update(ComputeQuotaVersion=q["ComputeQuotaVersion"] + 1, Status="Updated",
                 ComputeQuotaConfig=p.get("ComputeQuotaConfig", q["ComputeQuotaConfig"]),
                 ComputeQuotaTarget=p.get("ComputeQuotaTarget", q["ComputeQuotaTarget"]),
                 LastModifiedTime=now.isoformat())
    return snap.model_copy(update={"quotas": tuple(ComputeQuota.model_validate(q) for q in quotas)})


def apply_plan(snap: Snapshot, plan: Plan, now: datetime) -> Snapshot:
    for r in plan.requests:
        snap = apply_request(snap, r, now)
    return snap


def quota_sum(snap: Snapshot, pool: str) -> float:
    key = PoolKey.parse(pool)
    return sum(held(q, key) for q in snap.quotas)


def allocation(snap: Snapshot, team: str, pool: str) -> float:
    q = snap.quota_of(team)
    return held(q, PoolKey.parse(pool)) if q else 0.0


def policy(teams: dict[str, dict[str, object]], **rest: object) -> Policy:
    """A policy whose stability rules hold nothing back (no cooldown, no max_move), so tests see the allocation."""
    return Policy.model_validate({"teams": teams, "stability": {"cooldown_minutes": 0, "max_move": None}, **rest})


def validate(plan: Plan) -> None:
    """Every request against botocore's SageMaker model, as boto3 would before sending it (the model is loaded once:
    a new session reads its JSON again, ~70 ms)."""
    model = sagemaker_model()
    for r in plan.requests:
        report = ParamValidator().validate(r.parameters, model.operation_model(r.operation).input_shape)
        assert not report.has_errors(), report.generate_report()
