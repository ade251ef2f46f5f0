"""Task-governance state and operations for one moto SageMaker backend (one account and region).

The state hangs off the moto backend object, so moto's reset (a new `mock_aws`, `/moto-api/reset`) clears it with
everything else, and ThreadedMotoServer and in-process callers see the same state.
"""

from __future__ import annotations

import base64
import binascii
import copy
import datetime as dt
import hashlib
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rebalancer.catalog.specs import spec
from rebalancer.domain.clock import Clock, system_clock
from rebalancer.errors import UnknownInstanceType
from rebalancer_tools.emulator import capacity, events
from rebalancer_tools.emulator.allocations import Allocations
from rebalancer_tools.emulator.errors import ConflictException, ResourceNotFound, ValidationError
from rebalancer_tools.emulator.faults import FAILING, FaultInjector, FaultKind
from rebalancer_tools.emulator.invariant import InvariantMonitor, InvariantRecord
from rebalancer_tools.emulator.resources import SETTLES_TO, Kind, Pending, Resource

# The model admits 0-10000 (what the shape check enforces); the API reference (ResourceSharingConfig.BorrowLimit)
# says "The values can be 1 - 500 percent", and CloudFormation's schema calls 1-500 the operational range.
DOCUMENTED_BORROW_LIMIT = (1, 500)

_ATTR = "_rebalancer_governance"
_CREATE_LOCK = threading.Lock()

_LABEL = {Kind.COMPUTE_QUOTA: "Compute quota", Kind.SCHEDULER_CONFIG: "Cluster scheduler config"}
_BODY_KEYS = {
    Kind.COMPUTE_QUOTA: ("ComputeQuotaConfig", "ComputeQuotaTarget", "ActivationState"),
    Kind.SCHEDULER_CONFIG: ("SchedulerConfig",),
}


_VERB = {"Creating": "Create", "Updating": "Update", "Deleting": "Delete"}


def _aware(t: dt.datetime) -> dt.datetime:
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


@dataclass(slots=True)
class Settings:
    """`transition_reads`: Describe calls that still see Creating / Updating after a write (0: settled at once)."""

    transition_reads: int = 0
    default_max_results: int = 10


class Governance:
    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.lock = threading.RLock()
        self.settings = Settings()
        self.faults = FaultInjector()
        self.monitor = InvariantMonitor()
        self.clock: Clock = system_clock
        self.resources: dict[str, Resource] = {}
        self.events: list[dict[str, Any]] = []
        self._serial = 0
        self.training_plans: dict[str, dict[str, Any]] = {}  # by name (rebalancer_tools.emulator.cluster_state)
        # What each quota's config asks for, by quota id, with the config it was read from: a body is replaced on
        # every change, never edited in place, so the same config object means the same amounts.
        self._asks: dict[str, tuple[dict[str, Any], dict[capacity.Key, float]]] = {}
        # What the quotas that hold ask for, per cluster: every change to a quota's body, status or presence ends
        # in _recount (through _begin, settle, describe or external_edit).
        self.allocations = Allocations()

    # ---- ids and lookups -------------------------------------------------------------------------------------

    @property
    def account_id(self) -> str:
        return str(self.backend.account_id)

    @property
    def region(self) -> str:
        return str(self.backend.region_name)

    def _arn(self, kind: Kind, resource_id: str) -> str:
        return f"arn:{self.backend.partition}:sagemaker:{self.region}:{self.account_id}:{kind.value}/{resource_id}"

    def _new_id(self, kind: Kind) -> str:
        """12 lowercase hex characters, deterministic per backend: the same calls give the same ids."""
        self._serial += 1
        seed = f"{self.account_id}:{self.region}:{kind.value}:{self._serial}"
        return hashlib.sha256(seed.encode()).hexdigest()[:12]

    def cluster(self, name_or_arn: str) -> Any | None:
        for c in self.backend.clusters.values():
            if name_or_arn in (c.arn, c.cluster_name):
                return c
        return None

    def get(self, kind: Kind, resource_id: str) -> Resource:
        r = self.resources.get(resource_id)
        if r is None or r.kind is not kind:
            raise ResourceNotFound(f"{_LABEL[kind]} {resource_id} not found.")
        return r

    def by_name(self, kind: Kind, name: str, cluster_arn: str | None = None) -> Resource:
        for r in self.resources.values():
            if r.kind is kind and r.name == name and r.live and cluster_arn in (None, r.cluster_arn):
                return r
        raise ResourceNotFound(f"{_LABEL[kind]} named {name} not found.")

    def target_of(self, params: dict[str, Any]) -> tuple[str | None, str | None]:
        """(team, name) of the quota or config a request is about, for fault matching."""
        rid = params.get("ComputeQuotaId") or params.get("ClusterSchedulerConfigId")
        r = self.resources.get(rid) if isinstance(rid, str) else None
        if r is not None:
            return r.team, r.name
        target = params.get("ComputeQuotaTarget")
        team = target.get("TeamName") if isinstance(target, dict) else None
        name = params.get("Name")
        return team, name if isinstance(name, str) else None

    def emit(self, detail_type: str, detail: dict[str, Any]) -> dict[str, Any]:
        """Record an EventBridge-shaped event (see events.py); returns it."""
        with self.lock:
            time = _aware(self.clock()).strftime("%Y-%m-%dT%H:%M:%SZ")
            event = events.envelope(detail_type, detail, account_id=self.account_id, region=self.region, time=time,
                                    serial=len(self.events) + 1)
            self.events.append(event)
            return event

    # ---- the invariant ---------------------------------------------------------------------------------------

    def cluster_capacity(self, cluster: Any) -> dict[capacity.Key, float]:
        return capacity.healthy_capacity((n.instance_type, n.status) for n in cluster.nodes.values())

    def cluster_allocated(self, cluster_arn: str) -> dict[capacity.Key, float]:
        """What the cluster's enabled quotas that hold ask for in all, per (type, resource) asked for at all."""
        with self.lock:
            return self.allocations.of(cluster_arn)

    def _recount(self, r: Resource) -> None:
        if r.kind is Kind.COMPUTE_QUOTA:
            counts = r.holds and r.enabled and self.resources.get(r.resource_id) is r
            self.allocations.count(r.resource_id, r.cluster_arn, self._asked(r) if counts else {})

    def _asked(self, r: Resource) -> dict[capacity.Key, float]:
        config = r.body.get("ComputeQuotaConfig") or {}
        cached = self._asks.get(r.resource_id)
        if cached is None or cached[0] is not config:
            # Zeros dropped: they never exceed a capacity, and most entries of a large cluster's quotas are zero.
            asked = {key: amount for key, amount in capacity.quota_amounts([config]).items() if amount}
            cached = self._asks[r.resource_id] = (config, asked)
        return cached[1]

    def check_invariant(self, operation: str, cluster_arn: str, target: str | None,
                        before: dict[capacity.Key, float] | None = None) -> InvariantRecord | None:
        """`before`: what the cluster's quotas asked for before the write (None: not a quota write)."""
        cluster = self.cluster(cluster_arn)
        if cluster is None:
            return None
        return self.monitor.record(operation, cluster_arn, target, self.cluster_allocated(cluster_arn),
                                   self.cluster_capacity(cluster), before)

    # ---- semantic checks -------------------------------------------------------------------------------------

    def _require_cluster(self, cluster_arn: str) -> Any:
        cluster = self.cluster(cluster_arn)
        if cluster is None or cluster.arn != cluster_arn:
            raise ValidationError(f"Cluster {cluster_arn} does not exist.")
        return cluster

    def _check_quota_config(self, config: dict[str, Any], cluster: Any) -> None:
        types = {g["InstanceType"] for g in cluster.instance_groups}
        seen: set[tuple[str, str | None]] = set()
        for i, entry in enumerate(config.get("ComputeQuotaResources") or (), start=1):
            where = f"ComputeQuotaResources[{i}]"
            t = entry["InstanceType"]
            if t not in types:
                raise ValidationError(f"{where}: instance type {t} is not in cluster {cluster.cluster_name} "
                                      f"(its types: {', '.join(sorted(types))}).")
            # An entry holds one AcceleratorPartition (a structure, not a list): whole GPUs and each MIG profile of
            # a type can only be given as entries of their own. What cannot mean anything is the same type and
            # profile twice.
            profile = (entry.get("AcceleratorPartition") or {}).get("Type")
            if (t, profile) in seen:
                what = f"instance type {t} with partition {profile}" if profile else f"instance type {t}"
                raise ValidationError(f"{where}: {what} appears more than once.")
            seen.add((t, profile))
            granular = [k for k in ("Accelerators", "VCpu", "MemoryInGiB", "AcceleratorPartition")
                        if entry.get(k) is not None]
            if entry.get("Count") is not None and granular:
                raise ValidationError(f"{where}: Count cannot be combined with {', '.join(granular)}.")
            if entry.get("Count") is None and not granular:
                raise ValidationError(f"{where}: give Count, or Accelerators / VCpu / MemoryInGiB.")
            try:
                s = spec(t)
            except UnknownInstanceType:
                continue
            if (entry.get("Accelerators") or entry.get("AcceleratorPartition")) and not s.accelerators:
                raise ValidationError(f"{where}: instance type {t} has no accelerators.")
            partition = entry.get("AcceleratorPartition")
            if partition and partition["Type"] not in s.mig_profiles:
                raise ValidationError(f"{where}: accelerator partition {partition['Type']} is not available on "
                                      f"{t} (available: {', '.join(s.mig_profiles) or 'none'}).")
        sharing = config.get("ResourceSharingConfig") or {}
        limit = sharing.get("BorrowLimit")
        lo, hi = DOCUMENTED_BORROW_LIMIT
        if limit is not None and not lo <= limit <= hi:
            raise ValidationError(f"ResourceSharingConfig.BorrowLimit: {limit} is outside {lo}-{hi} (percent of idle "
                                  "compute the team may borrow).")
        for i, entry in enumerate(sharing.get("AbsoluteBorrowLimits") or (), start=1):
            if entry["InstanceType"] not in types:
                raise ValidationError(f"ResourceSharingConfig.AbsoluteBorrowLimits[{i}]: instance type "
                                      f"{entry['InstanceType']} is not in cluster {cluster.cluster_name}.")

    def _check_unique(self, kind: Kind, cluster_arn: str, name: str, team: str | None, skip: str | None) -> None:
        for r in self.resources.values():
            if r.kind is not kind or not r.live or r.cluster_arn != cluster_arn or r.resource_id == skip:
                continue
            if r.name == name:
                raise ConflictException(f"{_LABEL[kind]} named {name} already exists on cluster {cluster_arn}.")
            if kind is Kind.COMPUTE_QUOTA and team is not None and r.team == team:
                raise ConflictException(f"Team {team} already has compute quota {r.name} ({r.resource_id}) on "
                                        f"cluster {cluster_arn}; a team can have only one per cluster.")
            if kind is Kind.SCHEDULER_CONFIG:
                raise ConflictException(f"Cluster {cluster_arn} already has cluster scheduler config {r.name} "
                                        f"({r.resource_id}); a cluster can have only one.")

    def _check_body(self, kind: Kind, body: dict[str, Any], cluster: Any) -> None:
        if kind is Kind.COMPUTE_QUOTA:
            self._check_quota_config(body.get("ComputeQuotaConfig") or {}, cluster)
        else:
            names = [p["Name"] for p in (body.get("SchedulerConfig") or {}).get("PriorityClasses") or ()]
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise ValidationError(f"SchedulerConfig.PriorityClasses: duplicate names {', '.join(dupes)}.")

    # ---- life cycle ------------------------------------------------------------------------------------------

    def _begin(self, r: Resource, in_progress: str, operation: str, *,
               restore: dict[str, Any] | None = None) -> None:
        """Start a status transition; it settles at once when no Describe delay is configured. A `failed` fault
        rule makes it end in the rule's failure status instead: an UpdateFailed restores `restore` (the previous
        body); an UpdateRollbackFailed keeps the new one (partly applied); a failed delete leaves the resource."""
        reads = self.settings.transition_reads
        slow = self.faults.take(frozenset({FaultKind.SLOW}), operation, team=r.team, name=r.name)
        if slow is not None:
            reads += slow.extra_reads
        fail = self.faults.take(FAILING, operation, team=r.team, name=r.name)
        final = SETTLES_TO[in_progress] if fail is None else fail.failure_status(operation) or \
            f"{_VERB[in_progress]}Failed"
        r.status = in_progress
        r.failure_reason = None
        r.pending = Pending(final, reads, fail.reason if fail else None,
                            restore if final == "UpdateFailed" else None)
        r.record_history()
        if reads == 0:
            r.settle()
        self._settled(r)

    def settle(self, r: Resource) -> None:
        r.settle()
        self._settled(r)

    def _settled(self, r: Resource) -> None:
        """After a status change: a resource that reached Deleted is gone; a quota is counted as it now stands."""
        if r.status == "Deleted":
            self.resources.pop(r.resource_id, None)
        self._recount(r)

    def settle_all(self) -> None:
        with self.lock:
            for r in list(self.resources.values()):
                self.settle(r)

    def create(self, kind: Kind, params: dict[str, Any], operation: str) -> Resource:
        with self.lock:
            cluster = self._require_cluster(params["ClusterArn"])
            body = {k: copy.deepcopy(params[k]) for k in _BODY_KEYS[kind] if params.get(k) is not None}
            if kind is Kind.COMPUTE_QUOTA:
                body.setdefault("ActivationState", "Enabled")
            self._check_body(kind, body, cluster)
            team = (body.get("ComputeQuotaTarget") or {}).get("TeamName")
            self._check_unique(kind, cluster.arn, params["Name"], team, None)
            rid = self._new_id(kind)
            asked = self.cluster_allocated(cluster.arn) if kind is Kind.COMPUTE_QUOTA else None
            now = self.clock()
            r = Resource(kind, rid, self._arn(kind, rid), params["Name"], cluster.arn, body,
                         params.get("Description"), now, now, tags=copy.deepcopy(params.get("Tags") or []))
            self.resources[rid] = r
            self._begin(r, "Creating", operation)
            if kind is Kind.COMPUTE_QUOTA:
                self.check_invariant(operation, cluster.arn, r.name, asked)
            return r

    def by_arn(self, arn: str) -> Resource | None:
        """The live resource with this ARN (tags are read and written on ARNs)."""
        with self.lock:
            return next((r for r in self.resources.values() if r.arn == arn), None)

    def describe(self, kind: Kind, resource_id: str, version: int | None) -> dict[str, Any]:
        with self.lock:
            r = self.get(kind, resource_id)
            if version is not None and version != r.version:
                if version not in r.history:
                    raise ResourceNotFound(f"{_LABEL[kind]} {resource_id} has no version {version} "
                                           f"(current version: {r.version}).")
                return copy.deepcopy(r.history[version])
            r.on_describe()
            self._settled(r)
            if r.status == "Deleted":
                raise ResourceNotFound(f"{_LABEL[kind]} {resource_id} not found.")
            return r.describe()

    def update(self, kind: Kind, params: dict[str, Any], operation: str) -> Resource:
        with self.lock:
            rid = params["ComputeQuotaId" if kind is Kind.COMPUTE_QUOTA else "ClusterSchedulerConfigId"]
            r = self.get(kind, rid)
            if not r.live:
                raise ResourceNotFound(f"{_LABEL[kind]} {rid} is being deleted.")
            edit = self.faults.take(frozenset({FaultKind.EXTERNAL_EDIT}), operation, team=r.team, name=r.name)
            if edit is not None:
                self.external_edit(r, edit.edit)
            if params["TargetVersion"] != r.version:
                raise ConflictException(f"{_LABEL[kind]} {rid} is at version {r.version}, not TargetVersion "
                                        f"{params['TargetVersion']}: it changed since it was read.")
            cluster = self._require_cluster(r.cluster_arn)
            if kind is Kind.COMPUTE_QUOTA:
                _check_create_only(r, params)
            body = copy.deepcopy(r.body)
            body.update({k: copy.deepcopy(params[k]) for k in _BODY_KEYS[kind] if params.get(k) is not None})
            self._check_body(kind, body, cluster)
            self._check_unique(kind, r.cluster_arn, r.name, (body.get("ComputeQuotaTarget") or {}).get("TeamName"),
                               r.resource_id)
            before = copy.deepcopy(r.body)
            asked = self.cluster_allocated(r.cluster_arn) if kind is Kind.COMPUTE_QUOTA else None
            r.body = body
            if params.get("Description") is not None:
                r.description = params["Description"]
            r.version += 1
            r.modified = self.clock()
            self._begin(r, "Updating", operation, restore=before)
            if kind is Kind.COMPUTE_QUOTA:
                self.check_invariant(operation, r.cluster_arn, r.name, asked)
            return r

    def delete(self, kind: Kind, resource_id: str, operation: str) -> None:
        with self.lock:
            r = self.get(kind, resource_id)
            if not r.live:
                raise ResourceNotFound(f"{_LABEL[kind]} {resource_id} is already being deleted.")
            r.modified = self.clock()
            asked = self.cluster_allocated(r.cluster_arn) if kind is Kind.COMPUTE_QUOTA else None
            self._begin(r, "Deleting", operation)
            if kind is Kind.COMPUTE_QUOTA:
                self.check_invariant(operation, r.cluster_arn, r.name, asked)

    def list(self, kind: Kind, params: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
        with self.lock:
            items = [r for r in self.resources.values() if r.kind is kind and r.status != "Deleted"]
            if params.get("ClusterArn"):
                items = [r for r in items if r.cluster_arn == params["ClusterArn"]]
            if params.get("Status"):
                items = [r for r in items if r.status == params["Status"]]
            if params.get("NameContains"):
                items = [r for r in items if params["NameContains"] in r.name]
            if params.get("CreatedAfter") is not None:
                after = _as_time(params["CreatedAfter"])
                items = [r for r in items if _aware(r.created) > after]
            if params.get("CreatedBefore") is not None:
                before = _as_time(params["CreatedBefore"])
                items = [r for r in items if _aware(r.created) < before]
            items = _sorted(items, params.get("SortBy") or "CreationTime", params.get("SortOrder") or "Descending")
            start = _decode_token(params.get("NextToken"), _fingerprint(params))
            size = params.get("MaxResults") or self.settings.default_max_results
            page = items[start:start + size]
            token = _encode_token(start + size, _fingerprint(params)) if start + size < len(items) else None
            return [r.summary() for r in page], token

    def external_edit(self, r: Resource, edit: dict[str, Any] | None = None) -> Resource:
        """Someone else (an admin in the console) updates the resource: its version goes up and its body changes.
        Without `edit`, a small change that can only lower what the quota asks for."""
        with self.lock:
            body = copy.deepcopy(r.body)
            asked = self.cluster_allocated(r.cluster_arn) if r.kind is Kind.COMPUTE_QUOTA else None
            if edit:
                body.update(copy.deepcopy(edit))
            elif r.kind is Kind.COMPUTE_QUOTA:
                _nudge_down(body)
            else:
                sc = body.setdefault("SchedulerConfig", {})
                sc["FairShare"] = "Disabled" if sc.get("FairShare", "Enabled") == "Enabled" else "Enabled"
            r.pending = None
            r.body = body
            r.version += 1
            r.status = "Updated"
            r.failure_reason = None
            r.modified = self.clock()
            r.record_history()
            self._recount(r)
            if r.kind is Kind.COMPUTE_QUOTA:
                self.check_invariant("control:external-edit", r.cluster_arn, r.name, asked)
            return r


def _check_create_only(r: Resource, params: dict[str, Any]) -> None:
    """CloudFormation's AWS::SageMaker::ComputeQuota schema: ComputeQuotaTarget.TeamName is create-only (the team's
    namespace, hyperpod-ns-<team>, is made from it); an update may change the weight, not the team."""
    team = (params.get("ComputeQuotaTarget") or {}).get("TeamName")
    if team is not None and team != r.team:
        raise ValidationError(f"ComputeQuotaTarget.TeamName cannot be changed (compute quota {r.resource_id} is "
                              f"for team {r.team}, not {team}): create a quota for the other team.")


def governance(backend: Any) -> Governance:
    """The governance state of a moto SageMaker backend, created on first use."""
    g = backend.__dict__.get(_ATTR)
    if g is None:
        with _CREATE_LOCK:
            g = backend.__dict__.setdefault(_ATTR, Governance(backend))
    assert isinstance(g, Governance)
    return g


def _nudge_down(body: dict[str, Any]) -> None:
    config = body.setdefault("ComputeQuotaConfig", {})
    for entry in config.get("ComputeQuotaResources") or ():
        for key in ("Count", "Accelerators", "VCpu", "MemoryInGiB"):
            if entry.get(key):
                entry[key] -= 1
                return
    config["PreemptTeamTasks"] = "Never" if config.get("PreemptTeamTasks") == "LowerPriority" else "LowerPriority"


def _as_time(value: Any) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return _aware(value)
    if isinstance(value, int | float):
        return dt.datetime.fromtimestamp(value, dt.UTC)
    return _aware(dt.datetime.fromisoformat(str(value)))


def _sorted(items: Iterable[Resource], by: str, order: str) -> list[Resource]:
    keys: dict[str, Callable[[Resource], Any]] = {
        "Name": lambda r: r.name,
        "CreationTime": lambda r: _aware(r.created),
        "Status": lambda r: r.status,
        "ClusterArn": lambda r: r.cluster_arn,
    }
    key = keys[by]
    # Ties break on creation order then id, so pages never overlap or skip.
    ordered = sorted(items, key=lambda r: (_aware(r.created), r.resource_id))
    return sorted(ordered, key=key, reverse=order == "Descending")


def _fingerprint(params: dict[str, Any]) -> str:
    keep = {k: str(v) for k, v in sorted(params.items()) if k not in ("NextToken", "MaxResults")}
    return hashlib.sha256(json.dumps(keep).encode()).hexdigest()[:16]


def _encode_token(offset: int, fingerprint: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset, "f": fingerprint}).encode()).decode()


def _decode_token(token: str | None, fingerprint: str) -> int:
    if not token:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        offset = int(data["o"])
        same = data["f"] == fingerprint
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise ValidationError(f"Invalid pagination token {token!r}.") from None
    if not same:
        raise ValidationError("The pagination token does not belong to a request with these parameters.")
    return offset
