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
from typing import Any, Literal, cast

from rebalancer import catalog
from rebalancer.allocation import EPS, Claim, Outcome, PoolInput, Settings, allocate
from rebalancer.models import ComputeQuota, Snapshot
from rebalancer.plan import Change, Plan, QuotaRequest
from rebalancer.policy import Policy, PoolKey

MAX_ENTRIES = 15
ChangeResource = Literal["accelerators", "vcpu", "memory_gib", "partitions"]
DEFAULT_SHARING: dict[str, Any] = {"Strategy": "LendAndBorrow", "BorrowLimit": 50}
DEFAULT_PREEMPT = "LowerPriority"


def _pool_key(instance_type: str, profile: str | None = None) -> PoolKey:
    return PoolKey(instance_type=instance_type, mig_profile=profile)


def held(quota: ComputeQuota, pool: PoolKey) -> float:
    """What a quota holds in a pool, in the pool's unit (Count is turned into accelerators or vCPUs)."""
    spec = catalog.spec(pool.instance_type)
    total = 0.0
    for r in quota.ComputeQuotaConfig.ComputeQuotaResources:
        if r.InstanceType != pool.instance_type:
            continue
        part = r.AcceleratorPartition
        if pool.mig_profile:
            if part is not None and part.Type == pool.mig_profile:
                total += part.Count
        elif part is None:
            if spec.accelerators:
                total += r.Accelerators if r.Accelerators is not None else (r.Count or 0) * spec.accelerators
            else:
                total += r.VCpu if r.VCpu is not None else (r.Count or 0) * spec.vcpu
    return total


def _quota_pools(quota: ComputeQuota, index: int) -> set[PoolKey]:
    out = set()
    for j, r in enumerate(quota.ComputeQuotaConfig.ComputeQuotaResources):
        field = f"quotas.{index}.ComputeQuotaConfig.ComputeQuotaResources.{j}.InstanceType"
        catalog.spec(r.InstanceType, field=field)
        out.add(_pool_key(r.InstanceType, r.AcceleratorPartition.Type if r.AcceleratorPartition else None))
    return out


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

    keys: set[PoolKey] = set()
    for t in snapshot.instance_types():
        catalog.spec(t, field="cluster.InstanceGroups.InstanceType")
        keys.add(_pool_key(t))
    for t, profiles in snapshot.mig.items():
        catalog.spec(t, field=f"mig.{t}")
        keys |= {PoolKey.parse(f"{t}:{p}") for p in profiles}
    for i, q in enumerate(snapshot.quotas):
        keys |= _quota_pools(q, i)
    for k in policy.pools():
        keys.add(PoolKey.parse(k))

    healthy, unhealthy = snapshot.healthy_nodes(), snapshot.unhealthy_nodes()
    carved: Counter[str] = Counter()
    for t, profiles in snapshot.mig.items():
        for profile, n in profiles.items():
            carved[t] += math.ceil(n / catalog.mig_partitions_per_gpu(profile))

    team_names = sorted(policy.teams)
    cooling = {t: _cooldown(quotas.get(t), policy, now) for t in team_names}
    pools = []
    for key in sorted(keys, key=str):
        name, t = str(key), key.instance_type
        spec = catalog.spec(t)
        notes: list[str] = []
        if key.mig_profile:
            raw = float(snapshot.mig.get(t, {}).get(key.mig_profile, 0))
            if raw == 0 and any(key.mig_profile and name in tp.guarantee for tp in policy.teams.values()):
                warnings.append(f"{name}: the snapshot reports no healthy partitions of this profile")
        else:
            raw = float(max(0, healthy[t] * spec.primary_per_instance - carved[t]))
            if unhealthy[t]:
                notes.append(f"{_plural(unhealthy[t], 'node')} of {t} unhealthy")
            if carved[t]:
                notes.append(f"{carved[t]} GPUs of {t} carved into MIG partitions")
            if not healthy[t] and not unhealthy[t] and name in policy.pools():
                warnings.append(f"{name}: named in the policy but the cluster has no such nodes")
        others = sum(held(quotas[o], key) for o in outsiders)
        if others:
            notes.append(f"{others:g} held by teams outside the policy")
        capacity = raw - others
        if capacity < 0:
            warnings.append(f"{name}: teams outside the policy hold {others:g}, more than the healthy {raw:g}")
            capacity = 0.0
        claims = []
        for team in team_names:
            tp = policy.teams[team]
            quota = quotas.get(team)
            d = snapshot.demand.get(team, {}).get(name)
            demand = math.ceil(d.total(key.resource) - EPS) if d else 0
            in_use = d.in_use.get(key.resource) if d else 0.0
            guarantee = float(math.floor(tp.guarantee_for(name, raw) + EPS))
            cap = tp.cap_for(name, raw)
            claims.append(Claim(
                team=team, weight=tp.weight, guarantee=guarantee,
                cap=float(math.floor(cap + EPS)) if cap != math.inf else cap,
                demand=float(demand), current=held(quota, key) if quota else 0.0, in_use=in_use,
                protected=tp.protected_in_use, cooldown=cooling[team],
            ))
        pools.append(PoolInput(name, key.resource, capacity, tuple(claims), tuple(notes)))
    return pools, warnings


def _entry(key: PoolKey, amount: int) -> dict[str, Any]:
    if key.mig_profile:
        return {"InstanceType": key.instance_type,
                "AcceleratorPartition": {"Type": key.mig_profile, "Count": amount}}
    spec = catalog.spec(key.instance_type)
    if spec.accelerators:
        return {"InstanceType": key.instance_type, "Accelerators": amount}
    memory = round(amount * spec.memory_gib / spec.vcpu, 2)
    return {"InstanceType": key.instance_type, "VCpu": float(amount), "MemoryInGiB": memory}


def _is_entry_of(entry: dict[str, Any], key: PoolKey) -> bool:
    if entry["InstanceType"] != key.instance_type:
        return False
    part = entry.get("AcceleratorPartition")
    return part["Type"] == key.mig_profile if part and key.mig_profile else not part and not key.mig_profile


def _apply_entries(entries: list[dict[str, Any]], outcomes: Iterable[Outcome]) -> list[dict[str, Any]]:
    out = list(entries)
    for o in outcomes:
        key = PoolKey.parse(o.pool)
        at = next((i for i, e in enumerate(out) if _is_entry_of(e, key)), None)
        if o.after == 0:
            if at is not None:
                del out[at]
        elif at is None:
            out.append(_entry(key, o.after))
        else:
            out[at] = _entry(key, o.after)
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
        entries = [r.to_api() for r in q.ComputeQuotaConfig.ComputeQuotaResources]
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


def _approval(policy: Policy, changes: list[Change]) -> list[str]:
    if policy.mode == "dry-run" or not changes:
        return []
    if policy.mode == "approve":
        return ["mode is approve: every plan needs an admin"]
    reasons = []
    moved = sum(c.before - c.after for c in changes if c.resource == "accelerators" and c.after < c.before)
    if moved > policy.approval.moved_accelerators:
        reasons.append(f"moves {moved:g} accelerators, above approval.moved_accelerators "
                       f"{policy.approval.moved_accelerators}")
    limit = policy.approval.max_decrease_percent
    for c in changes:
        if c.before > 0 and c.after < c.before and (c.before - c.after) / c.before * 100 > limit + EPS:
            pool = f"{c.instance_type}:{c.mig_profile}" if c.mig_profile else c.instance_type
            reasons.append(f"{c.team} loses {(c.before - c.after) / c.before:.0%} of {pool} "
                           f"({c.before:g} → {c.after:g}), above approval.max_decrease_percent {limit:g}")
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
    changes: list[Change] = []
    for pool in result.pools:
        key = PoolKey.parse(pool.key)
        for o in pool.outcomes:
            after = o.after
            if o.team in blocked and o.after > o.before:
                after = int(o.before)
            if after or o.before:
                allocations.setdefault(o.team, {})[pool.key] = {o.resource: float(after)}
            if abs(after - o.before) > EPS:
                resource = cast(ChangeResource, key.resource)
                changes.append(Change(team=o.team, instance_type=key.instance_type, resource=resource,
                                      mig_profile=key.mig_profile, before=o.before, after=float(after),
                                      reason=o.reason))
    changes.sort(key=lambda c: (c.after > c.before, c.team, c.instance_type, c.mig_profile or ""))
    approval = _approval(policy, changes)
    return Plan(
        cluster_name=snapshot.cluster.ClusterName, cluster_arn=snapshot.cluster.ClusterArn,
        taken_at=snapshot.taken_at, mode=policy.mode, allocations=allocations, changes=tuple(changes),
        requests=tuple(requests), requires_approval=bool(approval), approval_reasons=tuple(approval),
        warnings=tuple(warnings),
    )

