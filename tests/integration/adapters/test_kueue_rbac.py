"""The shipped RBAC (examples/kubernetes/kueue-reader-rbac.yaml) grants every Kubernetes call the collect step
makes, and the template's access entry puts the collect role in the group it binds."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import pytest
import yaml
from support.kube_api import KubeState, cluster_queue, node, pod_set, serve, workload
from support.template import ROOT, resources

from rebalancer.adapters.kubernetes import karpenter
from rebalancer.adapters.kubernetes.eks_auth import api_client_with_token
from rebalancer.adapters.kubernetes.kueue import KueueReader, NodeReader

MANIFEST = ROOT / "examples" / "kubernetes" / "kueue-reader-rbac.yaml"
P5 = "ml.p5.48xlarge"


def manifest() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(MANIFEST.read_text())}


def allowed(group: str, resource: str, verb: str) -> bool:
    return any(group in rule["apiGroups"] and resource in rule["resources"] and verb in rule["verbs"]
               for rule in manifest()["ClusterRole"]["rules"])


def test_the_access_entry_group_is_the_one_the_manifest_binds() -> None:
    entry = resources("AWS::EKS::AccessEntry")["ClusterReaderAccessEntry"]["Properties"]
    binding = manifest()["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == manifest()["ClusterRole"]["metadata"]["name"]
    assert [s["name"] for s in binding["subjects"] if s["kind"] == "Group"] == entry["KubernetesGroups"]
    assert "AccessPolicies" not in entry  # AmazonEKSViewPolicy does not cover Kueue's CRDs; the RBAC does


def test_the_cluster_role_grants_get_and_list_and_nothing_else() -> None:
    rules = manifest()["ClusterRole"]["rules"]
    granted = {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]
               for v in rule["verbs"]}
    assert granted == {(g, r, v) for g, r in (("kueue.x-k8s.io", "clusterqueues"), ("kueue.x-k8s.io", "workloads"),
                                              ("", "nodes"), ("karpenter.sh", "nodepools"))
                       for v in ("get", "list")}


@pytest.mark.parametrize("versions", [("v1beta2",), ("v1beta1",)])
def test_every_call_collect_makes_is_granted(versions: tuple[str, ...]) -> None:
    with serve(KubeState(kueue_versions=versions)) as (url, state):
        state.add(cluster_queue("a", {P5: {"nvidia.com/gpu": 8}}),
                  workload("a", "w", [pod_set(1, {"nvidia.com/gpu": 8}, P5)]),
                  node("p5-0", P5, {"nvidia.com/mig-1g.10gb": 7}))
        api = api_client_with_token(url, lambda: "t")
        KueueReader(api).read()
        NodeReader(api).mig_capacity()
        karpenter.max_nodes(api)
        calls = list(state.requests)
    served = {path for path in calls if not any(f"/kueue.x-k8s.io/{v}/" in path for v in ("v1beta1", "v1beta2")
                                                   if v not in versions)}
    assert served, calls
    for path in served:
        parts = urlparse(path).path.strip("/").split("/")
        group, resource = ("", parts[2]) if parts[0] == "api" else (parts[1], parts[3])
        assert allowed(group, resource, "list"), path
