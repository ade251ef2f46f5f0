"""The autoscaler's ceiling per instance type, from Karpenter NodePools (karpenter.sh/v1): a NodePool's
`spec.limits` (cpu, memory, nvidia.com/gpu, aws.amazon.com/neuron) bound the nodes it may launch of the instance
types its `node.kubernetes.io/instance-type In [...]` requirement allows. A NodePool without a limit, or without
that requirement, says nothing per type and is skipped; a type in several NodePools adds their ceilings."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.utils import parse_quantity

from rebalancer.catalog import specs as catalog
from rebalancer.catalog.specs import InstanceSpec
from rebalancer.errors import PermanentError, TransientError, UnknownInstanceType

GROUP, VERSION, PLURAL = "karpenter.sh", "v1", "nodepools"
INSTANCE_TYPE_KEY = "node.kubernetes.io/instance-type"


def _per_instance(spec: InstanceSpec, resource: str) -> float:
    if resource == "cpu":
        return float(spec.vcpu)
    if resource == "memory":
        return float(spec.memory_gib) * 2**30
    if resource in ("nvidia.com/gpu", "aws.amazon.com/neuron", "aws.amazon.com/neurondevice"):
        return float(spec.accelerators)
    return 0.0


def ceiling(pool: dict[str, Any]) -> dict[str, int]:
    """Nodes per instance type one NodePool may launch (its tightest limit)."""
    spec = pool.get("spec") or {}
    limits = spec.get("limits") or {}
    requirements = ((spec.get("template") or {}).get("spec") or {}).get("requirements") or []
    types = [v for r in requirements if r.get("key") == INSTANCE_TYPE_KEY and r.get("operator") == "In"
             for v in r.get("values") or []]
    out: dict[str, int] = {}
    for t in types:
        try:
            s = catalog.spec(t)
        except UnknownInstanceType:
            continue
        bounds = [math.floor(float(parse_quantity(q)) / per + 1e-9) for r, q in limits.items()
                  if (per := _per_instance(s, r)) > 0]
        if bounds:
            out[t] = max(0, min(bounds))
    return out


def max_nodes(api_client: k8s.ApiClient, request_timeout: float = 30) -> dict[str, int]:
    """Every NodePool's ceiling, added up per instance type; {} when the cluster has no Karpenter API."""
    try:
        listed = k8s.CustomObjectsApi(api_client).list_cluster_custom_object(
            GROUP, VERSION, PLURAL, _request_timeout=request_timeout)
    except ApiException as e:
        if e.status == 404:
            return {}
        if e.status in (401, 403):
            raise PermanentError(f"Kubernetes list {PLURAL}.{GROUP}: {e.status} {e.reason} (the role needs list on "
                                 f"{PLURAL}.{GROUP}: docs/deploy/kueue-access.md)") from e
        raise TransientError(f"Kubernetes list {PLURAL}.{GROUP}: {e.status} {e.reason}") from e
    total: Counter[str] = Counter()
    for pool in listed.get("items", []) or []:
        total.update(ceiling(pool))
    return dict(sorted(total.items()))
