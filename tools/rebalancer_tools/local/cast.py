"""The demo's teams at work: their Kueue workloads (what the controller reads as demand) at each point of the story,
and the Container Insights utilization they publish (what an admin's dashboard and the report show).

Capacity: ml.p5.48xlarge ×4 (32 H100), ml.trn1.32xlarge ×2 (32 Trainium), ml.g5.12xlarge ×3 (12 A10G); quotas as
seeded by `rebalancer_tools.emulator.demo_cluster` (they add up exactly to that capacity).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from rebalancer.adapters.cloudwatch import METRICS, NAMESPACE
from rebalancer.domain.names import TEAM_NAMESPACE_PREFIX
from rebalancer_tools.emulator.demo_cluster import DEMO, G5, P5, TRN1
from rebalancer_tools.fakes import kube as kube_fake

# What the task-governance add-on's Kueue (0.19) serves: both versions, so the controller reads v1beta2 and its RBAC
# check passes, as on an up-to-date cluster (v1beta1 alone warns that Kueue 0.20 will drop it; tests cover that).
KUEUE_VERSIONS = ("v1beta1", "v1beta2")
GPU = "nvidia.com/gpu"
NEURON = "aws.amazon.com/neurondevice"
EKS_CLUSTER = "demo-eks"
TEAMS = tuple(t.name for t in DEMO.teams)

# team → (workload name, pods, resource per pod, instance type, running?)
Job = tuple[str, int, dict[str, int], str, bool]
STEADY: dict[str, list[Job]] = {
    "research": [("pretrain-7b", 1, {GPU: 8}, P5, True), ("neuron-sweep", 1, {NEURON: 8}, TRN1, True)],
    "training": [("finetune-70b", 1, {GPU: 8}, P5, True), ("trn-pretrain", 1, {NEURON: 16}, TRN1, True)],
    "inference": [("llm-serving", 1, {GPU: 4}, P5, True), ("embeddings", 3, {GPU: 2}, G5, True)],
    "data-science": [("notebooks", 1, {GPU: 4}, P5, True), ("feature-jobs", 1, {GPU: 4}, G5, True)],
    "platform": [("neuron-ci", 1, {NEURON: 8}, TRN1, True), ("canary", 1, {GPU: 2}, G5, True)],
}


def kube_state() -> kube_fake.KubeState:
    """The demo cluster's Kubernetes API, empty: the Kueue versions its add-on serves."""
    return kube_fake.KubeState(kueue_versions=KUEUE_VERSIONS)


def _objects(jobs: dict[str, list[Job]], runs_for: Mapping[tuple[str, str], str],
             admitted: Mapping[tuple[str, str], datetime]) -> list[dict[str, Any]]:
    out = []
    for team, team_jobs in jobs.items():
        for name, pods, requests, instance_type, running in team_jobs:
            at = admitted.get((team, name))
            out.append(kube_fake.workload(team, name, [kube_fake.pod_set(pods, requests, instance_type)],
                                          admitted_on=instance_type if running else None,
                                          estimated_duration=runs_for.get((team, name)),
                                          admitted=at.strftime("%Y-%m-%dT%H:%M:%SZ") if at else kube_fake.BUILT_AT))
    return out


def _resource_of(instance_type: str) -> str:
    return NEURON if instance_type == TRN1 else GPU


def _queues(jobs: dict[str, list[Job]]) -> list[dict[str, Any]]:
    """One ClusterQueue per team: nominal quota as seeded, reservations = what its admitted workloads hold."""
    out = []
    for team in DEMO.teams:
        nominal = {t: {_resource_of(t): n} for t, n in sorted(team.accelerators.items())}
        reserved: dict[str, dict[str, int]] = {}
        pending = admitted = 0
        for _name, pods, requests, instance_type, running in jobs.get(team.name, []):
            if not running:
                pending += 1
                continue
            admitted += 1
            for resource, n in requests.items():
                per = reserved.setdefault(instance_type, {})
                per[resource] = per.get(resource, 0) + pods * n
        out.append(kube_fake.cluster_queue(team.name, nominal, reserved, pending_workloads=pending,
                                           admitted_workloads=admitted))
    return out


def set_demand(kube: kube_fake.KubeState, jobs: dict[str, list[Job]],
               runs_for: Mapping[tuple[str, str], str] | None = None,
               admitted: Mapping[tuple[str, str], datetime] | None = None) -> None:
    """`runs_for`: (team, workload) → the run time it declares (a Go duration, its estimated-duration annotation);
    `admitted`: (team, workload) → when Kueue admitted it (the builder's fixed time for one not given)."""
    with kube.lock:
        kube.objects["workloads"] = _objects(jobs, runs_for or {}, admitted or {})
        kube.objects["clusterqueues"] = _queues(jobs)


def steady_demand(kube: kube_fake.KubeState) -> None:
    """Every team busy inside its quota; nobody waiting."""
    set_demand(kube, STEADY)


def research_queueing(kube: kube_fake.KubeState) -> None:
    """data-science's notebooks and feature jobs finished hours ago; research queues an H100 sweep."""
    jobs = {**STEADY, "data-science": [],
            "research": [*STEADY["research"], ("hparam-sweep", 1, {GPU: 4}, P5, False)]}
    set_demand(kube, jobs)


def training_queueing(kube: kube_fake.KubeState) -> None:
    """research's sweep got its H100s; platform's Neuron CI is done; training queues a Trainium job."""
    jobs = {**STEADY, "data-science": [],
            "research": [*STEADY["research"], ("hparam-sweep", 1, {GPU: 4}, P5, True)],
            "platform": [STEADY["platform"][1]],
            "training": [*STEADY["training"], ("trn-distill", 1, {NEURON: 8}, TRN1, False)]}
    set_demand(kube, jobs)


def utilization_series(now: datetime, idle: Iterable[str] = (), hours: float = 6,
                       step_minutes: int = 15) -> dict[str, list[tuple[datetime, float]]]:
    """team → (time, GPU/NeuronCore utilization %) over the `hours` before `now`: each busy team near a level of its
    own between 72 and 88 %, drifting by at most 1.5 points over the day (levels 4 points apart: no two teams'
    series cross, so a dashboard tells them apart); teams in `idle` at 0 throughout."""
    idle = set(idle)
    out: dict[str, list[tuple[datetime, float]]] = {}
    points = int(hours * 60 // step_minutes)
    for i, team in enumerate(TEAMS):
        series = []
        for k in range(points):
            t = now - timedelta(minutes=step_minutes * (points - k))
            drift = 1.5 * math.sin(2 * math.pi * (t.hour + t.minute / 60) / 24 + i)
            series.append((t, 0.0 if team in idle else round(72.0 + 4 * (i % 5) + drift, 1)))
        out[team] = series
    return out


def publish_metrics(cloudwatch: Any, now: datetime, idle: Iterable[str] = (),
                    hours: float = 6) -> dict[str, list[tuple[datetime, float]]]:
    """Put the series into CloudWatch as Container Insights would (per-namespace pod_gpu_utilization)."""
    series = utilization_series(now, idle, hours)
    for team, points in series.items():
        data = [{"MetricName": METRICS["gpu_percent"], "Timestamp": t, "Value": v, "Unit": "Percent",
                 "Dimensions": [{"Name": "ClusterName", "Value": EKS_CLUSTER},
                                {"Name": "Namespace", "Value": TEAM_NAMESPACE_PREFIX + team}]} for t, v in points]
        for k in range(0, len(data), 500):
            cloudwatch.put_metric_data(Namespace=NAMESPACE, MetricData=data[k:k + 500])
    return series


@dataclass(slots=True)
class Insights:
    """Container Insights through a story whose clock jumps: each `publish` covers the time since the previous one
    (the `hours` before the first), so utilization is there for the whole story, and the teams idle since the last
    change of `idle` stay idle until the next."""

    idle: frozenset[str] = frozenset()
    until: datetime | None = None

    def publish(self, cloudwatch: Any, now: datetime, idle: Iterable[str] | None = None, hours: float = 6) -> None:
        if idle is not None:
            self.idle = frozenset(idle)
        span = hours if self.until is None else (now - self.until).total_seconds() / 3600
        if span > 0:
            publish_metrics(cloudwatch, now, self.idle, span)
        self.until = now
