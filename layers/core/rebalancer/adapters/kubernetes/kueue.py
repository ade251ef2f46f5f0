"""Demand per team from Kueue (v1beta2, or v1beta1 where the cluster does not serve v1beta2), read through the
`kubernetes` client. Kueue 0.15 added v1beta2 and 0.20 stopped serving v1beta1; the fields read here
(ClusterQueue `status.flavorsReservation` / `flavorsUsage`, `spec.resourceGroups`, Workload `spec.podSets`,
`status.admission`, `status.conditions`) are the same in both.

In a HyperPod cluster each team is namespace `hyperpod-ns-<team>` with ClusterQueue
`hyperpod-ns-<team>-clusterqueue`; ResourceFlavors are named after instance types. In use = the ClusterQueue's
`status.flavorsReservation` (what counts against the quota; `flavorsUsage` when a Kueue version does not report
reservations). Pending = the pod-set requests of the team's Workloads that hold no quota yet, placed on a flavor by
the pod template's instance-type node selector, or by the only flavor the ClusterQueue offers for that resource.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.utils import parse_quantity

from rebalancer.adapters.kubernetes.run_time import RunTime, run_time
from rebalancer.catalog import specs as catalog
from rebalancer.domain.names import team_of_cluster_queue, team_of_namespace
from rebalancer.domain.pools import pool_name
from rebalancer.domain.quotas import AMOUNT_RANGE
from rebalancer.domain.snapshot import NODE_HEALTH_LABEL, Demand, PendingWorkload, Resources, RunningWorkload
from rebalancer.errors import PermanentError, TransientError, UnknownInstanceType
from rebalancer.parsing.lookup import dig, list_of
from rebalancer.parsing.text import Lines, clean_text, cut_utf8, printable, short

GROUP = "kueue.x-k8s.io"
VERSIONS = ("v1beta2", "v1beta1")  # newest first; the next is tried when the API server answers 404
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
GIB = Decimal(2**30)

# Kubernetes resource name → (Resources field, divide by). NeuronCores are converted to devices per instance type.
ACCELERATOR_RESOURCES = ("nvidia.com/gpu", "aws.amazon.com/neurondevice", "aws.amazon.com/neuron")
NEURONCORE_RESOURCE = "aws.amazon.com/neuroncore"


# What one namespace can put in front of collect is bounded here: anyone who can write to a team's namespace can write
# its Workloads. Each Workload is read on its own and skipped whole, with one warning naming it, when it is malformed,
# so that a bad one neither stops the collect nor cancels the demand of the team's others; the text and the lists
# kept of a team are cut, so the snapshot's size depends on the cluster's size, never on what a tenant writes.
NAME_MAX = 253  # characters of an object's name: a Kubernetes name is a DNS subdomain
NAMESPACE_MAX = 63  # a namespace's name is a DNS label
POD_SETS_MAX = 8  # Kueue's Workload CRD: spec.podSets maxItems
CONTAINERS_MAX = 1000  # containers and init containers of one pod set (the API server's own bound is the object size)
COUNT_MAX = 2**31 - 1  # a pod set's count is an int32
# Of one resource, a workload asking for more than a quota can hold (the API's maximum, in accelerators, vCPUs, GiB
# or partitions) can never be admitted: an absurd request, not demand.
AMOUNT_MAX = Decimal(AMOUNT_RANGE[1])
TOPOLOGY_MAX = 317  # characters of a topology level: a label key (a 253-character prefix, "/", a 63-character name)
LISTED_PER_POOL = 200  # pending workloads listed per team and instance type: its first in admission order
LISTED_TOTAL = 10_000  # over every team and type (each cut to the same count, the largest that fits)
TOPOLOGY_LISTED = 10  # per team, the pending workloads asking for a topology level that are named; the rest counted
WARNINGS_MAX = 50  # collect's warnings from Kueue, each once; the rest counted
WARNING_MAX_BYTES = 1024
SHOWN = 80  # characters of a name or value a warning shows
OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
NAMESPACE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class _Malformed(ValueError):
    """Why one object read from the cluster is skipped: one line naming the field and the value. Never leaves this
    module: `demand_of` makes it a warning."""


def _shown(value: Any) -> str:
    """A value in a warning: its repr, cut (control characters escaped)."""
    return short(value, SHOWN)


def _named(value: Any) -> str:
    """An object's name in a warning: as written when text, cut, with unsafe characters escaped."""
    return printable(cut_utf8(value, SHOWN)) if isinstance(value, str) else _shown(value)


def _object(value: Any, field: str) -> dict[str, Any]:
    """`value` as a JSON object ({} when absent); _Malformed when it is something else."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Malformed(f"{field} is not an object: {_shown(value)}")
    return value


def _array(value: Any, field: str, limit: int) -> list[Any]:
    """`value` as a JSON array ([] when absent) of at most `limit` entries; _Malformed otherwise."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Malformed(f"{field} is not an array: {_shown(value)}")
    if len(value) > limit:
        raise _Malformed(f"{field} has {len(value)} entries, more than {limit}")
    return value


def _quantity(value: Any, field: str) -> Decimal:
    """A Kubernetes quantity ("8", "500m", "1Ti"), finite and not negative; _Malformed otherwise."""
    try:
        q = Decimal(parse_quantity(value)) if isinstance(value, str | int) and not isinstance(value, bool) else None
    except (ValueError, TypeError, ArithmeticError):
        q = None
    if q is None or not q.is_finite():
        raise _Malformed(f"{field} is not a quantity: {_shown(value)}")
    if q < 0:
        raise _Malformed(f"{field} is negative: {_shown(value)}")
    return q


def _name(meta: dict[str, Any]) -> str:
    """metadata.name, a Kubernetes object name (a DNS subdomain: what the API server admits, so safe to show)."""
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise _Malformed(f"metadata.name is not a name: {_shown(name)}")
    if len(name) > NAME_MAX:
        raise _Malformed(f"metadata.name is longer than {NAME_MAX} characters ({len(name)})")
    if not OBJECT_NAME.fullmatch(name):
        raise _Malformed(f"metadata.name is not a Kubernetes object name: {_shown(name)}")
    return name


def _within(resource: str, total: Decimal, field: str) -> Decimal:
    """`total` of a resource when a quota could hold it (memory in GiB); _Malformed when it is absurd."""
    amount = total / GIB if resource == "memory" else total
    if amount > AMOUNT_MAX:
        unit = " GiB" if resource == "memory" else ""
        raise _Malformed(f"{field} asks for {float(amount):.6g}{unit} of {resource}, more than any quota can hold "
                        f"({AMOUNT_MAX:,}{unit})")
    return total


@dataclass(slots=True)
class _Amounts:
    """Mutable accumulator of one team's amounts on one pool."""

    values: dict[str, Decimal] = field(default_factory=lambda: defaultdict(Decimal))

    def add(self, resource: str, amount: Decimal) -> None:
        self.values[resource] += amount

    def freeze(self) -> Resources:
        return Resources(**{k: float(v) for k, v in self.values.items() if v})


@dataclass(frozen=True, slots=True)
class KueueDemand:
    demand: dict[str, dict[str, Demand]]
    teams: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    api_version: str | None = None  # the Kueue API version read (e.g. kueue.x-k8s.io/v1beta2)
    topology: dict[str, tuple[str, ...]] = field(default_factory=dict)  # team → its pending topology requests
    workloads: tuple[PendingWorkload, ...] = ()  # each pending workload's size per instance type, as listed
    topology_unlisted: dict[str, int] = field(default_factory=dict)  # team → topology requests beyond those named
    skipped: int = 0  # malformed workloads and queue entries left out (each has its warning, up to WARNINGS_MAX)
    running: tuple[RunningWorkload, ...] = ()  # each admitted workload's size per instance type, and since when


# Topology-aware scheduling (task-governance add-on >= 1.2.2): a pod set asks for one topology domain (a block, a
# rack) in its Workload's topologyRequest, or through the pod template's annotations.
TOPOLOGY_ANNOTATIONS = ("kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology",
                        "kueue.x-k8s.io/podset-slice-required-topology")


def topology_asked(pod_set: dict[str, Any]) -> str | None:
    """The topology level a pod set asks for (required, else preferred), or None: cleaned and cut to a label key's
    length. Of the pod template's annotations only these keys are read."""
    for key in ("required", "podSetSliceRequiredTopology", "preferred"):
        if value := dig(pod_set, "topologyRequest", key):
            return _level(key, value)
    for key in TOPOLOGY_ANNOTATIONS:
        if value := dig(pod_set, "template", "metadata", "annotations", key):
            return _level(key.rsplit("/", 1)[-1], value)
    return None


def _level(key: str, value: Any) -> str:
    return f"{key} {clean_text(value, TOPOLOGY_MAX) if isinstance(value, str) else _shown(value)}"


@dataclass(frozen=True, slots=True)
class PodSetRead:
    """One pod set of a pending workload, validated: the instance type it waits for (None: not said), its requests
    of the resources collect reads, count × per pod (Kubernetes units: cores, bytes, devices), its pods and the
    topology level it asks for."""

    flavor: str | None
    requests: dict[str, Decimal]
    pods: int
    topology: str | None


@dataclass(frozen=True, slots=True)
class WorkloadRead:
    """A Workload as collect reads it: its name, creation time and pod sets (and their names), and what it says of
    its run time."""

    name: str
    created: datetime | None
    pod_sets: tuple[PodSetRead, ...]
    pod_set_names: tuple[str, ...] = ()
    run_time: RunTime = field(default_factory=RunTime)


def read_workload(wl: dict[str, Any]) -> WorkloadRead:
    """A Workload's name, creation time and pod sets, every field collect reads checked; _Malformed (naming the field
    and the value) when one is not what Kueue's API allows or asks for more than any quota holds."""
    meta = _object(wl.get("metadata"), "metadata")
    name = _name(meta)
    spec = _object(wl.get("spec"), "spec")
    pod_sets, names = [], []
    totals: dict[str, Decimal] = defaultdict(Decimal)
    for i, raw in enumerate(_array(spec.get("podSets"), "spec.podSets", POD_SETS_MAX)):
        where = f"spec.podSets[{i}]"
        pod_set = _object(raw, where)
        read = PodSetRead(flavor=pod_set_instance_type(pod_set), requests=pod_set_requests(pod_set, where),
                          pods=_count(pod_set, where), topology=topology_asked(pod_set))
        for resource, q in read.requests.items():
            totals[resource] += q
        pod_sets.append(read)
        names.append(clean_text(pod_set.get("name"), NAME_MAX) if isinstance(pod_set.get("name"), str) else "main")
    for resource, total in totals.items():
        _within(resource, total, "spec.podSets")
    return WorkloadRead(name=name, created=_created(meta), pod_sets=tuple(pod_sets), pod_set_names=tuple(names),
                        run_time=run_time(meta, spec))


def read_admission(wl: dict[str, Any]) -> dict[str, tuple[dict[str, str], int]]:
    """An admitted Workload's status.admission.podSetAssignments: pod set name → (resource → the flavor it was
    admitted on, the count admitted); _Malformed when a field is not what Kueue's API writes."""
    status = _object(wl.get("status"), "status")
    admission = _object(status.get("admission"), "status.admission")
    out: dict[str, tuple[dict[str, str], int]] = {}
    for i, raw in enumerate(_array(admission.get("podSetAssignments"), "status.admission.podSetAssignments",
                                   POD_SETS_MAX)):
        where = f"status.admission.podSetAssignments[{i}]"
        assignment = _object(raw, where)
        flavors = _object(assignment.get("flavors"), f"{where}.flavors")
        if not all(isinstance(k, str) and isinstance(v, str) and len(v) <= NAME_MAX for k, v in flavors.items()):
            raise _Malformed(f"{where}.flavors is not a map of resource to flavor name")
        name = assignment.get("name")
        out[name if isinstance(name, str) else "main"] = (dict(flavors), _count(assignment, where))
    return out


def _accelerators(flavor: str, resource: str, quantity: Decimal) -> Decimal:
    """The accelerators `quantity` of `resource` is on an instance type (0 for another resource or type)."""
    try:
        spec = catalog.spec(flavor)
    except UnknownInstanceType:
        return Decimal(0)
    if resource in ACCELERATOR_RESOURCES:
        return quantity
    if resource == NEURONCORE_RESOURCE and spec.neuron_cores_per_device:
        return quantity / spec.neuron_cores_per_device
    return Decimal(0)


def admitted_at(obj: dict[str, Any]) -> tuple[datetime | None, str | None]:
    """When an admitted Workload was admitted: its `Admitted` condition's lastTransitionTime (else, where Kueue
    has not set that condition, its `QuotaReserved` one's), and None with a problem naming the field and the value
    when that is not an RFC 3339 time with a zone. Absent: (None, None). What the forecast orders Kueue's reclaim by
    (the newest admitted first) and what `reclaim.max_age_minutes` bounds: a time left out makes the workload
    unknown to both, never young."""
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for kind in ("Admitted", "QuotaReserved"):
        for c in conditions if isinstance(conditions, list) else ():
            if isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True":
                raw = c.get("lastTransitionTime")
                at = _created({"creationTimestamp": raw})
                if at is None:
                    return None, (f"status.conditions[type={kind}].lastTransitionTime {_shown(raw)} is not a time "
                                  "(RFC 3339, such as 2026-11-30T08:30:00Z): left out, how long it has run is "
                                  "not known")
                return at, None
    return None, None


INT32 = (-(2**31), 2**31 - 1)


def priority_of(obj: dict[str, Any]) -> tuple[int | None, str | None]:
    """A Workload's spec.priority (Kueue reclaims the lowest first, then the newest admitted), and None with a
    problem naming the field and the value when it is not an int32. Absent: (None, None)."""
    spec = obj.get("spec")
    raw = spec.get("priority") if isinstance(spec, dict) else None
    if raw is None:
        return None, None
    if isinstance(raw, int) and not isinstance(raw, bool) and INT32[0] <= raw <= INT32[1]:
        return raw, None
    return None, (f"spec.priority {_shown(raw)} is not a whole number from {INT32[0]} to {INT32[1]}: left out, "
                  "the reclaim leaves its team's work there to Kueue")


def _count(pod_set: dict[str, Any], where: str) -> int:
    count = pod_set.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= COUNT_MAX:
        raise _Malformed(f"{where}.count is not a count of pods (0 to {COUNT_MAX}): {_shown(count)}")
    return count


@dataclass(slots=True)
class _Gang:
    """One pending workload's accelerators on one instance type, summed over its pod sets."""

    accelerators: Decimal = Decimal(0)
    pods: int = 0
    topology: str | None = None

    def add(self, accelerators: Decimal, pods: int, topology: str | None) -> None:
        self.accelerators += accelerators
        self.pods += pods
        self.topology = self.topology or topology


@dataclass(slots=True)
class _Listed:
    """A team's pending workloads on one pool: the first `limit` in admission order (Kueue's BestEffortFIFO), kept
    in the order listed; how many there were."""

    entries: list[tuple[tuple[datetime, str, str], int, PendingWorkload]] = field(default_factory=list)
    seen: int = 0

    def add(self, seq: int, w: PendingWorkload, limit: int) -> None:
        self.seen += 1
        self.entries.append((w.admission_order, seq, w))
        if len(self.entries) >= 2 * limit:  # amortised: sort and cut once per `limit` additions
            self.cut(limit)

    def cut(self, limit: int) -> None:
        if len(self.entries) > limit:
            self.entries = sorted(self.entries, key=lambda e: (e[0], e[1]))[:limit]


def _by_pool() -> dict[str, dict[str, _Amounts]]:
    return defaultdict(lambda: defaultdict(_Amounts))


@dataclass(slots=True)
class _Accumulator:
    """What a read of Kueue gathers, team by team and pool by pool, before it becomes a KueueDemand."""

    in_use: dict[str, dict[str, _Amounts]] = field(default_factory=_by_pool)
    pending: dict[str, dict[str, _Amounts]] = field(default_factory=_by_pool)
    topology: dict[str, dict[str, None]] = field(default_factory=lambda: defaultdict(dict))
    topology_unlisted: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    # team → pool → oldest pending creation
    oldest: dict[str, dict[str, datetime]] = field(default_factory=lambda: defaultdict(dict))
    warnings: Lines = field(default_factory=lambda: Lines(WARNINGS_MAX, WARNING_MAX_BYTES))
    # (team, pool) → its pending workloads
    listed: dict[tuple[str, str], _Listed] = field(default_factory=lambda: defaultdict(_Listed))
    # (team, pool) → admitted
    running: dict[tuple[str, str], list[RunningWorkload]] = field(default_factory=lambda: defaultdict(list))
    seq: int = 0
    skipped: int = 0

    def skip(self, what: str, error: _Malformed) -> None:
        self.skipped += 1
        self.warnings.add(f"{what}: skipped, {error}")

    def add_pending(self, team: str, namespace: str, wl: WorkloadRead, offered: dict[str, set[str]]) -> None:
        """A pending workload's requests, on the flavor each waits for; and its size on each instance type (its
        gang: Kueue admits it whole), as a PendingWorkload."""
        where = f"Workload {namespace}/{wl.name}"
        sizes: dict[str, _Gang] = {}
        levels: dict[str, None] = {}
        for pod_set in wl.pod_sets:
            if pod_set.topology is not None:
                levels[f"{wl.name} ({pod_set.topology})"] = None
            for resource, quantity in pod_set.requests.items():
                flavor = pod_set.flavor
                if flavor is None and len(offered.get(resource, ())) == 1:
                    flavor = next(iter(offered[resource]))
                if flavor is None:
                    if resource in ACCELERATOR_RESOURCES or resource == NEURONCORE_RESOURCE:
                        self.warnings.add(f"{where}: cannot tell which instance type its {resource} request "
                                          f"waits for (no instance-type node selector, no single flavor)")
                    continue
                added = self.add(self.pending, team, flavor, resource, quantity, where, wl.created)
                if added:
                    sizes.setdefault(flavor, _Gang()).add(added, pod_set.pods, pod_set.topology)
        named = self.topology[team]
        for level in levels:
            if level in named:
                continue
            if len(named) < TOPOLOGY_LISTED:
                named[level] = None
            else:
                self.topology_unlisted[team] += 1
        for flavor, g in sorted(sizes.items()):
            self.seq += 1
            self.listed[(team, flavor)].add(self.seq, PendingWorkload(
                name=wl.name, team=team, pool=flavor, accelerators=float(g.accelerators), pods=g.pods,
                created=wl.created, topology=g.topology, declared_s=wl.run_time.declared,
                limit_s=wl.run_time.limit), LISTED_PER_POOL)

    def add_running(self, team: str, wl: WorkloadRead, admission: dict[str, tuple[dict[str, str], int]],
                    since: datetime | None, priority: int | None = None) -> None:
        """An admitted workload's accelerators on each flavor it was admitted on (its podSetAssignments: pod set →
        the flavor per resource and the count admitted), and since when it holds them. Its use is the
        ClusterQueue's already; this is only how long it has run (the estimated starts). The first LISTED_PER_POOL
        per team and instance type are kept."""
        sizes: dict[str, _Gang] = {}
        for name, pod_set in zip(wl.pod_set_names, wl.pod_sets, strict=True):
            flavors, count = admission.get(name, ({}, pod_set.pods))
            for resource, quantity in pod_set.requests.items():
                flavor = flavors.get(resource) or pod_set.flavor
                amount = _accelerators(flavor, resource, quantity) if flavor else Decimal(0)
                if amount and pod_set.pods:
                    sizes.setdefault(flavor or "", _Gang()).add(amount * count / pod_set.pods, count, None)
        for flavor, g in sorted(sizes.items()):
            kept = self.running[(team, flavor)]
            if len(kept) < LISTED_PER_POOL:
                kept.append(RunningWorkload(name=wl.name, team=team, pool=flavor, accelerators=float(g.accelerators),
                                            pods=g.pods, started=since, declared_s=wl.run_time.declared,
                                            limit_s=wl.run_time.limit, priority=priority))

    def running_workloads(self) -> tuple[RunningWorkload, ...]:
        """The admitted workloads kept, every team and pool cut to the same count when they are more than
        LISTED_TOTAL together."""
        limit = _fair_count([len(v) for v in self.running.values()], LISTED_TOTAL)
        return tuple(w for _, kept in sorted(self.running.items()) for w in kept[:limit])

    def add(self, into: dict[str, dict[str, _Amounts]], team: str, flavor: str, resource: str,
            quantity: Decimal, where: str, since: datetime | None = None) -> Decimal:
        """Add `quantity` of a Kubernetes resource on a flavor, in the snapshot's units; `since`: the creation time
        of the pending workload it belongs to (the pool's oldest is kept). Returns the accelerators it added."""
        try:
            spec = catalog.spec(flavor)
        except UnknownInstanceType:
            self.warnings.add(f"{where}: flavor {_shown(flavor)} is not a HyperPod instance type; ignored")
            return Decimal(0)
        profile = "mig-" + resource.removeprefix(MIG_RESOURCE_PREFIX) if resource.startswith(MIG_RESOURCE_PREFIX) \
            else None
        if profile is not None and profile not in spec.mig_profiles:
            self.warnings.add(f"{where}: {_shown(resource)} is not a MIG profile of {flavor}; ignored")
            return Decimal(0)
        if since is not None:
            pool = pool_name(flavor, profile) if profile else flavor
            oldest = self.oldest[team]
            oldest[pool] = min(since, oldest.get(pool, since))
        if resource in ACCELERATOR_RESOURCES:
            into[team][flavor].add("accelerators", quantity)
            return quantity
        if resource == NEURONCORE_RESOURCE and spec.neuron_cores_per_device:
            into[team][flavor].add("accelerators", quantity / spec.neuron_cores_per_device)
            return quantity / spec.neuron_cores_per_device
        if resource == "cpu":
            into[team][flavor].add("vcpu", quantity)
        elif resource == "memory":
            into[team][flavor].add("memory_gib", quantity / GIB)
        elif profile is not None:
            into[team][pool_name(flavor, profile)].add("partitions", quantity)
        return Decimal(0)

    def workloads(self) -> tuple[PendingWorkload, ...]:
        """Each team's pending workloads per pool, the first LISTED_PER_POOL in admission order, all of them cut to
        the same count when they are more than LISTED_TOTAL together; in the order listed. A warning per pool cut."""
        for listed in self.listed.values():
            listed.cut(LISTED_PER_POOL)
        limit = _fair_count([len(x.entries) for x in self.listed.values()], LISTED_TOTAL)
        kept: list[tuple[int, PendingWorkload]] = []
        for (team, pool), listed in sorted(self.listed.items()):
            listed.cut(limit)
            kept += [(seq, w) for _, seq, w in listed.entries]
            if listed.seen > len(listed.entries):
                self.warnings.add(f"{team}: {listed.seen} workloads pending on {pool}; the first "
                                  f"{len(listed.entries)} in admission order are listed (gang sizes, `why`), "
                                  "demand counts them all")
        return tuple(w for _, w in sorted(kept, key=lambda e: e[0]))

    def result(self) -> dict[str, dict[str, Demand]]:
        out: dict[str, dict[str, Demand]] = {}
        for team in sorted(set(self.in_use) | set(self.pending)):
            pools = sorted(set(self.in_use[team]) | set(self.pending[team]))
            out[team] = {p: Demand(in_use=self.in_use[team][p].freeze(), pending=self.pending[team][p].freeze(),
                                   oldest_pending=self.oldest[team].get(p)) for p in pools}
        return out


def _fair_count(sizes: list[int], total: int) -> int:
    """The largest k with Σ min(size, k) ≤ total: every list cut to k entries fits in `total` together, and no
    list is cut more than another."""
    if sum(sizes) <= total:
        return max(sizes, default=0)
    low, high = 0, max(sizes)
    while low < high:
        mid = (low + high + 1) // 2
        if sum(min(n, mid) for n in sizes) <= total:
            low = mid
        else:
            high = mid - 1
    return low


def _created(meta: dict[str, Any]) -> datetime | None:
    """A workload's metadata.creationTimestamp (RFC 3339, UTC `Z`), or None when absent or unreadable."""
    raw = meta.get("creationTimestamp")
    if not isinstance(raw, str) or len(raw) > 64:
        return None
    try:
        at = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


def _condition(obj: dict[str, Any], kind: str) -> bool:
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    return any(isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True"
               for c in (conditions if isinstance(conditions, list) else ()))


def is_pending(workload: dict[str, Any]) -> bool:
    """Waiting for quota: active, not finished, holding no quota reservation."""
    spec, status = workload.get("spec"), workload.get("status")
    if isinstance(spec, dict) and spec.get("active") is False:
        return False
    if _condition(workload, "Finished") or _condition(workload, "QuotaReserved"):
        return False
    return not (isinstance(status, dict) and status.get("admission"))


def is_running(workload: dict[str, Any]) -> bool:
    """Admitted (holding its quota) and not finished."""
    spec, status = workload.get("spec"), workload.get("status")
    if (isinstance(spec, dict) and spec.get("active") is False) or _condition(workload, "Finished"):
        return False
    return isinstance(status, dict) and bool(status.get("admission"))


def _read_resource(resource: str) -> bool:
    """The resources collect reads of a request: accelerators, NeuronCores, CPU, memory and MIG partitions."""
    return (resource in ACCELERATOR_RESOURCES or resource in (NEURONCORE_RESOURCE, "cpu", "memory")
            or resource.startswith(MIG_RESOURCE_PREFIX))


def pod_set_requests(pod_set: dict[str, Any], where: str = "pod set") -> dict[str, Decimal]:
    """Total requests of a pod set: count × per-pod requests (containers summed; an init container counts when it
    asks for more than the containers together, as the scheduler does). Limits stand in for missing requests. Only
    the resources collect reads are parsed; _Malformed for a field that is not what the API allows."""
    template = _object(pod_set.get("template"), f"{where}.template")
    pod_spec = _object(template.get("spec"), f"{where}.template.spec")
    per_pod: dict[str, Decimal] = defaultdict(Decimal)
    for i, c in enumerate(_array(pod_spec.get("containers"), f"{where}.containers", CONTAINERS_MAX)):
        for name, q in _requests(c, f"{where}.containers[{i}]").items():
            per_pod[name] += q
    for i, c in enumerate(_array(pod_spec.get("initContainers"), f"{where}.initContainers", CONTAINERS_MAX)):
        for name, q in _requests(c, f"{where}.initContainers[{i}]").items():
            per_pod[name] = max(per_pod[name], q)
    count = Decimal(_count(pod_set, where))
    return {name: q * count for name, q in per_pod.items()}


def _requests(container: Any, where: str) -> dict[str, Decimal]:
    resources = _object(_object(container, where).get("resources"), f"{where}.resources")
    limits = _object(resources.get("limits"), f"{where}.resources.limits")
    requests = _object(resources.get("requests"), f"{where}.resources.requests")
    merged = {**limits, **requests}
    return {name: _quantity(q, f"{where} {name} request") for name, q in merged.items() if _read_resource(name)}


def pod_set_instance_type(pod_set: dict[str, Any]) -> str | None:
    template = pod_set.get("template")
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(pod_spec, dict):
        return None
    selector = pod_spec.get("nodeSelector")
    selector = selector if isinstance(selector, dict) else {}
    for label in INSTANCE_TYPE_LABELS:
        if isinstance(selector.get(label), str):
            return str(selector[label])
    terms = list_of(dig(pod_spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                         "nodeSelectorTerms"))
    values = {v for term in terms for expr in list_of(dig(term, "matchExpressions"))
              if dig(expr, "key") in INSTANCE_TYPE_LABELS and dig(expr, "operator") == "In"
              for v in list_of(dig(expr, "values")) if isinstance(v, str)}
    return values.pop() if len(values) == 1 else None


def flavors_offered(cluster_queue: dict[str, Any]) -> dict[str, set[str]]:
    """resource name → the flavors the ClusterQueue's resource groups offer for it."""
    offered: dict[str, set[str]] = defaultdict(set)
    for group in list_of(dig(cluster_queue, "spec", "resourceGroups")):
        for flavor in list_of(dig(group, "flavors")):
            for resource in list_of(dig(flavor, "resources")):
                name, offering = dig(resource, "name"), dig(flavor, "name")
                if isinstance(name, str) and isinstance(offering, str):
                    offered[name].add(offering)
    return offered


def cluster_queue_usage(cq: dict[str, Any]) -> list[tuple[str, str, Decimal]]:
    """(flavor, resource, total) of a ClusterQueue's `status.flavorsReservation` (else `flavorsUsage`), the
    resources collect reads; _Malformed when an entry is not what the API allows."""
    status = _object(cq.get("status"), "status")
    usage = _array(status.get("flavorsReservation") or status.get("flavorsUsage"), "status.flavorsReservation",
                   CONTAINERS_MAX)
    out = []
    for i, raw in enumerate(usage):
        flavor = _object(raw, f"status.flavorsReservation[{i}]")
        name = flavor.get("name")
        if not isinstance(name, str):
            raise _Malformed(f"status.flavorsReservation[{i}].name is not a name: {_shown(name)}")
        for j, r in enumerate(_array(flavor.get("resources"), f"status.flavorsReservation[{i}].resources",
                                     CONTAINERS_MAX)):
            r = _object(r, f"status.flavorsReservation[{i}].resources[{j}]")
            resource = r.get("name")
            if isinstance(resource, str) and _read_resource(resource):
                total = _quantity(r.get("total", 0), f"{name} {resource} total")
                out.append((name, resource, _within(resource, total, f"status.flavorsReservation[{i}]")))
    return out


class KueueReader:
    def __init__(self, api_client: k8s.ApiClient, page_size: int = 500, request_timeout: float = 30,
                 versions: tuple[str, ...] = VERSIONS):
        self.api = k8s.CustomObjectsApi(api_client)
        self.page_size = page_size
        self.request_timeout = request_timeout
        self.versions = versions
        self.version: str | None = None  # the first version the API server served; then used for every list

    def _page(self, plural: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.version is not None:
            page: dict[str, Any] = self.api.list_cluster_custom_object(GROUP, self.version, plural, **kwargs)
            return page
        for i, version in enumerate(self.versions):
            try:
                page = self.api.list_cluster_custom_object(GROUP, version, plural, **kwargs)
            except ApiException as e:
                if e.status == 404 and i + 1 < len(self.versions):
                    continue  # this Kueue does not serve that version (or is not installed): try the next
                if e.status == 404:
                    tried = ", ".join(f"{GROUP}/{v}" for v in self.versions)
                    raise PermanentError(f"Kubernetes list {plural}.{GROUP}: 404 Not Found (tried {tried}): is "
                                         f"Kueue installed (task governance enabled)? {_status_message(e)}") from e
                raise
            self.version = version
            return page
        raise PermanentError(f"Kubernetes list {plural}.{GROUP}: no Kueue API version to try")

    def _list(self, plural: str) -> Iterator[dict[str, Any]]:
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"limit": self.page_size, "_request_timeout": self.request_timeout}
            if token:
                kwargs["_continue"] = token
            try:
                page = self._page(plural, kwargs)
            except ApiException as e:
                raise _api_error(plural, e) from e
            except urllib3.exceptions.HTTPError as e:
                raise TransientError(f"Kubernetes list {plural}.{GROUP}: cannot reach the API server: {e}") from e
            yield from page.get("items", []) or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return

    def read(self) -> KueueDemand:
        demand = demand_of(self._list("clusterqueues"), self._list("workloads"))
        return replace(demand, api_version=f"{GROUP}/{self.version}" if self.version else None)


def demand_of(cluster_queues: Iterable[Any], workloads: Iterable[Any]) -> KueueDemand:
    """Demand per team from the ClusterQueues and Workloads as listed (streams: each object is read once and only
    what is kept of it stays in memory). A malformed object is skipped with a warning naming it."""
    acc = _Accumulator()
    queues = _read_cluster_queues(cluster_queues, acc)
    for wl in workloads:
        _read_workload(wl, acc, queues)
    workloads_kept = acc.workloads()
    return KueueDemand(demand=acc.result(), teams=tuple(sorted(queues)),
                       warnings=tuple(acc.warnings.lines("… and {n} more Kueue warnings like these")),
                       topology={t: tuple(v) for t, v in sorted(acc.topology.items()) if v},
                       workloads=workloads_kept,
                       topology_unlisted={t: n for t, n in sorted(acc.topology_unlisted.items()) if n},
                       skipped=acc.skipped, running=acc.running_workloads())


def _read_cluster_queues(cluster_queues: Iterable[Any], acc: _Accumulator) -> dict[str, dict[str, set[str]]]:
    """Each team's ClusterQueue into `acc` (what it has in use); the flavors each offers per resource, by team."""
    queues: dict[str, dict[str, set[str]]] = {}  # team → the flavors its ClusterQueue offers per resource
    for cq in cluster_queues:
        name = dig(cq, "metadata", "name")
        team = team_of_cluster_queue(name) if isinstance(name, str) else None
        if team is None:
            continue
        queues[team] = flavors_offered(cq)
        try:
            usage = cluster_queue_usage(cq)
        except _Malformed as e:  # its in-use amounts are unknown; its workloads are still read
            acc.skip(f"ClusterQueue {_named(name)}", e)
            continue
        for flavor, resource, total in usage:
            acc.add(acc.in_use, team, flavor, resource, total, f"ClusterQueue {_named(name)}")
    return queues


def _read_workload(wl: Any, acc: _Accumulator, queues: dict[str, dict[str, set[str]]]) -> None:
    """A team's pending or running Workload into `acc`; any other, or one outside a team's namespace, is left out."""
    namespace = dig(wl, "metadata", "namespace")
    team = team_of_namespace(namespace) if isinstance(namespace, str) else None
    if team is None:
        return
    try:
        pending = is_pending(wl)
        if not pending and not is_running(wl):
            return
        if len(namespace) > NAMESPACE_MAX or not NAMESPACE_NAME.fullmatch(namespace):
            raise _Malformed("metadata.namespace is not a Kubernetes namespace name")
        read = read_workload(wl)
        admission = {} if pending else read_admission(wl)
    except _Malformed as e:
        acc.skip(f"Workload {_named(namespace)}/{_named(dig(wl, 'metadata', 'name'))}", e)
        return
    for problem in read.run_time.problems:
        acc.warnings.add(f"Workload {_named(namespace)}/{_named(read.name)}: {problem}")
    if pending:
        acc.add_pending(team, namespace, read, queues.get(team, {}))
    else:
        since, unreadable = admitted_at(wl)
        priority, unread = priority_of(wl)
        for said in (unreadable, unread):
            if said is not None:
                acc.warnings.add(f"Workload {_named(namespace)}/{_named(read.name)}: {said}")
        acc.add_running(team, read, admission, since, priority)


class NodeReader:
    """Healthy MIG partitions per instance type and profile: the `nvidia.com/mig-<profile>` allocatable of Ready,
    schedulable nodes (the snapshot's `mig`). Only needed when a policy has MIG pools."""

    def __init__(self, api_client: k8s.ApiClient, page_size: int = 500, request_timeout: float = 30):
        self.api = k8s.CoreV1Api(api_client)
        self.page_size = page_size
        self.request_timeout = request_timeout

    def _nodes(self) -> Iterator[dict[str, Any]]:
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"limit": self.page_size, "_request_timeout": self.request_timeout,
                                      "_preload_content": False}
            if token:
                kwargs["_continue"] = token
            try:
                response = self.api.list_node(**kwargs)
            except ApiException as e:
                raise _api_error("nodes", e, group="") from e
            except urllib3.exceptions.HTTPError as e:
                raise TransientError(f"Kubernetes list nodes: cannot reach the API server: {e}") from e
            page = json.loads(response.data)
            yield from page.get("items", []) or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return

    def mig_capacity(self) -> tuple[dict[str, dict[str, int]], tuple[str, ...]]:
        mig, _, warnings = self.read()
        return mig, warnings

    def read(self) -> tuple[dict[str, dict[str, int]], dict[str, str], tuple[str, ...]]:
        """One pass over the nodes: MIG partitions, and HyperPod's node-health-status label by instance id (a
        HyperPod node is named `hyperpod-<instance id>`)."""
        out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        health: dict[str, str] = {}
        warnings: list[str] = []
        for node in self._nodes():
            labels = node.get("metadata", {}).get("labels", {}) or {}
            status = labels.get(NODE_HEALTH_LABEL)
            if status:
                health[str(node.get("metadata", {}).get("name", "")).removeprefix("hyperpod-")] = status
            instance_type = next((labels[k] for k in INSTANCE_TYPE_LABELS if k in labels), None)
            if instance_type is None or node.get("spec", {}).get("unschedulable") or not _condition(node, "Ready"):
                continue
            for resource, quantity in (node.get("status", {}).get("allocatable", {}) or {}).items():
                if not resource.startswith(MIG_RESOURCE_PREFIX):
                    continue
                profile = "mig-" + resource.removeprefix(MIG_RESOURCE_PREFIX)
                try:
                    known = profile in catalog.spec(instance_type).mig_profiles
                except UnknownInstanceType:
                    known = False
                if not known:
                    warnings.append(f"node {node['metadata'].get('name')}: {resource} on {instance_type} is not a "
                                    "MIG profile this tool knows; ignored")
                    continue
                out[instance_type][profile] += int(parse_quantity(quantity))
        return {t: dict(p) for t, p in sorted(out.items())}, health, tuple(warnings)


def _api_error(plural: str, e: ApiException, group: str = GROUP) -> Exception:
    what = f"Kubernetes list {plural}.{group}" if group else f"Kubernetes list {plural}"
    reason = _status_message(e)
    if e.status == 404:
        return PermanentError(f"{what}: 404 Not Found: is Kueue installed (task governance enabled)? {reason}")
    if e.status in (401, 403):
        return PermanentError(f"{what}: {e.status} {e.reason}: {reason} (the role needs list on clusterqueues and "
                              "workloads in kueue.x-k8s.io, and on nodes: an EKS access entry or RBAC binding)")
    if e.status in (429,) or (e.status or 0) >= 500:
        return TransientError(f"{what}: {e.status} {e.reason}: {reason}")
    return PermanentError(f"{what}: {e.status} {e.reason}: {reason}")


def _status_message(e: ApiException) -> str:
    try:
        return str(json.loads(e.body or "{}").get("message") or "").strip() or "(no message)"
    except ValueError:
        return (e.body or "(no message)").strip()[:200]
