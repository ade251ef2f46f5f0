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
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.utils import parse_quantity

from rebalancer.catalog import specs as catalog
from rebalancer.domain.names import team_of_cluster_queue, team_of_namespace
from rebalancer.domain.pools import pool_name
from rebalancer.domain.snapshot import NODE_HEALTH_LABEL, Demand, PendingWorkload, Resources, RunningWorkload
from rebalancer.errors import PermanentError, TransientError, UnknownInstanceType

GROUP = "kueue.x-k8s.io"
VERSIONS = ("v1beta2", "v1beta1")  # newest first; the next is tried when the API server answers 404
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
GIB = Decimal(2**30)

# Kubernetes resource name → (Resources field, divide by). NeuronCores are converted to devices per instance type.
ACCELERATOR_RESOURCES = ("nvidia.com/gpu", "aws.amazon.com/neurondevice", "aws.amazon.com/neuron")
NEURONCORE_RESOURCE = "aws.amazon.com/neuroncore"


@dataclass
class _Amounts:
    """Mutable accumulator of one team's amounts on one pool."""

    values: dict[str, Decimal] = field(default_factory=lambda: defaultdict(Decimal))

    def add(self, resource: str, amount: Decimal) -> None:
        self.values[resource] += amount

    def freeze(self) -> Resources:
        return Resources(**{k: float(v) for k, v in self.values.items() if v})


@dataclass(frozen=True)
class KueueDemand:
    demand: dict[str, dict[str, Demand]]
    teams: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    api_version: str | None = None  # the Kueue API version read (e.g. kueue.x-k8s.io/v1beta2)
    topology: dict[str, tuple[str, ...]] = field(default_factory=dict)  # team → its pending topology requests
    workloads: tuple[PendingWorkload, ...] = ()  # each pending workload's size per instance type, as listed
    running: tuple[RunningWorkload, ...] = ()  # each admitted workload's size per instance type, and since when


# Topology-aware scheduling (task-governance add-on >= 1.2.2): a pod set asks for one topology domain (a block, a
# rack) in its Workload's topologyRequest, or through the pod template's annotations.
TOPOLOGY_ANNOTATIONS = ("kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology",
                        "kueue.x-k8s.io/podset-slice-required-topology")


def topology_asked(pod_set: dict[str, Any]) -> str | None:
    """The topology level a pod set asks for (required, else preferred), or None."""
    request = pod_set.get("topologyRequest") or {}
    annotations = ((pod_set.get("template") or {}).get("metadata") or {}).get("annotations") or {}
    for key in ("required", "podSetSliceRequiredTopology", "preferred"):
        if request.get(key):
            return f"{key} {request[key]}"
    for key in TOPOLOGY_ANNOTATIONS:
        if annotations.get(key):
            return f"{key.rsplit('/', 1)[-1]} {annotations[key]}"
    return None


@dataclass
class _Gang:
    """One pending workload's accelerators on one instance type, summed over its pod sets."""

    accelerators: Decimal = Decimal(0)
    pods: int = 0
    topology: str | None = None

    def add(self, accelerators: Decimal, pods: int, topology: str | None) -> None:
        self.accelerators += accelerators
        self.pods += pods
        self.topology = self.topology or topology


class _Accumulator:
    def __init__(self) -> None:
        self.in_use: dict[str, dict[str, _Amounts]] = defaultdict(lambda: defaultdict(_Amounts))
        self.pending: dict[str, dict[str, _Amounts]] = defaultdict(lambda: defaultdict(_Amounts))
        self.topology: dict[str, list[str]] = defaultdict(list)
        self.oldest: dict[str, dict[str, datetime]] = defaultdict(dict)  # team → pool → oldest pending creation
        self.warnings: list[str] = []
        self.workloads: list[PendingWorkload] = []
        self.running: list[RunningWorkload] = []

    def add_pending(self, team: str, wl: dict[str, Any], offered: dict[str, set[str]]) -> None:
        """A pending workload's requests, on the flavor each waits for; and its size on each instance type (its
        gang: Kueue admits it whole), as a PendingWorkload."""
        meta = wl.get("metadata", {})
        where = f"Workload {meta.get('namespace')}/{meta.get('name')}"
        since = _created(meta)
        sizes: dict[str, _Gang] = {}
        for pod_set in wl.get("spec", {}).get("podSets", []) or []:
            level = topology_asked(pod_set)
            if level is not None:
                self.topology[team].append(f"{meta.get('name')} ({level})")
            chosen = pod_set_instance_type(pod_set)
            for resource, quantity in pod_set_requests(pod_set).items():
                flavor = chosen
                if flavor is None and len(offered.get(resource, ())) == 1:
                    flavor = next(iter(offered[resource]))
                if flavor is None:
                    if resource in ACCELERATOR_RESOURCES or resource == NEURONCORE_RESOURCE:
                        self.warnings.append(f"{where}: cannot tell which instance type its {resource} request "
                                             f"waits for (no instance-type node selector, no single flavor)")
                    continue
                added = self.add(self.pending, team, flavor, resource, quantity, where, since)
                if added:
                    sizes.setdefault(flavor, _Gang()).add(added, int(pod_set.get("count", 1)), level)
        self.workloads += [PendingWorkload(name=str(meta.get("name", "")), team=team, pool=flavor,
                                           accelerators=float(g.accelerators), pods=g.pods, created=since,
                                           topology=g.topology)
                           for flavor, g in sorted(sizes.items())]

    def add_running(self, team: str, wl: dict[str, Any]) -> None:
        """An admitted workload's accelerators on each flavor it was admitted on (its podSetAssignments), and since
        when it holds them (its Admitted condition, else QuotaReserved). Its use is the ClusterQueue's already."""
        meta = wl.get("metadata", {})
        assigned = {a.get("name"): a for a in (wl.get("status", {}).get("admission") or {}).get("podSetAssignments")
                    or [] if isinstance(a, dict)}
        sizes: dict[str, _Gang] = {}
        for pod_set in wl.get("spec", {}).get("podSets", []) or []:
            assignment = assigned.get(pod_set.get("name"), {})
            flavors = assignment.get("flavors") or {}
            count = int(assignment.get("count", pod_set.get("count", 1)))
            for resource, quantity in pod_set_requests({**pod_set, "count": count}).items():
                flavor = str(flavors.get(resource) or pod_set_instance_type(pod_set) or "")
                amount = _accelerators(flavor, resource, quantity) if flavor else Decimal(0)
                if amount:
                    sizes.setdefault(flavor, _Gang()).add(amount, count, None)
        since = _since(wl, "Admitted") or _since(wl, "QuotaReserved")
        self.running += [RunningWorkload(name=str(meta.get("name", "")), team=team, pool=flavor,
                                         accelerators=float(g.accelerators), pods=g.pods, started=since)
                         for flavor, g in sorted(sizes.items())]

    def add(self, into: dict[str, dict[str, _Amounts]], team: str, flavor: str, resource: str,
            quantity: Decimal, where: str, since: datetime | None = None) -> Decimal:
        """Add `quantity` of a Kubernetes resource on a flavor, in the snapshot's units; `since`: the creation time
        of the pending workload it belongs to (the pool's oldest is kept). Returns the accelerators it added."""
        try:
            spec = catalog.spec(flavor)
        except UnknownInstanceType:
            self.warnings.append(f"{where}: flavor {flavor!r} is not a HyperPod instance type; ignored")
            return Decimal(0)
        if since is not None:
            pool = (pool_name(flavor, "mig-" + resource.removeprefix(MIG_RESOURCE_PREFIX))
                    if resource.startswith(MIG_RESOURCE_PREFIX) else flavor)
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
        elif resource.startswith(MIG_RESOURCE_PREFIX):
            profile = "mig-" + resource.removeprefix(MIG_RESOURCE_PREFIX)
            into[team][pool_name(flavor, profile)].add("partitions", quantity)
        return Decimal(0)

    def result(self) -> dict[str, dict[str, Demand]]:
        out: dict[str, dict[str, Demand]] = {}
        for team in sorted(set(self.in_use) | set(self.pending)):
            pools = sorted(set(self.in_use[team]) | set(self.pending[team]))
            out[team] = {p: Demand(in_use=self.in_use[team][p].freeze(), pending=self.pending[team][p].freeze(),
                                   oldest_pending=self.oldest[team].get(p)) for p in pools}
        return out


def _created(meta: dict[str, Any]) -> datetime | None:
    """A workload's metadata.creationTimestamp (RFC 3339, UTC `Z`), or None when absent or unreadable."""
    raw = meta.get("creationTimestamp")
    if not isinstance(raw, str):
        return None
    try:
        at = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


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


def _since(obj: dict[str, Any], kind: str) -> datetime | None:
    """When a condition that holds became true (its lastTransitionTime), or None."""
    for c in obj.get("status", {}).get("conditions", []) or []:
        if c.get("type") == kind and c.get("status") == "True":
            return _created({"creationTimestamp": c.get("lastTransitionTime")})
    return None


def is_running(workload: dict[str, Any]) -> bool:
    """Admitted (holding its quota) and not finished."""
    if workload.get("spec", {}).get("active") is False or _condition(workload, "Finished"):
        return False
    return bool(workload.get("status", {}).get("admission"))


def _condition(obj: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in obj.get("status", {}).get("conditions", []) or [])


def is_pending(workload: dict[str, Any]) -> bool:
    """Waiting for quota: active, not finished, holding no quota reservation."""
    if workload.get("spec", {}).get("active") is False:
        return False
    if _condition(workload, "Finished") or _condition(workload, "QuotaReserved"):
        return False
    return not workload.get("status", {}).get("admission")


def pod_set_requests(pod_set: dict[str, Any]) -> dict[str, Decimal]:
    """Total requests of a pod set: count × per-pod requests (containers summed; an init container counts when it
    asks for more than the containers together, as the scheduler does). Limits stand in for missing requests."""
    pod_spec = pod_set.get("template", {}).get("spec", {})
    per_pod: dict[str, Decimal] = defaultdict(Decimal)
    for c in pod_spec.get("containers", []) or []:
        for name, q in _requests(c).items():
            per_pod[name] += q
    for c in pod_spec.get("initContainers", []) or []:
        for name, q in _requests(c).items():
            per_pod[name] = max(per_pod[name], q)
    count = Decimal(int(pod_set.get("count", 1)))
    return {name: q * count for name, q in per_pod.items()}


def _requests(container: dict[str, Any]) -> dict[str, Decimal]:
    resources = container.get("resources", {}) or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name: Decimal(parse_quantity(q)) for name, q in merged.items()}


def pod_set_instance_type(pod_set: dict[str, Any]) -> str | None:
    pod_spec = pod_set.get("template", {}).get("spec", {})
    selector = pod_spec.get("nodeSelector") or {}
    for label in INSTANCE_TYPE_LABELS:
        if label in selector:
            return str(selector[label])
    terms = (pod_spec.get("affinity", {}).get("nodeAffinity", {})
             .get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", []))
    values = {v for term in terms for expr in term.get("matchExpressions", []) or []
              if expr.get("key") in INSTANCE_TYPE_LABELS and expr.get("operator") == "In"
              for v in expr.get("values", [])}
    return values.pop() if len(values) == 1 else None


def flavors_offered(cluster_queue: dict[str, Any]) -> dict[str, set[str]]:
    """resource name → the flavors the ClusterQueue's resource groups offer for it."""
    offered: dict[str, set[str]] = defaultdict(set)
    for group in cluster_queue.get("spec", {}).get("resourceGroups", []) or []:
        for flavor in group.get("flavors", []) or []:
            for resource in flavor.get("resources", []) or []:
                offered[resource["name"]].add(flavor["name"])
    return offered


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
        acc = _Accumulator()
        queues: dict[str, dict[str, Any]] = {}
        for cq in self._list("clusterqueues"):
            team = team_of_cluster_queue(cq.get("metadata", {}).get("name", ""))
            if team is None:
                continue
            queues[team] = cq
            status = cq.get("status", {}) or {}
            usage = status.get("flavorsReservation") or status.get("flavorsUsage") or []
            for flavor in usage:
                for r in flavor.get("resources", []) or []:
                    acc.add(acc.in_use, team, flavor["name"], r["name"], Decimal(parse_quantity(r.get("total", 0))),
                            f"ClusterQueue {cq['metadata']['name']}")
        for wl in self._list("workloads"):
            meta = wl.get("metadata", {})
            team = team_of_namespace(meta.get("namespace", ""))
            if team is not None and is_pending(wl):
                acc.add_pending(team, wl, flavors_offered(queues.get(team, {})))
            elif team is not None and is_running(wl):
                acc.add_running(team, wl)
        return KueueDemand(demand=acc.result(), teams=tuple(sorted(queues)),
                           warnings=tuple(dict.fromkeys(acc.warnings)),
                           api_version=f"{GROUP}/{self.version}" if self.version else None,
                           topology={t: tuple(dict.fromkeys(v)) for t, v in sorted(acc.topology.items())},
                           workloads=tuple(acc.workloads), running=tuple(acc.running))


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
