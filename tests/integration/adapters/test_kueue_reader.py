"""The Kueue reader, through the real `kubernetes` client, against a loopback API server serving Kueue objects."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from kubernetes import client as k8s
from support.kube_api import KubeState, cluster_queue, node, pod_set, serve, workload

from rebalancer.adapters.kubernetes.eks_auth import api_client_with_token
from rebalancer.adapters.kubernetes.kueue import KueueReader, NodeReader
from rebalancer.domain.snapshot import Demand, PendingWorkload, Resources, RunningWorkload
from rebalancer.errors import PermanentError, TransientError

P5 = "ml.p5.48xlarge"
TRN1 = "ml.trn1.32xlarge"


@pytest.fixture
def kube() -> Iterator[tuple[str, KubeState]]:
    with serve(KubeState(token="t0k3n")) as (url, state):
        yield url, state


def reader(url: str, page_size: int = 500) -> KueueReader:
    return KueueReader(api_client_with_token(url, lambda: "t0k3n"), page_size=page_size)


def test_in_use_from_reservations_and_pending_from_workloads(kube: tuple[str, KubeState]) -> None:
    url, state = kube
    state.add(
        cluster_queue("vision", {P5: {"nvidia.com/gpu": 32, "cpu": 768, "memory": "8Ti"}},
                      reserved={P5: {"nvidia.com/gpu": 16, "cpu": "384", "memory": "4096Gi"}}, pending_workloads=2),
        cluster_queue("speech", {TRN1: {"aws.amazon.com/neurondevice": 32}},
                      reserved={TRN1: {"aws.amazon.com/neurondevice": 16}}),
        # admitted: already in the reservation, must not count as pending
        workload("vision", "running", [pod_set(2, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5),
        # pending: 3 pods × 8 GPUs on p5, plus a launcher without GPUs
        workload("vision", "big", [pod_set(3, {"nvidia.com/gpu": 8, "cpu": "96", "memory": "1Ti"}, P5),
                                   pod_set(1, {"cpu": "500m", "memory": "512Mi"}, P5, name="launcher")]),
        # pending with no node selector: the ClusterQueue offers exactly one flavor for neuron devices
        workload("speech", "llm", [pod_set(2, {"aws.amazon.com/neurondevice": 16})]),
        workload("speech", "done", [pod_set(4, {"aws.amazon.com/neurondevice": 16}, TRN1)], finished=True),
    )
    got = reader(url).read()
    assert got.teams == ("speech", "vision")
    assert got.demand["vision"][P5] == Demand(
        in_use=Resources(accelerators=16, vcpu=384, memory_gib=4096),
        pending=Resources(accelerators=24, vcpu=288.5, memory_gib=3072.5))
    assert got.demand["speech"][TRN1] == Demand(in_use=Resources(accelerators=16), pending=Resources(accelerators=32))
    assert got.warnings == ()
    assert set(state.seen_authorization) == {"Bearer t0k3n"}


def test_lists_every_page(kube: tuple[str, KubeState]) -> None:
    url, state = kube
    teams = [f"t{i:02d}" for i in range(12)]
    state.add(*(cluster_queue(t, {P5: {"nvidia.com/gpu": 8}}, reserved={P5: {"nvidia.com/gpu": 1}}) for t in teams))
    state.add(*(workload(t, f"w{j}", [pod_set(1, {"nvidia.com/gpu": 1}, P5)]) for t in teams for j in range(3)))
    got = reader(url, page_size=5).read()
    assert got.teams == tuple(teams)
    assert all(got.demand[t][P5].pending.accelerators == 3 for t in teams)
    assert sum("workloads" in r and "continue=" in r for r in state.requests) >= 7  # 36 workloads in pages of 5


def test_empty_cluster_has_no_demand(kube: tuple[str, KubeState]) -> None:
    url, _ = kube
    got = reader(url).read()
    assert got.demand == {}
    assert got.teams == ()


def test_other_namespaces_and_queues_are_ignored(kube: tuple[str, KubeState]) -> None:
    url, state = kube
    cq = cluster_queue("x", {P5: {"nvidia.com/gpu": 8}}, reserved={P5: {"nvidia.com/gpu": 8}})
    cq["metadata"]["name"] = "team-x-queue"
    wl = workload("y", "w", [pod_set(1, {"nvidia.com/gpu": 1}, P5)])
    wl["metadata"]["namespace"] = "kube-system"
    state.add(cq, wl)
    assert reader(url).read().demand == {}


def test_usage_is_read_when_reservations_are_not_reported(kube: tuple[str, KubeState]) -> None:
    url, state = kube
    state.add(cluster_queue("a", {P5: {"nvidia.com/gpu": 8}}, reserved={P5: {"nvidia.com/gpu": 5}}, usage_only=True))
    assert reader(url).read().demand["a"][P5].in_use.accelerators == 5


def test_mig_and_neuroncore_requests(kube: tuple[str, KubeState]) -> None:
    url, state = kube
    state.add(
        workload("a", "mig", [pod_set(4, {"nvidia.com/mig-1g.10gb": 2}, P5)]),
        workload("a", "cores", [pod_set(1, {"aws.amazon.com/neuroncore": 8}, TRN1)]),
    )
    got = reader(url).read().demand["a"]
    assert got[f"{P5}:mig-1g.10gb"].pending.partitions == 8
    assert got[TRN1].pending.accelerators == 4  # trn1: 2 NeuronCores per device


def test_unplaceable_pending_request_is_a_warning(kube: tuple[str, KubeState]) -> None:
    url, state = kube
    state.add(cluster_queue("a", {P5: {"nvidia.com/gpu": 8}, "ml.p4d.24xlarge": {"nvidia.com/gpu": 8}}),
              workload("a", "anywhere", [pod_set(1, {"nvidia.com/gpu": 8})]))
    got = reader(url).read()
    assert got.demand == {}
    assert got.warnings == ("Workload hyperpod-ns-a/anywhere: cannot tell which instance type its nvidia.com/gpu "
                            "request waits for (no instance-type node selector, no single flavor)",)


def test_forbidden_is_one_permanent_line(kube: tuple[str, KubeState]) -> None:
    url, state = kube
    state.errors["workloads"] = 403
    state.add(cluster_queue("a", {P5: {"nvidia.com/gpu": 8}}))
    with pytest.raises(PermanentError) as e:
        reader(url).read()
    text = str(e.value)
    assert "\n" not in text
    assert text.startswith("Kubernetes list workloads.kueue.x-k8s.io: 403 Forbidden: ")
    assert 'cannot list resource "workloads"' in text


def test_kueue_missing_and_server_errors(kube: tuple[str, KubeState]) -> None:
    url, state = kube
    state.errors["clusterqueues"] = 404
    with pytest.raises(PermanentError, match="is Kueue installed"):
        reader(url).read()
    state.errors["clusterqueues"] = 500
    with pytest.raises(TransientError, match="500"):
        reader(url).read()


def test_wrong_token_is_rejected_by_the_server(kube: tuple[str, KubeState]) -> None:
    url, _ = kube
    api = api_client_with_token(url, lambda: "stale")
    with pytest.raises(PermanentError, match="401"):
        KueueReader(api).read()


def test_token_is_remade_when_about_to_expire(kube: tuple[str, KubeState]) -> None:
    url, state = kube
    now = [0.0]
    tokens = iter(["first", "t0k3n"])
    state.token = None
    api = api_client_with_token(url, lambda: next(tokens), clock=lambda: now[0])
    KueueReader(api).read()
    now[0] = 50.0
    KueueReader(api).read()
    assert state.seen_authorization[0] == "Bearer first"
    assert state.seen_authorization[-1] == "Bearer t0k3n"
    assert isinstance(api, k8s.ApiClient)


def test_mig_capacity_counts_ready_schedulable_nodes(kube: tuple[str, KubeState]) -> None:
    url, state = kube
    state.add(
        node("p5-0", P5, {"nvidia.com/gpu": 4, "nvidia.com/mig-1g.10gb": 14, "nvidia.com/mig-3g.40gb": 4}),
        node("p5-1", P5, {"nvidia.com/mig-1g.10gb": 7}),
        node("p5-2", P5, {"nvidia.com/mig-1g.10gb": 7}, ready=False),
        node("p5-3", P5, {"nvidia.com/mig-1g.10gb": 7}, unschedulable=True),
        node("p5-4", P5, {"nvidia.com/mig-9g.99gb": 1}),
        node("g5-0", "ml.g5.12xlarge", {"nvidia.com/gpu": 4}),
    )
    api = api_client_with_token(url, lambda: "t0k3n")
    mig, warnings = NodeReader(api, page_size=2).mig_capacity()
    assert mig == {P5: {"mig-1g.10gb": 21, "mig-3g.40gb": 4}}
    assert warnings == ("node p5-4: nvidia.com/mig-9g.99gb on ml.p5.48xlarge is not a MIG profile this tool "
                        "knows; ignored",)
    assert sum(r.startswith("/api/v1/nodes") for r in state.requests) == 3  # 6 nodes, pages of 2


def test_nodes_forbidden_is_one_line(kube: tuple[str, KubeState]) -> None:
    url, state = kube
    state.errors["nodes"] = 403
    with pytest.raises(PermanentError, match=r"^Kubernetes list nodes: 403 Forbidden: "):
        NodeReader(api_client_with_token(url, lambda: "t0k3n")).mig_capacity()


def test_pending_demand_carries_its_oldest_workloads_creation_time(kube: tuple[str, KubeState]) -> None:
    url, state = kube
    older, newer = workload("a", "older", [pod_set(1, {"nvidia.com/gpu": 8}, P5)]), \
        workload("a", "newer", [pod_set(1, {"nvidia.com/gpu": 8}, P5)])
    older["metadata"]["creationTimestamp"] = "2026-11-29T08:00:00Z"
    newer["metadata"]["creationTimestamp"] = "2026-11-30T08:00:00Z"
    running = workload("a", "running", [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5)
    running["metadata"]["creationTimestamp"] = "2026-11-01T00:00:00Z"  # admitted: not pending, not counted
    state.add(cluster_queue("a", {P5: {"nvidia.com/gpu": 32}}), newer, older, running)
    got = reader(url).read().demand["a"][P5]
    assert got.pending.accelerators == 16
    assert got.oldest_pending is not None
    assert got.oldest_pending.isoformat() == "2026-11-29T08:00:00+00:00"


def test_each_pending_workload_is_listed_with_its_gang_size(kube: tuple[str, KubeState]) -> None:
    url, state = kube
    gang = workload("a", "pretrain", [pod_set(8, {"nvidia.com/gpu": 8, "cpu": "96"}, P5),
                                      pod_set(1, {"cpu": "4"}, P5, name="launcher")],
                    created="2026-11-29T08:00:00Z")
    gang["spec"]["podSets"][0]["topologyRequest"] = {"required": "topology.k8s.aws/network-node-layer-1"}
    state.add(
        cluster_queue("a", {P5: {"nvidia.com/gpu": 32}}, reserved={P5: {"nvidia.com/gpu": 8}}),
        cluster_queue("b", {TRN1: {"aws.amazon.com/neurondevice": 32}}),
        gang,
        workload("a", "small", [pod_set(1, {"nvidia.com/gpu": 2}, P5)]),
        workload("a", "admitted", [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5),
        workload("a", "cpu-only", [pod_set(2, {"cpu": "8"}, P5)]),
        workload("b", "cores", [pod_set(2, {"aws.amazon.com/neuroncore": 8}, TRN1)]),
    )
    got = {w.name: w for w in reader(url).read().workloads}
    assert set(got) == {"pretrain", "small", "cores"}  # admitted and accelerator-free workloads are not gangs
    assert got["pretrain"] == PendingWorkload(
        name="pretrain", team="a", pool=P5, accelerators=64, pods=8,
        created=datetime(2026, 11, 29, 8, tzinfo=UTC), topology="required topology.k8s.aws/network-node-layer-1")
    assert (got["small"].accelerators, got["small"].pods, got["small"].created) == (2, 1, None)
    assert (got["cores"].team, got["cores"].pool, got["cores"].accelerators) == ("b", TRN1, 8)  # 2 cores/device


def test_a_workload_asking_a_negative_count_of_gpus_is_skipped_and_the_teams_demand_kept(
        kube: tuple[str, KubeState]) -> None:
    """Through the real client: a namespace user's Workload asking -8 GPUs beside one asking 8 once crashed collect
    (a validation traceback) or, summed, cancelled the team's demand; it is skipped with one warning naming it."""
    url, state = kube
    hostile = workload("vision", "minus", [pod_set(1, {"nvidia.com/gpu": -8}, P5)])
    hostile["metadata"]["annotations"] = {"example.com/blob": "x" * 200_000}
    state.add(cluster_queue("vision", {P5: {"nvidia.com/gpu": 32}}),
              workload("vision", "real", [pod_set(1, {"nvidia.com/gpu": 8}, P5)]), hostile)
    got = reader(url).read()
    assert got.demand["vision"][P5].pending == Resources(accelerators=8)
    assert got.warnings == ("Workload hyperpod-ns-vision/minus: skipped, spec.podSets[0].containers[0] "
                            "nvidia.com/gpu request is negative: '-8'",)
    assert got.api_version == "kueue.x-k8s.io/v1beta1"


def test_each_admitted_workload_is_listed_with_its_size_and_since_when(kube: tuple[str, KubeState]) -> None:
    url, state = kube
    gang = workload("a", "pretrain", [pod_set(4, {"nvidia.com/gpu": 8, "cpu": "96"}, P5),
                                      pod_set(1, {"cpu": "4"}, P5, name="launcher")], admitted_on=P5)
    for c in gang["status"]["conditions"]:
        if c["type"] == "Admitted":
            c["lastTransitionTime"] = "2026-11-29T08:30:00Z"
    cores = workload("b", "cores", [pod_set(2, {"aws.amazon.com/neuroncore": 8})], admitted_on=TRN1)
    state.add(
        cluster_queue("a", {P5: {"nvidia.com/gpu": 32}}, reserved={P5: {"nvidia.com/gpu": 32}}),
        cluster_queue("b", {TRN1: {"aws.amazon.com/neurondevice": 32}}),
        gang, cores,
        workload("a", "waiting", [pod_set(1, {"nvidia.com/gpu": 8}, P5)]),
        workload("a", "done", [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5, finished=True),
        workload("a", "cpu-only", [pod_set(2, {"cpu": "8"}, P5)], admitted_on=P5),
    )
    got = {w.name: w for w in reader(url).read().running}
    assert set(got) == {"pretrain", "cores"}  # pending, finished and accelerator-free workloads are not running
    assert got["pretrain"] == RunningWorkload(name="pretrain", team="a", pool=P5, accelerators=32, pods=4,
                                              started=datetime(2026, 11, 29, 8, 30, tzinfo=UTC), priority=100)
    # no instance-type selector: the flavor it was admitted on says where; 2 × 8 NeuronCores are 8 devices on trn1
    assert (got["cores"].pool, got["cores"].accelerators) == (TRN1, 8)
    assert got["cores"].started == datetime(2026, 11, 30, tzinfo=UTC)


def test_when_each_workload_was_admitted_comes_through_the_client_and_a_bad_time_is_left_out_with_a_warning(
        kube: tuple[str, KubeState]) -> None:
    url, state = kube
    state.add(cluster_queue("a", {P5: {"nvidia.com/gpu": 32}}, reserved={P5: {"nvidia.com/gpu": 16}}),
              workload("a", "young", [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5,
                       admitted="2026-11-30T11:48:00Z"),
              workload("a", "garbled", [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5,
                       admitted="noon"))
    got = reader(url).read()
    assert {w.name: w.started for w in got.running} == {"young": datetime(2026, 11, 30, 11, 48, tzinfo=UTC),
                                                       "garbled": None}
    assert got.warnings == ("Workload hyperpod-ns-a/garbled: status.conditions[type=Admitted].lastTransitionTime "
                            "'noon' is not a time (RFC 3339, such as 2026-11-30T08:30:00Z): left out, how long it "
                            "has run is not known",)


def test_what_a_workload_says_of_its_run_time_comes_through_the_client(kube: tuple[str, KubeState]) -> None:
    url, state = kube
    state.add(
        cluster_queue("a", {P5: {"nvidia.com/gpu": 32}}, reserved={P5: {"nvidia.com/gpu": 8}}),
        workload("a", "runs", [pod_set(1, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5, estimated_duration="36h",
                 max_execution_s=172_800),
        workload("a", "waits", [pod_set(1, {"nvidia.com/gpu": 8}, P5)], estimated_duration="1h30m"),
        workload("a", "typo", [pod_set(1, {"nvidia.com/gpu": 8}, P5)], estimated_duration="1 day"),
    )
    got = reader(url).read()
    [runs] = got.running
    assert (runs.declared_s, runs.limit_s) == (36 * 3600, 172_800)
    assert {w.name: w.declared_s for w in got.workloads} == {"waits": 5400, "typo": None}
    assert got.demand["a"][P5].pending.accelerators == 16
    [warning] = got.warnings
    assert warning.startswith("Workload hyperpod-ns-a/typo: metadata.annotations[kueue.x-k8s.io/estimated-duration] "
                              "'1 day' is not a duration")
