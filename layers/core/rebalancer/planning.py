"""Snapshot + policy → Plan: the pools the engine allocates, and the ordered API requests that get there.

Pure (no boto3, no clock: `now` is a parameter). Other parts (simulator, Lambdas, CLI) call `make_plan`.

How a quota's resource entries are read and written:
- the whole-GPU (or vCPU) amount of a type is the entry for that type without an `AcceleratorPartition`;
  `Accelerators` if set, else `Count` × accelerators per instance (vCPU per instance for CPU-only types);
- a MIG pool's amount is `AcceleratorPartition.Count` of the entry with that profile;
- a changed entry is rewritten as `Accelerators` (GPU/Neuron types; vCPU and memory left to SageMaker's ratio
  rule), `VCpu` + proportional `MemoryInGiB` (CPU-only types), or `AcceleratorPartition` (MIG); an entry that goes
  to zero is removed; every other entry, the sharing config, the preemption setting and the fair-share weight are
  kept as they are.
Percent guarantees and caps are of the pool's healthy capacity (before what teams outside the policy hold),
rounded down to whole units; demand is rounded up. Teams with a quota but not in the policy keep it, and what they
hold is taken out of the capacity the policy's teams share.
Requests are ordered: every decrease before any increase, so the sum of quotas of a pool never exceeds its
capacity between two calls. A team with both decreases and increases gets two UpdateComputeQuota requests; the
second carries TargetVersion = version read + 1, which is what the first one returns (an applier that sees a
different version must stop, as for any conflict).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from rebalancer import catalog
from rebalancer.allocation import EPS, Claim, Outcome, PoolInput, Settings, allocate
from rebalancer.errors import InvalidInput
from rebalancer.models import ComputeQuota, Demand, Snapshot
from rebalancer.plan import Plan, QuotaRequest
from rebalancer.policy import Policy, PoolKey

MAX_ENTRIES = 15
DEFAULT_SHARING: dict[str, Any] = {"Strategy": "LendAndBorrow", "BorrowLimit": 50}
DEFAULT_PREEMPT = "LowerPriority"


def _pool_name(instance_type: str, profile: str | None) -> str:
    return f"{instance_type}:{profile}" if profile else instance_type


def holdings(quota: ComputeQuota, index: int | None = None) -> dict[str, float]:
    """What a quota holds, per pool name, in the pool's unit (Count is turned into accelerators or vCPUs).
    With `index`, an unknown instance type is reported at its place in the snapshot's quotas."""
    out: dict[str, float] = {}
    for j, r in enumerate(quota.ComputeQuotaConfig.ComputeQuotaResources):
        field = None if index is None else f"quotas.{index}.ComputeQuotaConfig.ComputeQuotaResources.{j}.InstanceType"
        spec = catalog.spec(r.InstanceType, field=field)
        part = r.AcceleratorPartition
        if part is not None:
            name, amount = _pool_name(r.InstanceType, part.Type), float(part.Count)
        elif spec.accelerators:
            name = r.InstanceType
            amount = float(r.Accelerators if r.Accelerators is not None else (r.Count or 0) * spec.accelerators)
        else:
            name = r.InstanceType
            amount = float(r.VCpu if r.VCpu is not None else (r.Count or 0) * spec.vcpu)
        out[name] = out.get(name, 0.0) + amount
    return out


def held(quota: ComputeQuota, pool: PoolKey) -> float:
    """What a quota holds in one pool, in the pool's unit."""
    return holdings(quota).get(str(pool), 0.0)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _cooldown(quota: ComputeQuota | None, policy: Policy, now: datetime) -> str | None:
    minutes = policy.stability.cooldown_minutes
    if quota is None or quota.LastModifiedTime is None or minutes <= 0:
        return None
    age = (now - quota.LastModifiedTime).total_seconds() / 60
    if age < minutes:
        return f"cooldown: last changed {max(age, 0):.0f} min ago (cooldown {minutes:g} min)"
    return None


def build_pools(snapshot: Snapshot, policy: Policy, now: datetime) -> tuple[list[PoolInput], list[str]]:
    """The engine's input: for every pool, the capacity the policy's teams share and one claim per team."""
    warnings: list[str] = []
    quotas = {q.team: q for q in snapshot.quotas}
    outsiders = sorted(t for t in quotas if t not in policy.teams)
    if outsiders:
        warnings.append(f"teams with a quota but not in the policy keep it untouched: {', '.join(outsiders)}")

    held_by = {q.team: holdings(q, i) for i, q in enumerate(snapshot.quotas)}
    keys: set[str] = set()
    for t in snapshot.instance_types():
        catalog.spec(t, field="cluster.InstanceGroups.InstanceType")
        keys.add(t)
    for t, profiles in snapshot.mig.items():
        for profile in profiles:
            try:
                keys.add(str(PoolKey.parse(f"{t}:{profile}")))
            except ValueError as e:
                raise InvalidInput(str(e), field=f"mig.{t}.{profile}", value=profile) from None
    for h in held_by.values():
        keys |= h.keys()
    policy_pools = policy.pools()
    keys |= policy_pools

    healthy, unhealthy = snapshot.healthy_nodes(), snapshot.unhealthy_nodes()
    carved: Counter[str] = Counter()
    for t, profiles in snapshot.mig.items():
        for profile, n in profiles.items():
            carved[t] += math.ceil(n / catalog.mig_partitions_per_gpu(profile))

    team_names = sorted(policy.teams)
    cooling = {t: _cooldown(quotas.get(t), policy, now) for t in team_names}
    no_demand: dict[str, Demand] = {}
    no_holdings: dict[str, float] = {}
    rows = [(t, policy.teams[t], snapshot.demand.get(t, no_demand), held_by.get(t, no_holdings), cooling[t])
            for t in team_names]
    pools = []
    for name in sorted(keys):
        key = PoolKey.parse(name)
        t, resource = key.instance_type, key.resource
        notes: list[str] = []
        if key.mig_profile:
            raw = float(snapshot.mig.get(t, {}).get(key.mig_profile, 0))
            if raw == 0 and name in policy_pools:
                warnings.append(f"{name}: the snapshot reports no healthy partitions of this profile")
        else:
            raw = float(max(0, healthy[t] * catalog.spec(t).primary_per_instance - carved[t]))
            if unhealthy[t]:
                notes.append(f"{_plural(unhealthy[t], 'node')} of {t} unhealthy")
            if carved[t]:
                notes.append(f"{carved[t]} GPUs of {t} carved into MIG partitions")
            if not healthy[t] and not unhealthy[t] and name in policy_pools:
                warnings.append(f"{name}: named in the policy but the cluster has no such nodes")
        others = sum(held_by[o].get(name, 0.0) for o in outsiders)
        if others:
            notes.append(f"{others:g} held by teams outside the policy")
        capacity = raw - others
        if capacity < 0:
            warnings.append(f"{name}: teams outside the policy hold {others:g}, more than the healthy {raw:g}")
            capacity = 0.0
        claims = []
        for team, tp, demands, holds, cooldown in rows:
            d = demands.get(name)
            if d is None:
                demand = in_use = 0.0
            else:
                in_use = float(getattr(d.in_use, resource))
                demand = float(math.ceil(in_use + getattr(d.pending, resource) - EPS))
            guarantee = float(math.floor(tp.guarantee_for(name, raw) + EPS)) if name in tp.guarantee else 0.0
            cap = float(math.floor(tp.cap_for(name, raw) + EPS)) if name in tp.cap else math.inf
            claims.append(Claim(team, tp.weight, guarantee, cap, demand, holds.get(name, 0.0), in_use,
                                tp.protected_in_use, cooldown))
        pools.append(PoolInput(name, resource, capacity, tuple(claims), tuple(notes)))
    return pools, warnings


def _entry(instance_type: str, profile: str | None, amount: int) -> dict[str, Any]:
    if profile:
        return {"InstanceType": instance_type, "AcceleratorPartition": {"Type": profile, "Count": amount}}
    spec = catalog.spec(instance_type)
    if spec.accelerators:
        return {"InstanceType": instance_type, "Accelerators": amount}
    memory = round(amount * spec.memory_gib / spec.vcpu, 2)
    return {"InstanceType": instance_type, "VCpu": float(amount), "MemoryInGiB": memory}


def _entry_pool(entry: dict[str, Any]) -> str:
    part = entry.get("AcceleratorPartition")
    return _pool_name(entry["InstanceType"], part["Type"] if part else None)


def _apply_entries(entries: list[dict[str, Any]], outcomes: Iterable[Outcome]) -> list[dict[str, Any]]:
    """Entries keep their order; a changed pool's entry is replaced in place, a new one appended, a zero removed."""
    by_pool: dict[str, dict[str, Any] | None] = {}
    for e in entries:
        by_pool.setdefault(_entry_pool(e), e)
    out = list(entries)
    for o in outcomes:
        instance_type, _, profile = o.pool.partition(":")
        new = _entry(instance_type, profile or None, o.after) if o.after else None
        old = by_pool.get(o.pool)
        if old is None:
            if new is not None:
                out.append(new)
        else:
            at = next(i for i, e in enumerate(out) if e is old)
            if new is None:
                del out[at]
            else:
                out[at] = new
        by_pool[o.pool] = new
    return out


def _fair_share_weight(weight: float) -> int:
    return max(0, min(100, round(weight)))


def _requests(snapshot: Snapshot, policy: Policy, outcomes: dict[str, list[Outcome]],
              warnings: list[str]) -> tuple[list[QuotaRequest], set[str]]:
    """Decrease requests for every team, then increase requests. Returns the requests and the teams whose
    increases could not be written (too many entries)."""
    quotas = {q.team: q for q in snapshot.quotas}
    first: list[QuotaRequest] = []
    second: list[QuotaRequest] = []
    blocked: set[str] = set()
    for team in sorted(outcomes):
        changed = outcomes[team]
        down = [o for o in changed if o.after < o.before]
        up = [o for o in changed if o.after > o.before]
        q = quotas.get(team)
        if q is None:
            entries = _apply_entries([], up)
            if len(entries) > MAX_ENTRIES:
                warnings.append(f"{team}: a quota holds at most {MAX_ENTRIES} resource entries; "
                                f"{len(entries)} needed, not created")
                blocked.add(team)
                continue
            second.append(QuotaRequest(operation="CreateComputeQuota", team=team, parameters={
                "Name": f"{team}-quota",
                "ClusterArn": snapshot.cluster.ClusterArn,
                "ComputeQuotaConfig": {"ComputeQuotaResources": entries, "ResourceSharingConfig": DEFAULT_SHARING,
                                       "PreemptTeamTasks": DEFAULT_PREEMPT},
                "ComputeQuotaTarget": {"TeamName": team,
                                       "FairShareWeight": _fair_share_weight(policy.teams[team].weight)},
                "ActivationState": "Enabled",
            }))
            continue
        config = q.ComputeQuotaConfig.to_api()
        target = q.ComputeQuotaTarget.to_api()
        if "FairShareWeight" not in target:
            target["FairShareWeight"] = _fair_share_weight(policy.teams[team].weight)
        entries = list(config.get("ComputeQuotaResources", []))
        version = q.ComputeQuotaVersion
        if down:
            entries = _apply_entries(entries, down)
            first.append(_update(q, version, {**config, "ComputeQuotaResources": entries}, target))
            version += 1
        if up:
            grown = _apply_entries(entries, up)
            if len(grown) > MAX_ENTRIES:
                warnings.append(f"{team}: a quota holds at most {MAX_ENTRIES} resource entries; "
                                f"{len(grown)} needed, increases not written")
                blocked.add(team)
                continue
            second.append(_update(q, version, {**config, "ComputeQuotaResources": grown}, target))
    return first + second, blocked


def _update(q: ComputeQuota, version: int, config: dict[str, Any], target: dict[str, Any]) -> QuotaRequest:
    return QuotaRequest(operation="UpdateComputeQuota", team=q.team, parameters={
        "ComputeQuotaId": q.ComputeQuotaId, "TargetVersion": version,
        "ComputeQuotaConfig": config, "ComputeQuotaTarget": target,
    })


def _approval(policy: Policy, changes: list[dict[str, Any]]) -> list[str]:
    if policy.mode == "dry-run" or not changes:
        return []
    if policy.mode == "approve":
        return ["mode is approve: every plan needs an admin"]
    reasons = []
    downs = [c for c in changes if c["after"] < c["before"]]
    moved = sum(c["before"] - c["after"] for c in downs if c["resource"] == "accelerators")
    if moved > policy.approval.moved_accelerators:
        reasons.append(f"moves {moved:g} accelerators, above approval.moved_accelerators "
                       f"{policy.approval.moved_accelerators}")
    limit = policy.approval.max_decrease_percent
    for c in downs:
        before, after = c["before"], c["after"]
        if before > 0 and (before - after) / before * 100 > limit + EPS:
            pool = _pool_name(c["instance_type"], c["mig_profile"])
            reasons.append(f"{c['team']} loses {(before - after) / before:.0%} of {pool} "
                           f"({before:g} → {after:g}), above approval.max_decrease_percent {limit:g}")
    return reasons


def make_plan(snapshot: Snapshot, policy: Policy, now: datetime) -> Plan:
    """Desired allocations against the snapshot's quotas, as an ordered, explained change set."""
    pools, warnings = build_pools(snapshot, policy, now)
    settings = Settings(surplus=policy.surplus, min_step=policy.stability.min_step,
                        max_move=policy.stability.max_move)
    result = allocate(pools, settings)
    warnings.extend(result.warnings)

    by_team: dict[str, list[Outcome]] = defaultdict(list)
    for pool in result.pools:
        for o in pool.outcomes:
            if o.changed:
                by_team[o.team].append(o)
    requests, blocked = _requests(snapshot, policy, by_team, warnings)

    allocations: dict[str, dict[str, dict[str, float]]] = {}
    changes: list[dict[str, Any]] = []
    for pool in result.pools:
        key = PoolKey.parse(pool.key)
        resource = key.resource
        for o in pool.outcomes:
            after = o.after
            if o.team in blocked and o.after > o.before:
                after = int(o.before)
            if after or o.before:
                allocations.setdefault(o.team, {})[pool.key] = {resource: float(after)}
            if abs(after - o.before) > EPS:
                changes.append({"team": o.team, "instance_type": key.instance_type, "resource": resource,
                                "mig_profile": key.mig_profile, "before": o.before, "after": float(after),
                                "reason": o.reason})
    changes.sort(key=lambda c: (c["after"] > c["before"], c["team"], c["instance_type"], c["mig_profile"] or ""))
    approval = _approval(policy, changes)
    # One validation of the whole plan from plain data: much faster than building 10,000 Change objects one by one.
    return Plan.model_validate({
        "cluster_name": snapshot.cluster.ClusterName, "cluster_arn": snapshot.cluster.ClusterArn,
        "taken_at": snapshot.taken_at, "mode": policy.mode, "allocations": allocations, "changes": changes,
        "requests": requests, "requires_approval": bool(approval), "approval_reasons": approval,
        "warnings": warnings,
    })
