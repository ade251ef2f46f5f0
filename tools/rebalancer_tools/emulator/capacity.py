"""Healthy capacity of a cluster and what the quotas ask of it, per instance type and resource.

Resources are named as in a quota entry: Accelerators, VCpu, MemoryInGiB. A Count entry asks for count × what one
instance carries; granular entries fill omitted vCPU and memory by the accelerator ratio (or by the vCPU / memory
ratio on CPU-only types), and a MIG partition counts as its share of one GPU.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from rebalancer.catalog.mig import partitions_per_gpu_on
from rebalancer.catalog.specs import InstanceSpec, spec
from rebalancer.errors import UnknownInstanceType

RESOURCES = ("Accelerators", "VCpu", "MemoryInGiB")
Key = tuple[str, str]  # (instance type, resource)

HEALTHY_STATUS = "Running"


def _per_instance(s: InstanceSpec) -> dict[str, float]:
    return {"Accelerators": float(s.accelerators), "VCpu": float(s.vcpu), "MemoryInGiB": float(s.memory_gib)}


def healthy_capacity(nodes: Iterable[tuple[str, str]]) -> dict[Key, float]:
    """`nodes`: (instance type, status) pairs. Only Running nodes count."""
    out: dict[Key, float] = defaultdict(float)
    for instance_type, status in nodes:
        if status != HEALTHY_STATUS:
            continue
        try:
            per = _per_instance(spec(instance_type))
        except UnknownInstanceType:
            continue
        for resource, amount in per.items():
            out[(instance_type, resource)] += amount
    return dict(out)


def entry_amounts(entry: dict[str, Any]) -> dict[str, float]:
    """What one ComputeQuotaResourceConfig asks for, per resource."""
    s = spec(entry["InstanceType"])
    per = _per_instance(s)
    if entry.get("Count") is not None:
        return {r: entry["Count"] * per[r] for r in RESOURCES}
    acc = entry.get("Accelerators")
    partition = entry.get("AcceleratorPartition")
    if acc is None and partition:
        acc = partition["Count"] / partitions_per_gpu_on(entry["InstanceType"], partition["Type"])
    vcpu, mem = entry.get("VCpu"), entry.get("MemoryInGiB")
    if acc:
        share = acc / s.accelerators if s.accelerators else 0.0
    elif vcpu is not None:
        share = vcpu / s.vcpu
    elif mem is not None:
        share = mem / s.memory_gib
    else:
        share = 0.0
    return {
        "Accelerators": float(acc or 0),
        "VCpu": float(vcpu if vcpu is not None else share * s.vcpu),
        "MemoryInGiB": float(mem if mem is not None else share * s.memory_gib),
    }


def quota_amounts(configs: Iterable[dict[str, Any]]) -> dict[Key, float]:
    """Sum of what the given ComputeQuotaConfigs ask for."""
    out: dict[Key, float] = defaultdict(float)
    for config in configs:
        for entry in config.get("ComputeQuotaResources") or ():
            for resource, amount in entry_amounts(entry).items():
                out[(entry["InstanceType"], resource)] += amount
    return dict(out)
