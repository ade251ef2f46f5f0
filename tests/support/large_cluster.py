"""The largest cluster the benchmarks and tests plan: every team has a quota on each of 15 accelerator types, demand
about 1.5x capacity, ~22 nodes per team (benchmarks/plan_bench.py at 1,000 teams, the plan fingerprints of
benchmarks/plan_outputs.py, and the store's limits at ten times that in tests/integration/store)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

from rebalancer.catalog import specs as catalog
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/bench01"


def instance_types(n: int = 15) -> list[str]:
    return sorted(t for t in catalog.known_types() if catalog.spec(t).accelerators)[:n]


def synthetic(teams: int, types: list[str], seed: int = 7, families: bool = False) -> tuple[Snapshot, Policy]:
    """A contended cluster: every team has a quota on every type, demand is about 1.5× capacity. With `families`,
    the teams that have a cap (one in 7) cap the family of that type instead (a guarantee in it becomes the
    family's too), so that every pool is solved in the coupled path."""
    rnd = random.Random(seed)
    nodes, groups = [], []
    per = {t: catalog.spec(t).accelerators for t in types}
    size = {t: max(2, teams * 8 // per[t] // 4) for t in types}
    for g, t in enumerate(types):
        groups.append({"InstanceGroupName": f"g{g}", "InstanceType": t, "CurrentCount": size[t]})
        for k in range(size[t]):
            status = "Failure" if k % 50 == 49 else "Running"
            nodes.append({"InstanceGroupName": f"g{g}", "InstanceId": f"i-{g:02d}{k:06d}", "InstanceType": t,
                          "InstanceStatus": {"Status": status}})
    names = [f"team-{i:04d}" for i in range(teams)]
    quotas: list[dict[str, Any]] = []
    demand: dict[str, Any] = {}
    policy_teams: dict[str, Any] = {}
    for i, name in enumerate(names):
        share = {t: size[t] * per[t] // teams for t in types}
        quotas.append({
            "ComputeQuotaId": f"cq-{i:06d}", "Name": f"{name}-quota", "ComputeQuotaVersion": 1, "Status": "Created",
            "ComputeQuotaConfig": {"ComputeQuotaResources": [{"InstanceType": t, "Accelerators": share[t]}
                                                             for t in types],
                                   "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 50}},
            "ComputeQuotaTarget": {"TeamName": name, "FairShareWeight": 10},
            "LastModifiedTime": "2026-11-01T00:00:00Z",
        })
        demand[name] = {t: {"in_use": {"accelerators": rnd.randint(0, 2 * share[t] + 1)},
                            "pending": {"accelerators": rnd.randint(0, share[t] + 1)}} for t in types}
        tp: dict[str, Any] = {"weight": rnd.randint(1, 5)}
        if i % 10 == 0:
            tp["guarantee"] = {types[i % len(types)]: per[types[i % len(types)]]}
        if i % 7 == 0:
            capped = types[(i + 1) % len(types)]
            tp["cap"] = {capped: 4 * per[capped]}
            if families:
                family = catalog.family_of(capped)
                tp["cap"] = {family: 8 * per[capped]}
                guaranteed = types[i % len(types)]
                if "guarantee" in tp and catalog.family_of(guaranteed) == family:
                    tp["guarantee"] = {family: per[guaranteed]}
        policy_teams[name] = tp
    snap = Snapshot.model_validate({"taken_at": NOW.isoformat(), "cluster": {"ClusterName": "bench",
                                    "ClusterArn": ARN, "InstanceGroups": groups},
                                    "nodes": nodes, "quotas": quotas, "demand": demand})
    pol = Policy.model_validate({"teams": policy_teams, "stability": {"max_move": None}})
    return snap, pol
