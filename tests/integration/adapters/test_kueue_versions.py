"""Kueue v1beta2 and v1beta1: the reader asks for v1beta2 first and falls back to v1beta1 on 404, against the fake
API server serving either or both (Kueue 0.15 added v1beta2; 0.20 serves only v1beta2)."""

from __future__ import annotations

import pytest
from support.kube_api import KubeState, cluster_queue, pod_set, serve, workload

from rebalancer.adapters.kubernetes.eks_auth import api_client_with_token
from rebalancer.adapters.kubernetes.kueue import KueueReader
from rebalancer.domain.snapshot import Demand, Resources
from rebalancer.errors import PermanentError

P5 = "ml.p5.48xlarge"


def _objects() -> list[dict[str, object]]:
    return [cluster_queue("vision", {P5: {"nvidia.com/gpu": 32}}, reserved={P5: {"nvidia.com/gpu": 16}}),
            workload("vision", "running", [pod_set(2, {"nvidia.com/gpu": 8}, P5)], admitted_on=P5),
            workload("vision", "big", [pod_set(3, {"nvidia.com/gpu": 8}, P5)])]


@pytest.mark.parametrize(("served", "read", "v1beta2_requests"), [
    (("v1beta2",), "kueue.x-k8s.io/v1beta2", 2),              # Kueue >= 0.20
    (("v1beta2", "v1beta1"), "kueue.x-k8s.io/v1beta2", 2),    # Kueue 0.15-0.19
    (("v1beta1",), "kueue.x-k8s.io/v1beta1", 1),              # older: one 404, then v1beta1 for every list
])
def test_the_same_demand_is_read_from_either_version(served: tuple[str, ...], read: str,
                                                     v1beta2_requests: int) -> None:
    with serve(KubeState(kueue_versions=served)) as (url, state):
        state.add(*_objects())
        got = KueueReader(api_client_with_token(url, lambda: "t")).read()
    assert got.api_version == read
    assert got.demand["vision"][P5] == Demand(in_use=Resources(accelerators=16), pending=Resources(accelerators=24))
    assert sum("/kueue.x-k8s.io/v1beta2/" in r for r in state.requests) == v1beta2_requests


def test_objects_served_as_v1beta2_carry_its_names() -> None:
    with serve(KubeState(kueue_versions=("v1beta2",))) as (url, state):
        state.add(*_objects())
        api = KueueReader(api_client_with_token(url, lambda: "t"))
        [cq] = list(api._list("clusterqueues"))
    assert cq["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert "cohortName" in cq["spec"]
    assert "cohort" not in cq["spec"]


def test_no_kueue_version_served_names_both_tried() -> None:
    with serve(KubeState(kueue_versions=())) as (url, _), pytest.raises(PermanentError) as e:
        KueueReader(api_client_with_token(url, lambda: "t")).read()
    text = str(e.value)
    assert "\n" not in text
    assert "is Kueue installed" in text
    assert "tried kueue.x-k8s.io/v1beta2, kueue.x-k8s.io/v1beta1" in text
