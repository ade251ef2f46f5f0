"""The autoscaler's ceiling per instance type, from Karpenter NodePools (karpenter.sh/v1): a NodePool's
`spec.limits` (cpu, memory, nvidia.com/gpu, aws.amazon.com/neuron) bound the nodes it may launch of the instance
types its `node.kubernetes.io/instance-type In [...]` requirement allows. A NodePool without a limit, or without
that requirement, says nothing per type and is skipped; a type in several NodePools adds their ceilings."""

from __future__ import annotations

import math
from collections import Counter
from decimal import Decimal
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.utils import parse_quantity

from rebalancer.catalog import specs as catalog
from rebalancer.catalog.specs import InstanceSpec
from rebalancer.domain.quotas import AMOUNT_RANGE
from rebalancer.errors import PermanentError, TransientError, UnknownInstanceType
from rebalancer.parsing.lookup import dig, list_of

GROUP, VERSION, PLURAL = "karpenter.sh", "v1", "nodepools"
# Nodes per instance type a ceiling is read as at most: a quota's Count (the API's maximum, 10,000,000) and beyond
# any cluster; a limit written as 1e30 means "no limit" and is read as this.
NODES_MAX = AMOUNT_RANGE[1]
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
    limits = dig(pool, "spec", "limits")
    limits = limits if isinstance(limits, dict) else {}
    types = [v for r in list_of(dig(pool, "spec", "template", "spec", "requirements"))
             if dig(r, "key") == INSTANCE_TYPE_KEY and dig(r, "operator") == "In"
             for v in list_of(dig(r, "values")) if isinstance(v, str)]
    out: dict[str, int] = {}
    for t in types:
        try:
            s = catalog.spec(t)
        except UnknownInstanceType:
            continue
        bounds = [_nodes(q, per) for r, q in limits.items() if (per := _per_instance(s, r)) > 0]
        known = [b for b in bounds if b is not None]
        if known:
            out[t] = min(known)
    return out


def _nodes(quantity: Any, per_instance: float) -> int | None:
    """Nodes a limit allows, within 0 and NODES_MAX; None for a limit that is not a finite, non-negative quantity
    (Karpenter refuses one; it bounds nothing here)."""
    try:
        q = Decimal(parse_quantity(quantity))
    except (ValueError, TypeError, ArithmeticError):
        return None
    if not q.is_finite() or q < 0:
        return None
    return min(NODES_MAX, math.floor(q / Decimal(per_instance) + Decimal("1e-9")))


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
    for pool in list_of(dig(listed, "items")):
        total.update(ceiling(pool))
    return {t: min(n, NODES_MAX) for t, n in sorted(total.items())}
