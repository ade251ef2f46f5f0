"""Kueue taking back a ClusterQueue's nominal quota, for the fake Kubernetes API (rebalancer_tools.fakes.kube): given
the quotas as the compute quotas now hold them, each pending Workload that fits within its team's nominal quota is
admitted, on what is free or, when not enough is, on what Kueue preempts of the teams running above their nominal
quota (their most recently admitted workloads first, a team passed over once it is back within its quota). Written
apart from the controller's own model (rebalancer.forecast), so that an end-to-end test compares the preemptions a
plan names with ones made elsewhere. One priority, one pod set per workload, accelerators only; no borrowing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rebalancer.domain.names import TEAM_NAMESPACE_PREFIX
from rebalancer_tools.fakes.kube import KubeState


def _size(wl: dict[str, Any], resource: str) -> int:
    return sum(int(ps["count"]) * int(c["resources"]["requests"].get(resource, 0))
               for ps in wl["spec"]["podSets"] for c in ps["template"]["spec"]["containers"])


def _team(wl: dict[str, Any]) -> str:
    return str(wl["metadata"]["namespace"]).removeprefix(TEAM_NAMESPACE_PREFIX)


def _admitted_at(wl: dict[str, Any]) -> str:
    return next((str(c["lastTransitionTime"]) for c in wl["status"]["conditions"] if c["type"] == "Admitted"), "")


def _flavor(wl: dict[str, Any]) -> str | None:
    admission = wl["status"].get("admission")
    if not admission:
        return None
    return str(next(iter(admission["podSetAssignments"][0]["flavors"].values())))


def _wants(wl: dict[str, Any]) -> str | None:
    selector = wl["spec"]["podSets"][0]["template"]["spec"].get("nodeSelector", {})
    wanted = selector.get("node.kubernetes.io/instance-type")
    return None if wanted is None else str(wanted)


def _admit(wl: dict[str, Any], flavor: str, at: str) -> None:
    status = wl["status"]
    status["admission"] = {"clusterQueue": f"{wl['metadata']['namespace']}-clusterqueue", "podSetAssignments": [
        {"name": ps["name"], "count": ps["count"],
         "flavors": {r: flavor for c in ps["template"]["spec"]["containers"] for r in c["resources"]["requests"]}}
        for ps in wl["spec"]["podSets"]]}
    status["conditions"] = [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "Quota reserved",
         "lastTransitionTime": at},
        {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "Admitted", "lastTransitionTime": at}]


def _evict(wl: dict[str, Any], at: str, by: str) -> None:
    wl["status"].pop("admission", None)
    wl["status"]["conditions"] = [
        {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "Preempted: requeued",
         "lastTransitionTime": at},
        {"type": "Evicted", "status": "True", "reason": "Preempted",
         "message": f"Preempted to accommodate a workload ({by}) due to reclamation within the cohort",
         "lastTransitionTime": at}]


def reclaim(kube: KubeState, nominal: Mapping[str, Mapping[str, int]], capacity: Mapping[str, int], at: str,
            resource: str = "nvidia.com/gpu") -> list[str]:
    """One scheduling pass over every instance type in `capacity` (accelerators), with `nominal` (team → instance
    type → accelerators). Returns the workloads preempted (team/name), in the order Kueue took them."""
    preempted: list[str] = []
    with kube.lock:
        workloads = kube.objects["workloads"]
        for flavor, size in sorted(capacity.items()):
            quota = {team: int(pools.get(flavor, 0)) for team, pools in nominal.items()}
            running = [w for w in workloads if _flavor(w) == flavor]
            used: dict[str, int] = {}
            for w in running:
                used[_team(w)] = used.get(_team(w), 0) + _size(w, resource)
            pending = sorted((w for w in workloads if _flavor(w) is None and _wants(w) == flavor),
                             key=lambda w: (w["metadata"].get("creationTimestamp", ""), w["metadata"]["name"]))
            for w in pending:
                team, need = _team(w), _size(w, resource)
                if used.get(team, 0) + need > quota.get(team, 0):
                    continue
                free = size - sum(used.values())
                victims: list[dict[str, Any]] = []
                left = dict(used)
                for v in sorted((v for v in running if _team(v) != team),
                                key=lambda v: (_admitted_at(v), v["metadata"]["name"]), reverse=True):
                    if free >= need:
                        break
                    owner = _team(v)
                    if left.get(owner, 0) <= quota.get(owner, 0):
                        continue
                    victims.append(v)
                    left[owner] -= _size(v, resource)
                    free += _size(v, resource)
                if free < need:
                    continue
                by = f"{w['metadata']['namespace']}/{w['metadata']['name']}"
                for v in victims:
                    _evict(v, at, by)
                    running.remove(v)
                    preempted.append(f"{_team(v)}/{v['metadata']['name']}")
                _admit(w, flavor, at)
                running.append(w)
                used = left
                used[team] = used.get(team, 0) + need
    return preempted
