"""The amounts the engine moves + the policy's settings → the quota API requests, in the order they must be sent.

How a quota's resource entries are written: a changed entry is rewritten as `Accelerators` (GPU/Neuron types;
vCPU and memory left to SageMaker's ratio rule), `VCpu` + proportional `MemoryInGiB` (CPU-only types), or
`AcceleratorPartition` (MIG); an entry that goes to zero is removed; every other entry, the sharing config, the
preemption setting and the fair-share weight are kept as they are, unless the policy states them.
Every amount a request writes is within the API's range (rebalancer.domain.quotas): one outside it (a derived
memory amount, a policy's absolute borrow limit) is written at the range's end and the cut is a warning of the plan.
Requests are ordered: every decrease before any increase, so the sum of quotas of a pool never exceeds its
capacity between two calls. A team with both decreases and increases gets two UpdateComputeQuota requests; the
second carries TargetVersion = version read + 1, which is what the first one returns (an applier that sees a
different version must stop, as for any conflict).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rebalancer.catalog import specs as catalog
from rebalancer.domain import ownership
from rebalancer.domain.context import PlanningContext
from rebalancer.domain.names import quota_name
from rebalancer.domain.plan import FieldChange, QuotaRequest
from rebalancer.domain.policy import Policy, TeamPolicy
from rebalancer.domain.pools import pool_name
from rebalancer.domain.quotas import AMOUNT_RANGE, BORROW_LIMIT_RANGE, FAIR_SHARE_WEIGHT_RANGE, ComputeQuota
from rebalancer.domain.snapshot import Snapshot
from rebalancer.engine import stability
from rebalancer.engine.allocation import EPS
from rebalancer.errors import InvalidInput
from rebalancer.planning.field_diff import field_diff

MAX_ENTRIES = 15
DEFAULT_SHARING: dict[str, Any] = {"Strategy": "LendAndBorrow", "BorrowLimit": 50}
DEFAULT_PREEMPT = "LowerPriority"

Entry = dict[str, Any]  # one ComputeQuotaResources entry, as the API takes it


# An amount the engine moves in one team's pool: (pool, before, after). A plain tuple, not a NamedTuple: the
# garbage collector stops tracking tuples of strings and numbers, and a 1,000-team plan holds 11k of them.
Move = tuple[str, float, int]


@dataclass(slots=True)
class QuotaWrites:
    """The requests of a plan, collected team by team, and what they rewrite besides amounts."""

    first: list[QuotaRequest] = field(default_factory=list)  # decreases, deactivations, settings
    second: list[QuotaRequest] = field(default_factory=list)  # creations and increases
    blocked: set[str] = field(default_factory=set)  # teams whose increases are not written
    fields: list[FieldChange] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def requests(self) -> tuple[QuotaRequest, ...]:
        return (*self.first, *self.second)


def quota_requests(snapshot: Snapshot, policy: Policy, changed: Mapping[str, Sequence[Move]],
                   known_versions: Mapping[str, int] | None) -> QuotaWrites:
    """Decreases, deactivations and setting changes for every team first, then creations and increases.
    `changed`: per team, the amounts the engine moves. `policy` is the effective one (rebalancer.engine.stability):
    a team whose quota CloudFormation owns is not in it, so its quota is never written."""
    quotas = {q.team: q for q in snapshot.quotas}
    # Only explicit vCPU / memory amounts need the healthy node counts (a pass over every node).
    healthy = snapshot.healthy_nodes() if any(tp.vcpu or tp.memory_gib for tp in policy.teams.values()) else {}
    out = QuotaWrites()
    for team in sorted(policy.teams):
        tp = policy.teams[team]
        moves = changed.get(team, ())
        q = quotas.get(team)
        if q is None:
            if not tp.remove:
                _create(snapshot, team, tp, [m for m in moves if m[2] > m[1]], healthy, out)
            continue
        _update(q, tp, moves, healthy, known_versions, out)
    out.first = [within_api(r, out.warnings) for r in out.first]
    out.second = [within_api(r, out.warnings) for r in out.second]
    return out


def within_api(request: QuotaRequest, warnings: list[str]) -> QuotaRequest:
    """`request` with every amount it writes within the API's range; each one cut is a line of `warnings`."""
    if _in_range(request.parameters):
        return request
    cuts: list[str] = []
    params = dict(request.parameters)
    config, target = params.get("ComputeQuotaConfig"), params.get("ComputeQuotaTarget")
    if config is not None:
        params["ComputeQuotaConfig"] = config = dict(config)
        config["ComputeQuotaResources"] = [_entry_within(e, cuts) for e in config.get("ComputeQuotaResources", ())]
        if config.get("ResourceSharingConfig") is not None:
            config["ResourceSharingConfig"] = sharing = dict(config["ResourceSharingConfig"])
            if "BorrowLimit" in sharing:
                sharing["BorrowLimit"] = _within(sharing["BorrowLimit"], BORROW_LIMIT_RANGE, "BorrowLimit", cuts)
            if sharing.get("AbsoluteBorrowLimits") is not None:
                sharing["AbsoluteBorrowLimits"] = [_entry_within(e, cuts, "absolute borrow limit of ")
                                                   for e in sharing["AbsoluteBorrowLimits"]]
    if target is not None and "FairShareWeight" in target:
        params["ComputeQuotaTarget"] = {**target, "FairShareWeight": _within(
            target["FairShareWeight"], FAIR_SHARE_WEIGHT_RANGE, "FairShareWeight", cuts)}
    warnings += [f"{request.team}: {cut}" for cut in cuts]
    return QuotaRequest(operation=request.operation, team=request.team, parameters=params)


_AMOUNTS = ("Count", "Accelerators", "VCpu", "MemoryInGiB")


def _in_range(params: dict[str, Any]) -> bool:
    """Whether every amount of a request is within the API's range: a plain scan, as nearly every request is (at
    1,000 teams a plan writes ~20k entries)."""
    config, target = params.get("ComputeQuotaConfig"), params.get("ComputeQuotaTarget")
    if target is not None and not 0 <= target.get("FairShareWeight", 0) <= FAIR_SHARE_WEIGHT_RANGE[1]:
        return False
    if config is None:
        return True
    sharing = config.get("ResourceSharingConfig") or {}
    if not 0 <= sharing.get("BorrowLimit", 0) <= BORROW_LIMIT_RANGE[1]:
        return False
    high = AMOUNT_RANGE[1]
    for entries in (config.get("ComputeQuotaResources", ()), sharing.get("AbsoluteBorrowLimits") or ()):
        for e in entries:
            accelerators = e.get("Accelerators")
            if len(e) == 2 and accelerators is not None:  # the common entry: {InstanceType, Accelerators}
                if not 0 <= accelerators <= high:
                    return False
                continue
            for k, v in e.items():
                if k != "InstanceType" and not (0 <= v <= high if k != "AcceleratorPartition"
                                                else 0 <= v["Count"] <= high):
                    return False
    return True


def _entry_within(entry: Entry, cuts: list[str], what: str = "") -> Entry:
    """A ComputeQuotaResourceConfig with its amounts within the API's range."""
    part = entry.get("AcceleratorPartition")
    where = f"{what}{entry['InstanceType']}"
    out = {k: _within(v, AMOUNT_RANGE, f"{where} {k}", cuts) if k in _AMOUNTS else v for k, v in entry.items()}
    if part is not None:
        out["AcceleratorPartition"] = {**part, "Count": _within(part["Count"], AMOUNT_RANGE,
                                                                f"{where} {part['Type']} partitions", cuts)}
    return out


def _within(value: Any, bounds: tuple[int, int], what: str, cuts: list[str]) -> Any:
    """`value` when within `bounds`, else the bound it passed (of its own type), said in `cuts`."""
    low, high = bounds
    if low <= value <= high:
        return value
    cut = type(value)(high if value > high else low)
    cuts.append(f"{what} of {value:,} is outside the API's range ({low:,} to {high:,}); written as {cut:,}")
    return cut


def setting_changes(snapshot: Snapshot, policy: Policy,
                    known_versions: Mapping[str, int] | None = None) -> list[FieldChange]:
    """What the policy would rewrite on the cluster's quotas if no amount moved: sharing, preemption, fair-share
    weight, explicit vCPU / memory, activation, missing quotas (drift, see rebalancer_tools/reports/drift.py).
    For a policy as written: the quotas CloudFormation owns held outside it, as in a plan; no budget applied."""
    effective = stability.effective(policy, snapshot, PlanningContext(), (stability.OWNERSHIP,))
    return quota_requests(snapshot, effective.policy, {}, known_versions).fields


def edited_outside(q: ComputeQuota, known_versions: Mapping[str, int] | None) -> bool:
    """Whether the quota may hold an edit the rebalancer did not make: its version is not the one our last write
    left (`known_versions[team]`, from the audit), or that is not known at all."""
    return known_versions is None or known_versions.get(q.team) != q.ComputeQuotaVersion


def _entry(instance_type: str, profile: str | None, amount: int) -> Entry:
    if profile:
        return {"InstanceType": instance_type, "AcceleratorPartition": {"Type": profile, "Count": amount}}
    spec = catalog.spec(instance_type)
    if spec.accelerators:
        return {"InstanceType": instance_type, "Accelerators": amount}
    memory = round(amount * spec.memory_gib / spec.vcpu, 2)
    return {"InstanceType": instance_type, "VCpu": float(amount), "MemoryInGiB": memory}


def _entry_pool(entry: Entry) -> str:
    part = entry.get("AcceleratorPartition")
    return pool_name(entry["InstanceType"], part["Type"] if part else None)


@functools.lru_cache(maxsize=1024)
def _pool_entry(pool: str) -> tuple[str, str | None, bool]:
    """(instance type, MIG profile, whether its entry is whole accelerators) of a pool: read once per pool, not
    once per amount moved (11k of them at 1,000 teams)."""
    instance_type, _, profile = pool.partition(":")
    return instance_type, profile or None, not profile and bool(catalog.spec(instance_type).accelerators)


def _rewrite(entries: list[Entry], down: Iterable[Move], up: Iterable[Move]) -> tuple[list[Entry], list[Entry]]:
    """The entries once the decreases are written, and once the increases are too. Entries keep their order; a
    changed pool's entry is replaced in place, a new one appended, a zero removed."""
    slots: list[Entry | None] = list(entries)
    at: dict[str, int] = {}
    for i, e in enumerate(entries):
        part = e.get("AcceleratorPartition")
        at.setdefault(pool_name(e["InstanceType"], part["Type"]) if part else e["InstanceType"], i)

    def write(moves: Iterable[Move]) -> list[Entry]:
        for pool, _, after in moves:
            new: Entry | None = None
            if after:
                instance_type, profile, whole = _pool_entry(pool)
                new = ({"InstanceType": instance_type, "Accelerators": after} if whole
                       else _entry(instance_type, profile, after))
            where = at.get(pool)
            if where is None:
                if new is not None:
                    at[pool] = len(slots)
                    slots.append(new)
            else:
                slots[where] = new  # None marks a removed entry
        return [e for e in slots if e is not None]

    return write(down), write(up)


def _explicit(team: str, tp: TeamPolicy, entries: list[Entry], healthy: Mapping[str, int]) -> list[Entry]:
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


def _resource_fields(entries: list[Entry]) -> dict[str, dict[str, Any]]:
    return {_entry_pool(e): {k: e.get(k) for k in ("VCpu", "MemoryInGiB")} for e in entries}


def _fair_share_weight(weight: float) -> int:
    return max(0, min(100, round(weight)))


def _target_weight(tp: TeamPolicy) -> int:
    return tp.fair_share_weight if tp.fair_share_weight is not None else _fair_share_weight(tp.weight)


def _why(console: bool) -> str:
    return "console edit will be replaced" if console else "policy changed"


def _create(snapshot: Snapshot, team: str, tp: TeamPolicy, up: list[Move], healthy: Mapping[str, int],
            out: QuotaWrites) -> None:
    entries = _explicit(team, tp, _rewrite([], (), up)[1], healthy)
    if len(entries) > MAX_ENTRIES:
        out.warnings.append(f"{team}: a quota holds at most {MAX_ENTRIES} resource entries; "
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


def _update(q: ComputeQuota, tp: TeamPolicy, changed: Sequence[Move], healthy: Mapping[str, int],
            known_versions: Mapping[str, int] | None, out: QuotaWrites) -> None:
    """An existing quota: its settings as the policy wants them → its entries rewritten → the field changes seen →
    the requests (one with the decreases, one with the increases)."""
    disabled = q.ActivationState == "Disabled"
    if tp.remove:
        if not disabled:
            _deactivate(q, out)
        return
    manages_settings = (tp.sharing is not None or tp.preempt_team_tasks is not None
                        or tp.fair_share_weight is not None or tp.vcpu or tp.memory_gib)
    if not (changed or disabled or manages_settings):
        return  # the common no-op re-plan: nothing to compare, nothing to write
    config = q.ComputeQuotaConfig.to_api()
    settings = _settings(config, q, tp)
    entries = _entries(config, q.team, tp, changed, healthy, disabled)
    console = edited_outside(q, known_versions)
    diffs = _diffs(settings, entries, tp, disabled)
    if not (entries.down or entries.up or diffs):
        return
    if known_versions is not None and console:
        diffs.append(("ComputeQuotaVersion", known_versions.get(q.team), q.ComputeQuotaVersion))
    out.fields += [FieldChange(team=q.team, field=f, before=b, after=a,
                               console_edit=console and f != "ActivationState", reason=_why(console))
                   for f, b, a in diffs]
    _write(q, settings, entries, disabled, out)


def _deactivate(q: ComputeQuota, out: QuotaWrites) -> None:
    out.first.append(QuotaRequest(operation="UpdateComputeQuota", team=q.team, parameters={
        "ComputeQuotaId": q.ComputeQuotaId, "TargetVersion": q.ComputeQuotaVersion, "ActivationState": "Disabled"}))
    out.fields.append(FieldChange(team=q.team, field="ActivationState", before="Enabled", after="Disabled",
                                  reason="remove: true in the policy: deactivated, not deleted"))


@dataclass(frozen=True, slots=True)
class _Settings:
    """A quota's config besides its entries, and its target, as read and as the policy wants them."""

    read: dict[str, Any]
    wanted: dict[str, Any]
    target: dict[str, Any]
    wanted_target: dict[str, Any]


def _settings(config: dict[str, Any], q: ComputeQuota, tp: TeamPolicy) -> _Settings:
    target = q.ComputeQuotaTarget.to_api()
    target.setdefault("FairShareWeight", _fair_share_weight(tp.weight))
    read = {k: v for k, v in config.items() if k != "ComputeQuotaResources"}
    wanted, wanted_target = read, target  # copied only when the policy states a setting
    if tp.sharing is not None or tp.preempt_team_tasks is not None:
        wanted = dict(read)
        if tp.sharing is not None:
            wanted["ResourceSharingConfig"] = tp.sharing.to_api()
        if tp.preempt_team_tasks is not None:
            wanted["PreemptTeamTasks"] = tp.preempt_team_tasks
    if tp.fair_share_weight is not None:
        wanted_target = {**target, "FairShareWeight": tp.fair_share_weight}
    return _Settings(read, wanted, target, wanted_target)


@dataclass(frozen=True, slots=True)
class _Entries:
    """A quota's resource entries as read, after its decreases (lowered) and after its increases too (final)."""

    read: list[Entry]
    lowered: list[Entry]
    final: list[Entry]
    down: list[Move]
    up: list[Move]


def _entries(config: dict[str, Any], team: str, tp: TeamPolicy, changed: Sequence[Move],
             healthy: Mapping[str, int], disabled: bool) -> _Entries:
    read = [] if disabled else list(config.get("ComputeQuotaResources", []))
    down = [m for m in changed if m[2] < m[1]]
    up = [m for m in changed if m[2] > m[1]]
    lowered, final = _rewrite(read, down, up)
    if tp.vcpu or tp.memory_gib:
        lowered = _explicit(team, tp, lowered, healthy)
        final = _explicit(team, tp, final, healthy) if up else lowered
    elif not up:
        final = lowered
    return _Entries(read, lowered, final, down, up)


def _diffs(settings: _Settings, entries: _Entries, tp: TeamPolicy,
           disabled: bool) -> list[tuple[str, Any, Any]]:
    """(field, before, after) of what the writes change besides amounts."""
    diffs = [] if settings.read == settings.wanted else [(f"ComputeQuotaConfig.{k}", b, a)
                                                         for k, b, a in field_diff(settings.read, settings.wanted)]
    if settings.target != settings.wanted_target:
        diffs += [(f"ComputeQuotaTarget.{k}", b, a)
                  for k, b, a in field_diff(settings.target, settings.wanted_target)]
    if tp.vcpu or tp.memory_gib:  # the only entry fields the policy states besides amounts
        before_res, after_res = _resource_fields(entries.read), _resource_fields(entries.final)
        for pool in sorted(before_res.keys() & after_res.keys() & (tp.vcpu.keys() | tp.memory_gib.keys())):
            diffs += [(f"ComputeQuotaResources[{pool}].{k}", b, a)
                      for k, b, a in field_diff(before_res[pool], after_res[pool])]
    if disabled:
        diffs.append(("ActivationState", "Disabled", "Enabled"))
    return diffs


def _write(q: ComputeQuota, settings: _Settings, entries: _Entries, disabled: bool, out: QuotaWrites) -> None:
    """The decreases (or the settings alone) at the version read, then the increases at the next one."""
    activation = {"ActivationState": "Enabled"} if disabled else {}

    def write(version: int, resources: list[Entry]) -> QuotaRequest:
        return QuotaRequest(operation="UpdateComputeQuota", team=q.team, parameters={
            "ComputeQuotaId": q.ComputeQuotaId, "TargetVersion": version,
            "ComputeQuotaConfig": {**settings.wanted, "ComputeQuotaResources": resources},
            "ComputeQuotaTarget": settings.wanted_target, **activation})

    version = q.ComputeQuotaVersion
    if entries.down or not entries.up:
        out.first.append(write(version, entries.lowered))
        version += 1
    if entries.up:
        if len(entries.final) > MAX_ENTRIES:
            out.warnings.append(f"{q.team}: a quota holds at most {MAX_ENTRIES} resource entries; "
                                f"{len(entries.final)} needed, increases not written")
            out.blocked.add(q.team)
            return
        out.second.append(write(version, entries.final))
