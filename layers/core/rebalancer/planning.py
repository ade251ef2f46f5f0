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

import gc
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rebalancer import catalog, mig, ownership
from rebalancer.allocation import EPS, Claim, Outcome, PoolInput, PoolResult, Settings, allocate, largest_remainder
from rebalancer.budget_enforcement import enforce, explain
from rebalancer.cluster_policy import plan_scheduler_config
from rebalancer.errors import InvalidInput
from rebalancer.field_diff import field_diff
from rebalancer.models import ComputeQuota, Demand, Snapshot
from rebalancer.names import quota_name
from rebalancer.plan import CLUSTER, Change, FieldChange, Plan, QuotaRequest, SchedulerRequest, pool_name, trusted
from rebalancer.policy import Policy, PoolKey, TeamPolicy, family_types

MAX_ENTRIES = 15
DEFAULT_SHARING: dict[str, Any] = {"Strategy": "LendAndBorrow", "BorrowLimit": 50}
DEFAULT_PREEMPT = "LowerPriority"


def holdings(quota: ComputeQuota, index: int | None = None) -> dict[str, float]:
    """What a quota holds, per pool name, in the pool's unit (Count is turned into accelerators or vCPUs).
    With `index`, an unknown instance type is reported at its place in the snapshot's quotas."""
    out: dict[str, float] = {}
    for j, r in enumerate(quota.ComputeQuotaConfig.ComputeQuotaResources):
        try:
            spec = catalog.spec(r.InstanceType)
        except InvalidInput:
            if index is None:
                raise
            # The field path is built only on failure: this loop runs for every entry of every quota.
            catalog.spec(r.InstanceType,
                         field=f"quotas.{index}.ComputeQuotaConfig.ComputeQuotaResources.{j}.InstanceType")
            raise
        part = r.AcceleratorPartition
        if part is not None:
            name, amount = pool_name(r.InstanceType, part.Type), float(part.Count)
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


def split_family(amount: int, capacities: dict[str, float]) -> dict[str, int]:
    """`amount` whole units divided across types in proportion to their healthy capacity, by largest remainder
    (ties: larger capacity, then type name). Never above a type's capacity; sums to `amount` when it fits."""
    names = sorted(capacities)
    total = sum(capacities.values())
    amount = min(amount, math.floor(total + EPS))
    if amount <= 0 or total <= 0:
        return dict.fromkeys(names, 0)
    values = [amount * capacities[t] / total for t in names]
    caps = [capacities[t] for t in names]
    return dict(zip(names, largest_remainder(values, amount, caps, caps, names), strict=True))


@dataclass(slots=True)
class _TeamAmounts:
    """A team's guarantees and caps per pool in whole units, families divided across their types."""

    guarantee: dict[str, float] = field(default_factory=dict)
    cap: dict[str, float] = field(default_factory=dict)
    notes: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _team_amounts(team: str, tp: TeamPolicy, raw: dict[str, float], warnings: list[str]) -> _TeamAmounts:
    out = _TeamAmounts()
    for what, amounts, into in (("guarantee", tp.guarantee, out.guarantee), ("cap", tp.cap, out.cap)):
        for key, amount in amounts.items():
            members = family_types(key)
            if not members:
                into[key] = float(math.floor(amount.resolve(raw.get(key, 0.0)) + EPS))
                continue
            present = {t: raw[t] for t in members if raw.get(t, 0.0) > 0}
            total = sum(present.values())
            wanted = math.floor(amount.resolve(total) + EPS)
            if not present:
                warnings.append(f"{team}: {what}.{key} names a family with no healthy nodes in the cluster")
            elif wanted > total + EPS:
                warnings.append(f"{team}: {what}.{key} = {amount} is above the family's healthy {total:g}; "
                                f"limited to {total:g}")
            split = split_family(wanted, present)
            note = (f"{what} {key} {amount} split by healthy capacity: "
                    + ", ".join(f"{t} {n} of {present[t]:g}" for t, n in split.items()))
            for t in members:
                into[t] = float(split.get(t, 0))
                if t in present:
                    out.notes[t] = (*out.notes.get(t, ()), note)
    return out


def build_pools(snapshot: Snapshot, policy: Policy, now: datetime) -> tuple[list[PoolInput], list[str]]:
    """The engine's input: for every pool, the capacity the policy's teams share and one claim per team."""
    policy, warnings = ownership.held_outside(snapshot, policy)
    quotas = {q.team: q for q in snapshot.quotas}
    outsiders = sorted(t for t in quotas if t not in policy.teams)
    unnamed = [t for t in outsiders if not ownership.stack_of(snapshot, quotas[t])]
    if unnamed:
        warnings.append(f"teams with a quota but not in the policy keep it untouched: {', '.join(unnamed)}")

    # A deactivated quota holds nothing: its team's jobs cannot be admitted.
    held_by = {q.team: holdings(q, i) if q.ActivationState != "Disabled" else {}
               for i, q in enumerate(snapshot.quotas)}
    keys: set[str] = set()
    for t in snapshot.instance_types():
        catalog.spec(t, field="cluster.InstanceGroups.InstanceType")
        keys.add(t)
    for t, profiles in snapshot.mig.items():
        for profile in profiles:
            try:
                keys.add(str(PoolKey.parse(pool_name(t, profile))))
            except ValueError as e:
                raise InvalidInput(str(e), field=f"mig.{t}.{profile}", value=profile) from None
    for h in held_by.values():
        keys |= h.keys()
    policy_pools = {k for k in policy.pools() if not family_types(k)}
    keys |= policy_pools

    healthy, unhealthy = snapshot.healthy_nodes(), snapshot.unhealthy_nodes()
    carved: Counter[str] = Counter()
    for t, profiles in snapshot.mig.items():
        for profile, n in profiles.items():
            carved[t] += math.ceil(n / mig.partitions_per_gpu_on(t, profile))
    parsed = {name: PoolKey.parse(name) for name in keys}
    raw: dict[str, float] = {}
    for name, key in parsed.items():
        t = key.instance_type
        if key.mig_profile:
            raw[name] = float(snapshot.mig.get(t, {}).get(key.mig_profile, 0))
        else:
            raw[name] = float(max(0, healthy[t] * catalog.spec(t).primary_per_instance - carved[t]))

    team_names = policy.active_teams()
    cooling = {t: _cooldown(quotas.get(t), policy, now) for t in team_names}
    no_demand: dict[str, Demand] = {}
    no_holdings: dict[str, float] = {}
    rows = []
    for t in team_names:
        tp = policy.teams[t]
        amounts = _team_amounts(t, tp, raw, warnings)
        rows.append((t, tp.weight, tp.protected_in_use, cooling[t], snapshot.demand.get(t, no_demand),
                     held_by.get(t, no_holdings), amounts.guarantee, amounts.cap, amounts.notes))
    pools = []
    for name in sorted(keys):
        key = parsed[name]
        t, resource = key.instance_type, key.resource
        notes: list[str] = []
        if key.mig_profile:
            if raw[name] == 0 and name in policy_pools:
                warnings.append(f"{name}: the snapshot reports no healthy partitions of this profile")
        else:
            if unhealthy[t]:
                notes.append(f"{_plural(unhealthy[t], 'node')} of {t} unhealthy")
            if carved[t]:
                notes.append(f"{carved[t]} GPUs of {t} carved into MIG partitions")
            if not healthy[t] and not unhealthy[t] and name in policy_pools:
                warnings.append(f"{name}: named in the policy but the cluster has no such nodes")
        others = sum(held_by[o].get(name, 0.0) for o in outsiders)
        if others:
            notes.append(f"{others:g} held by teams outside the policy")
        capacity = raw[name] - others
        if capacity < 0:
            warnings.append(f"{name}: teams outside the policy hold {others:g}, more than the healthy {raw[name]:g}")
            capacity = 0.0
        claims: list[Claim] = []
        append = claims.append
        inf = math.inf
        # The hot loop of planning (one pass per team and pool): locals only, no attribute chains.
        for team, weight, protected, cooldown, demands, holds, guarantee, cap, team_notes in rows:
            d = demands.get(name)
            if d is None:
                demand = in_use = 0.0
            else:
                in_use = float(getattr(d.in_use, resource))
                demand = float(math.ceil(in_use + getattr(d.pending, resource) - EPS))
            append(Claim(team, weight, guarantee.get(name, 0.0) if guarantee else 0.0,
                         cap.get(name, inf) if cap else inf, demand, holds.get(name, 0.0), in_use, protected,
                         cooldown, team_notes.get(name, ()) if team_notes else ()))
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
    return pool_name(entry["InstanceType"], part["Type"] if part else None)


def _apply_entries(entries: list[dict[str, Any]], outcomes: Iterable[Outcome]) -> list[dict[str, Any]]:
    """Entries keep their order; a changed pool's entry is replaced in place, a new one appended, a zero removed."""
    slots: list[dict[str, Any] | None] = list(entries)
    at: dict[str, int] = {}
    for i, e in enumerate(entries):
        part = e.get("AcceleratorPartition")
        profile = part["Type"] if part else None
        pool = pool_name(e["InstanceType"], profile)
        if pool not in at:
            at[pool] = i
    for o in outcomes:
        instance_type, _, profile = o.pool.partition(":")
        new = _entry(instance_type, profile or None, o.after) if o.after else None
        where = at.get(o.pool)
        if where is None:
            if new is not None:
                at[o.pool] = len(slots)
                slots.append(new)
        else:
            slots[where] = new  # None marks a removed entry until the end
    return [e for e in slots if e is not None]


def _fair_share_weight(weight: float) -> int:
    return max(0, min(100, round(weight)))


def _explicit(team: str, tp: TeamPolicy, entries: list[dict[str, Any]],
              healthy: Mapping[str, int]) -> list[dict[str, Any]]:
    """Entries with the policy's explicit vCPU / memory set on the team's accelerator entries. Raises
    InvalidInput when an amount is more than the type's healthy total."""
    if not tp.vcpu and not tp.memory_gib:
        return entries
    out = []
    for e in entries:
        t = e["InstanceType"]
        if "AcceleratorPartition" not in e and (t in tp.vcpu or t in tp.memory_gib):
            e = dict(e)
            spec = catalog.spec(t)
            for name, api, amounts, per_node, unit in (("vcpu", "VCpu", tp.vcpu, spec.vcpu, "vCPU"),
                                                       ("memory_gib", "MemoryInGiB", tp.memory_gib,
                                                        spec.memory_gib, "GiB")):
                amount = amounts.get(t)
                if amount is None:
                    continue
                total = healthy[t] * per_node
                value = amount.resolve(total)
                if value > total + EPS:
                    raise InvalidInput(f"{amount} {unit} cannot fit on {t}: its healthy nodes have {total:g}",
                                       field=f"teams.{team}.{name}.{t}", value=str(amount))
                e[api] = round(value, 2)
        out.append(e)
    return out


def _resource_fields(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {_entry_pool(e): {k: e.get(k) for k in ("VCpu", "MemoryInGiB")} for e in entries}


def edited_outside(q: ComputeQuota, known_versions: Mapping[str, int] | None) -> bool:
    """Whether the quota may hold an edit the rebalancer did not make: its version is not the one our last write
    left (`known_versions[team]`, from the audit), or that is not known at all."""
    return known_versions is None or known_versions.get(q.team) != q.ComputeQuotaVersion


def _why(console: bool) -> str:
    return "console edit will be replaced" if console else "policy changed"


@dataclass
class _Requests:
    first: list[QuotaRequest] = field(default_factory=list)  # decreases, deactivations, settings
    second: list[QuotaRequest] = field(default_factory=list)  # creations and increases
    blocked: set[str] = field(default_factory=set)
    fields: list[FieldChange] = field(default_factory=list)


def _create(snapshot: Snapshot, team: str, tp: TeamPolicy, up: list[Outcome], out: _Requests,
            warnings: list[str]) -> None:
    entries = _explicit(team, tp, _apply_entries([], up), snapshot.healthy_nodes())
    if len(entries) > MAX_ENTRIES:
        warnings.append(f"{team}: a quota holds at most {MAX_ENTRIES} resource entries; "
                        f"{len(entries)} needed, not created")
        out.blocked.add(team)
        return
    out.second.append(QuotaRequest(operation="CreateComputeQuota", team=team, parameters={
        "Name": quota_name(team),
        "Description": ownership.QUOTA_DESCRIPTION,
        "ClusterArn": snapshot.cluster.ClusterArn,
        "ComputeQuotaConfig": {"ComputeQuotaResources": entries,
                               "ResourceSharingConfig": tp.sharing.to_api() if tp.sharing else DEFAULT_SHARING,
                               "PreemptTeamTasks": tp.preempt_team_tasks or DEFAULT_PREEMPT},
        "ComputeQuotaTarget": {"TeamName": team, "FairShareWeight": _target_weight(tp)},
        "ActivationState": "Enabled",
        "Tags": ownership.tags(),
    }))
    out.fields.append(FieldChange(team=team, field="ComputeQuota", after=quota_name(team),
                                  reason="team in the policy has no quota: created"))


def _target_weight(tp: TeamPolicy) -> int:
    return tp.fair_share_weight if tp.fair_share_weight is not None else _fair_share_weight(tp.weight)


def _update_team(q: ComputeQuota, tp: TeamPolicy, changed: list[Outcome], healthy: Mapping[str, int],
                 known_versions: Mapping[str, int] | None, out: _Requests, warnings: list[str]) -> None:
    team = q.team
    disabled = q.ActivationState == "Disabled"
    if tp.remove:
        if not disabled:
            out.first.append(QuotaRequest(operation="UpdateComputeQuota", team=team, parameters={
                "ComputeQuotaId": q.ComputeQuotaId, "TargetVersion": q.ComputeQuotaVersion,
                "ActivationState": "Disabled"}))
            out.fields.append(FieldChange(team=team, field="ActivationState", before="Enabled", after="Disabled",
                                          reason="remove: true in the policy: deactivated, not deleted"))
        return
    manages_settings = (tp.sharing is not None or tp.preempt_team_tasks is not None
                        or tp.fair_share_weight is not None or tp.vcpu or tp.memory_gib)
    if not (changed or disabled or manages_settings):
        return  # the common no-op re-plan: nothing to compare, nothing to write
    config = q.ComputeQuotaConfig.to_api()
    target = q.ComputeQuotaTarget.to_api()
    target.setdefault("FairShareWeight", _fair_share_weight(tp.weight))
    settings = {k: v for k, v in config.items() if k != "ComputeQuotaResources"}
    wanted = dict(settings)
    if tp.sharing is not None:
        wanted["ResourceSharingConfig"] = tp.sharing.to_api()
    if tp.preempt_team_tasks is not None:
        wanted["PreemptTeamTasks"] = tp.preempt_team_tasks
    wanted_target = dict(target)
    if tp.fair_share_weight is not None:
        wanted_target["FairShareWeight"] = tp.fair_share_weight
    entries = [] if disabled else list(config.get("ComputeQuotaResources", []))
    down = [o for o in changed if o.after < o.before]
    up = [o for o in changed if o.after > o.before]
    lowered = _explicit(team, tp, _apply_entries(entries, down), healthy)
    final = _explicit(team, tp, _apply_entries(lowered, up), healthy) if up else lowered

    console = edited_outside(q, known_versions)
    diffs = [] if settings == wanted else [(f"ComputeQuotaConfig.{k}", b, a)
                                           for k, b, a in field_diff(settings, wanted)]
    if target != wanted_target:
        diffs += [(f"ComputeQuotaTarget.{k}", b, a) for k, b, a in field_diff(target, wanted_target)]
    if tp.vcpu or tp.memory_gib:  # the only entry fields the policy states besides amounts
        before_res, after_res = _resource_fields(entries), _resource_fields(final)
        for pool in sorted(before_res.keys() & after_res.keys() & (tp.vcpu.keys() | tp.memory_gib.keys())):
            diffs += [(f"ComputeQuotaResources[{pool}].{k}", b, a)
                      for k, b, a in field_diff(before_res[pool], after_res[pool])]
    if disabled:
        diffs.append(("ActivationState", "Disabled", "Enabled"))
    if not (down or up or diffs):
        return
    if known_versions is not None and console:
        diffs.append(("ComputeQuotaVersion", known_versions.get(team), q.ComputeQuotaVersion))
    out.fields += [FieldChange(team=team, field=f, before=b, after=a, console_edit=console and f != "ActivationState",
                               reason=_why(console)) for f, b, a in diffs]
    activation = {"ActivationState": "Enabled"} if disabled else {}
    version = q.ComputeQuotaVersion
    if down or not up:
        out.first.append(_update(q, version, {**wanted, "ComputeQuotaResources": lowered}, wanted_target,
                                 activation))
        version += 1
    if up:
        if len(final) > MAX_ENTRIES:
            warnings.append(f"{team}: a quota holds at most {MAX_ENTRIES} resource entries; "
                            f"{len(final)} needed, increases not written")
            out.blocked.add(team)
            return
        out.second.append(_update(q, version, {**wanted, "ComputeQuotaResources": final}, wanted_target,
                                  activation))


def _requests(snapshot: Snapshot, policy: Policy, outcomes: dict[str, list[Outcome]], warnings: list[str],
              known_versions: Mapping[str, int] | None) -> _Requests:
    """Decreases, deactivations and setting changes for every team first, then creations and increases."""
    policy, _ = ownership.held_outside(snapshot, policy)  # a quota CloudFormation owns is never written
    quotas = {q.team: q for q in snapshot.quotas}
    # Only explicit vCPU / memory amounts need the healthy node counts (a pass over every node).
    healthy = snapshot.healthy_nodes() if any(tp.vcpu or tp.memory_gib for tp in policy.teams.values()) else {}
    out = _Requests()
    for team in sorted(policy.teams):
        tp = policy.teams[team]
        changed = outcomes.get(team, [])
        q = quotas.get(team)
        if q is None:
            if not tp.remove:
                _create(snapshot, team, tp, [o for o in changed if o.after > o.before], out, warnings)
            continue
        _update_team(q, tp, changed, healthy, known_versions, out, warnings)
    return out


def setting_changes(snapshot: Snapshot, policy: Policy,
                    known_versions: Mapping[str, int] | None = None) -> list[FieldChange]:
    """What the policy would rewrite on the cluster's quotas if no amount moved: sharing, preemption, fair-share
    weight, explicit vCPU / memory, activation, missing quotas (drift, see drift.py)."""
    return _requests(snapshot, policy, {}, [], known_versions).fields


def _update(q: ComputeQuota, version: int, config: dict[str, Any], target: dict[str, Any],
            extra: dict[str, Any]) -> QuotaRequest:
    return trusted(QuotaRequest, {"operation": "UpdateComputeQuota", "team": q.team, "parameters": {
        "ComputeQuotaId": q.ComputeQuotaId, "TargetVersion": version,
        "ComputeQuotaConfig": config, "ComputeQuotaTarget": target, **extra,
    }})


# A change before it becomes a Change: team, instance type, resource, MIG profile, before, after, reason.
_Row = tuple[str, str, str, str | None, float, float, str]


def _approval(policy: Policy, changes: list[_Row], fields: list[FieldChange]) -> list[str]:
    if policy.mode == "dry-run" or not (changes or fields):
        return []
    if policy.mode == "approve":
        return ["mode is approve: every plan needs an admin"]
    reasons = []
    downs = [c for c in changes if c[5] < c[4]]
    moved = sum(c[4] - c[5] for c in downs if c[2] == "accelerators")
    if moved > policy.approval.moved_accelerators:
        reasons.append(f"moves {moved:g} accelerators, above approval.moved_accelerators "
                       f"{policy.approval.moved_accelerators}")
    limit = policy.approval.max_decrease_percent
    for team, instance_type, _, profile, before, after, _ in downs:
        if before > 0 and (before - after) / before * 100 > limit + EPS:
            pool = pool_name(instance_type, profile)
            reasons.append(f"{team} loses {(before - after) / before:.0%} of {pool} "
                           f"({before:g} → {after:g}), above approval.max_decrease_percent {limit:g}")
    if policy.approval.console_edits:
        edited: dict[str, list[str]] = {}
        for f in fields:
            if f.console_edit:
                edited.setdefault(f.team, []).append(f.field)
        for team, names in edited.items():
            reasons.append(f"console edit will be replaced: {team} ({', '.join(names)}); "
                           "approval.console_edits is on")
    return reasons


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Planning builds tens of thousands of small containers and no reference cycles; left on, the cyclic
    collector runs repeatedly over the whole snapshot meanwhile (about a third of make_plan's time at 1,000
    teams). Reference counting still frees everything; the collector's previous state is restored."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def make_plan(snapshot: Snapshot, policy: Policy, now: datetime, *,
              known_versions: Mapping[str, int] | None = None) -> Plan:
    """Desired allocations and settings against the snapshot's quotas and scheduler config, as an ordered,
    explained change set.

    `known_versions`: per team, the quota version our last applied write left (from the audit log; the key
    `(cluster)` for the scheduler config). A quota at another version was edited outside the rebalancer, and what
    the plan rewrites there is marked "console edit will be replaced". Without it, every setting that differs
    from the policy is marked so (it may be a console edit); allocation changes are then ordinary rebalancing.
    """
    enforced = enforce(policy, snapshot)  # budgets: a lower ceiling or no borrowing, and the reason
    with _gc_paused():
        plan = _make_plan(snapshot, enforced.policy, now, known_versions)
    return explain(plan, enforced)


def _make_plan(snapshot: Snapshot, policy: Policy, now: datetime,
               known_versions: Mapping[str, int] | None) -> Plan:
    pools, warnings = build_pools(snapshot, policy, now)
    settings = Settings(surplus=policy.surplus, min_step=policy.stability.min_step,
                        max_move=policy.stability.max_move)
    result = allocate(pools, settings)
    warnings.extend(result.warnings)

    by_team: dict[str, list[Outcome]] = defaultdict(list)
    for pool in result.pools:
        for o in pool.outcomes:
            if abs(o.after - o.before) > EPS:  # Outcome.changed, inlined: 15k outcomes at 1,000 teams
                by_team[o.team].append(o)
    written = _requests(snapshot, policy, by_team, warnings, known_versions)
    blocked = written.blocked

    # Changes are listed decreases first, then by team, instance type and MIG profile. Pools are visited in that
    # (type, profile) order, so each team's list comes out sorted and only the team names need sorting.
    allocations: dict[str, dict[str, dict[str, float]]] = {}
    downs: dict[str, list[_Row]] = {}
    ups: dict[str, list[_Row]] = {}
    keyed = [(PoolKey.parse(pool.key), pool) for pool in result.pools]
    keyed.sort(key=_type_then_profile)
    for key, pool in keyed:
        name, resource, instance_type, profile = pool.key, key.resource, key.instance_type, key.mig_profile
        for o in pool.outcomes:
            team, before, after = o.team, o.before, o.after
            if after > before and team in blocked:
                after = int(before)
            if after or before:
                held_by_team = allocations.get(team)
                if held_by_team is None:
                    held_by_team = allocations[team] = {}
                held_by_team[name] = {resource: float(after)}
            if abs(after - before) > EPS:
                side = ups if after > before else downs
                row = (team, instance_type, resource, profile, before, float(after), o.reason)
                team_rows = side.get(team)
                if team_rows is None:
                    side[team] = [row]
                else:
                    team_rows.append(row)
    ordered = [row for side in (downs, ups) for team in sorted(side) for row in side[team]]
    changes = [trusted(Change, {"team": t, "instance_type": i, "resource": r, "mig_profile": m, "before": b,
                                "after": a, "reason": why}) for t, i, r, m, b, a, why in ordered]
    fields = written.fields
    scheduler: list[SchedulerRequest] = []
    if policy.cluster is not None:
        request, cluster_fields = plan_scheduler_config(
            snapshot.cluster.ClusterName, snapshot.cluster.ClusterArn, snapshot.scheduler_config, policy.cluster,
            known_version=None if known_versions is None else known_versions.get(CLUSTER))
        scheduler += [request] if request else []
        fields = cluster_fields + fields
    approval = _approval(policy, ordered, fields)
    # Every part is already of its declared type (the changes and requests were built above): no validation pass.
    return trusted(Plan, {
        "cluster_name": snapshot.cluster.ClusterName, "cluster_arn": snapshot.cluster.ClusterArn,
        "taken_at": snapshot.taken_at, "mode": policy.mode, "allocations": allocations, "changes": tuple(changes),
        "requests": (*written.first, *written.second), "requires_approval": bool(approval),
        "approval_reasons": tuple(approval), "warnings": tuple(warnings), "field_changes": tuple(fields),
        "scheduler_requests": tuple(scheduler),
    })


def _type_then_profile(item: tuple[PoolKey, PoolResult]) -> tuple[str, str]:
    return item[0].instance_type, item[0].mig_profile or ""
