"""A loopback Kubernetes API server serving Kueue objects (v1beta1, v1beta2 or both), for tests and the local demo.

Serves GET on the list and get paths of ClusterQueues and Workloads (cluster-wide and per namespace), with
`limit`/`continue` pagination, an optional bearer-token check, and scripted status errors (403, 404, 500) per
resource. A Kueue API version the state does not serve answers 404, as a real API server does for a version its
CRDs do not list. Object builders shape ClusterQueues and Workloads the way Kueue v1beta1 returns them; served as
v1beta2 they carry that apiVersion and `spec.cohortName` (v1beta2's name for `spec.cohort`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlparse

from rebalancer.domain.snapshot import ESTIMATED_DURATION
from rebalancer_tools.fakes.loopback import LoopbackServer, QuietHandler

GROUP = "kueue.x-k8s.io"
GROUP_VERSION = f"{GROUP}/v1beta1"
PREFIX = f"/apis/{GROUP}/v1beta1"
KINDS = {"clusterqueues": "ClusterQueue", "workloads": "Workload", "resourceflavors": "ResourceFlavor",
         "localqueues": "LocalQueue", "nodes": "Node", "nodepools": "NodePool"}
CORE_PREFIX = "/api/v1"
KARPENTER_PREFIX = "/apis/karpenter.sh/v1"
BUILT_AT = "2026-11-30T00:00:00Z"  # the builders' conditions' time, when none is given
REASONS = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 429: "TooManyRequests", 500: "InternalError"}


@dataclass(slots=True)
class KubeState:
    """What the server serves. Mutate it from the test; the server reads it on every request."""

    objects: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {k: [] for k in KINDS})
    errors: dict[str, int] = field(default_factory=dict)  # plural → HTTP status to answer with
    token: str | None = None  # when set, requests must carry `Authorization: Bearer <token>`
    kueue_versions: tuple[str, ...] = ("v1beta1",)  # the Kueue API versions served
    seen_authorization: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, *objs: dict[str, Any]) -> None:
        with self.lock:
            for o in objs:
                plural = next(p for p, k in KINDS.items() if k == o["kind"])
                self.objects[plural].append(o)


def _status(code: int, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": REASONS.get(code, "Unknown"), "code": code}


def _as_version(obj: dict[str, Any], version: str | None) -> dict[str, Any]:
    """A Kueue object as `version` serves it (the builders make v1beta1)."""
    if version is None or not str(obj.get("apiVersion", "")).startswith(GROUP + "/"):
        return obj
    out: dict[str, Any] = json.loads(json.dumps(obj))
    out["apiVersion"] = f"{GROUP}/{version}"
    if version != "v1beta1" and "cohort" in out.get("spec", {}):
        out["spec"]["cohortName"] = out["spec"].pop("cohort")
    return out


def _page(items: list[dict[str, Any]], query: Mapping[str, list[str]], api_version: str, kind: str) -> dict[str, Any]:
    """One page of a list answer: `limit` items from the `continue` token (an offset here), and the next token
    while items remain."""
    start = int(query.get("continue", ["0"])[0] or 0)
    limit = int(query.get("limit", ["0"])[0] or 0)
    end = start + limit if limit else len(items)
    meta: dict[str, Any] = {"resourceVersion": "1000"}
    if end < len(items):
        meta["continue"] = str(end)
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "items": items[start:end]}


class _Handler(QuietHandler):
    def _send(self, code: int, body: Mapping[str, Any]) -> None:
        self.reply(code, json.dumps(body).encode(), {"Content-Type": "application/json"})

    def respond(self, method: str) -> None:
        if method != "GET":
            self._send(405, _status(405, f"{method} is not served"))
            return
        state: KubeState = getattr(self.server, "state")  # noqa: B009 (set by LoopbackServer)
        url = urlparse(self.path)
        query = parse_qs(url.query)
        auth = self.headers.get("Authorization", "")
        with state.lock:
            state.requests.append(self.path)
            state.seen_authorization.append(auth)
        if state.token is not None and auth != f"Bearer {state.token}":
            self._send(401, _status(401, "Unauthorized"))
            return
        core = url.path.startswith(CORE_PREFIX + "/")
        karpenter = url.path.startswith(KARPENTER_PREFIX + "/")
        version = next((v for v in state.kueue_versions if url.path.startswith(f"/apis/{GROUP}/{v}/")), None)
        prefix = CORE_PREFIX if core else KARPENTER_PREFIX if karpenter else f"/apis/{GROUP}/{version}"
        parts = url.path.removeprefix(prefix).strip("/").split("/")
        namespace = None
        if len(parts) >= 3 and parts[0] == "namespaces":
            namespace, parts = parts[1], parts[2:]
        known = ((core and parts[:1] == ["nodes"]) or (karpenter and parts[:1] == ["nodepools"])
                 or (version is not None and parts and parts[0] in KINDS and parts[0] not in ("nodes", "nodepools")))
        if not known:
            self._send(404, _status(404, f"the server could not find the requested resource ({url.path})"))
            return
        plural = parts[0]
        if plural in state.errors:
            code = state.errors[plural]
            user = "system:serviceaccount:rebalancer:collector"
            message = (f'{plural}.kueue.x-k8s.io is forbidden: User "{user}" cannot list resource "{plural}" in API '
                       f'group "kueue.x-k8s.io" at the cluster scope') if code == 403 else REASONS.get(code, "error")
            self._send(code, _status(code, message))
            return
        with state.lock:
            items = [_as_version(o, version) for o in state.objects[plural]
                     if namespace is None or o["metadata"].get("namespace") == namespace]
        items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        if len(parts) == 2:
            found = next((o for o in items if o["metadata"]["name"] == parts[1]), None)
            if found is None:
                self._send(404, _status(404, f'{plural}.kueue.x-k8s.io "{parts[1]}" not found'))
            else:
                self._send(200, found)
            return
        api_version = "v1" if core else "karpenter.sh/v1" if karpenter else f"{GROUP}/{version}"
        self._send(200, _page(items, query, api_version, KINDS[plural] + "List"))


@contextmanager
def serve(state: KubeState | None = None) -> Iterator[tuple[str, KubeState]]:
    """Run the fake API server on 127.0.0.1 (a free port) for the duration of the block: yields (url, state)."""
    st = state or KubeState()
    with LoopbackServer(_Handler, "kube-fake", state=st) as server:
        yield server.origin, st


# Builders, shaped as Kueue v1beta1 returns its objects.

def _quantities(amounts: Mapping[str, int | float | str]) -> list[dict[str, str]]:
    return [{"name": name, "total": str(q), "borrowed": "0"} for name, q in amounts.items()]


def cluster_queue(team: str, nominal: Mapping[str, Mapping[str, int | str]],
                  reserved: Mapping[str, Mapping[str, int | float | str]] | None = None,
                  pending_workloads: int = 0, admitted_workloads: int = 0,
                  usage_only: bool = False) -> dict[str, Any]:
    """`nominal[flavor][resource]`, `reserved[flavor][resource]` (defaults to nothing reserved)."""
    name = f"hyperpod-ns-{team}-clusterqueue"
    resources = sorted({r for per in nominal.values() for r in per})
    groups = [{"coveredResources": resources,
               "flavors": [{"name": flavor, "resources": [{"name": r, "nominalQuota": str(q),
                                                           "borrowingLimit": "0"} for r, q in per.items()]}
                           for flavor, per in nominal.items()]}]
    reserved = reserved or {}
    flavors = [{"name": flavor, "resources": _quantities(per)} for flavor, per in reserved.items()]
    status: dict[str, Any] = {
        "pendingWorkloads": pending_workloads, "reservingWorkloads": admitted_workloads,
        "admittedWorkloads": admitted_workloads, "flavorsUsage": flavors,
        "conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit new workloads",
                        "lastTransitionTime": "2026-11-30T00:00:00Z"}],
    }
    if not usage_only:
        status["flavorsReservation"] = flavors
    return {
        "apiVersion": GROUP_VERSION, "kind": "ClusterQueue",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "generation": 1,
                     "labels": {"sagemaker.amazonaws.com/quota-allocation": team}},
        "spec": {"cohort": "shared-pool", "namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO",
                 "resourceGroups": groups, "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue":
                                                          "LowerPriority", "borrowWithinCohort": {"policy": "Never"}},
                 "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "TryNextFlavor"}},
        "status": status,
    }


def node(name: str, instance_type: str, allocatable: Mapping[str, int | str], *, ready: bool = True,
         unschedulable: bool = False, health: str | None = None) -> dict[str, Any]:
    """A Node as the core v1 API returns it (labels as HyperPod sets them). `health`: HyperPod's
    `sagemaker.amazonaws.com/node-health-status` label (Schedulable, Unschedulable, UnschedulablePendingReplacement,
    UnschedulablePendingReboot); HyperPod names a node `hyperpod-<instance id>`."""
    labels = {"node.kubernetes.io/instance-type": instance_type, "sagemaker.amazonaws.com/compute-type": "hyperpod"}
    if health is not None:
        labels["sagemaker.amazonaws.com/node-health-status"] = health
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {"allocatable": {k: str(v) for k, v in allocatable.items()},
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                   "reason": "KubeletReady" if ready else "KubeletNotReady",
                                   "lastTransitionTime": "2026-11-30T00:00:00Z"}]},
    }


def node_pool(name: str, instance_types: list[str], limits: Mapping[str, int | str]) -> dict[str, Any]:
    """A Karpenter NodePool (karpenter.sh/v1) whose nodes are of `instance_types`, with `spec.limits`."""
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"limits": {k: str(v) for k, v in limits.items()},
                     "template": {"spec": {"requirements": [
                         {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": instance_types}]}}}}


def pod_set(count: int, requests: Mapping[str, int | str], instance_type: str | None = None,
            name: str = "main") -> dict[str, Any]:
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [
        {"name": "trainer", "image": "public.ecr.aws/example/train:latest",
         "resources": {"requests": {k: str(v) for k, v in requests.items()},
                       "limits": {k: str(v) for k, v in requests.items() if "/" in k}}}]}
    if instance_type:
        spec["nodeSelector"] = {"node.kubernetes.io/instance-type": instance_type}
    return {"name": name, "count": count, "template": {"metadata": {}, "spec": spec}}


def workload(team: str, name: str, pod_sets: list[dict[str, Any]], *, admitted_on: str | None = None,
             finished: bool = False, priority_class: str = "training-priority",
             created: str | None = None, estimated_duration: str | None = None,
             max_execution_s: int | None = None, admitted: str = BUILT_AT) -> dict[str, Any]:
    """`estimated_duration`: the run time it declares (a Go duration, Kueue's annotation); `max_execution_s`:
    its spec.maximumExecutionTimeSeconds; `admitted`: when Kueue admitted it (its QuotaReserved and Admitted
    conditions' lastTransitionTime), with `admitted_on`."""
    ns = f"hyperpod-ns-{team}"
    status: dict[str, Any] = {"conditions": []}
    if admitted_on:
        status["admission"] = {"clusterQueue": f"{ns}-clusterqueue", "podSetAssignments": [
            {"name": ps["name"], "count": ps["count"],
             "flavors": {r: admitted_on for c in ps["template"]["spec"]["containers"]
                         for r in c["resources"]["requests"]}} for ps in pod_sets]}
        status["conditions"] += [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "Quota reserved",
             "lastTransitionTime": admitted},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "Admitted",
             "lastTransitionTime": admitted}]
    else:
        status["conditions"].append(
            {"type": "QuotaReserved", "status": "False", "reason": "Pending",
             "message": f"couldn't assign flavors to pod set main: insufficient quota in {ns}-clusterqueue",
             "lastTransitionTime": "2026-11-30T00:00:00Z"})
    if finished:
        status["conditions"].append({"type": "Finished", "status": "True", "reason": "Succeeded",
                                     "message": "Job finished successfully",
                                     "lastTransitionTime": "2026-11-30T00:00:00Z"})
    return {
        "apiVersion": GROUP_VERSION, "kind": "Workload",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "resourceVersion": "1",
                     "labels": {"kueue.x-k8s.io/job-uid": f"job-{name}"},
                     **({"creationTimestamp": created} if created else {}),
                     **({"annotations": {ESTIMATED_DURATION: estimated_duration}} if estimated_duration else {})},
        "spec": {"active": True, "queueName": f"{ns}-localqueue", "priority": 100,
                 "priorityClassName": priority_class, "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
                 "podSets": pod_sets,
                 **({"maximumExecutionTimeSeconds": max_execution_s} if max_execution_s is not None else {})},
        "status": status,
    }
