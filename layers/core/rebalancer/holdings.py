"""What a quota holds, per pool: the one reading of a quota's resource entries, shared by the planner, the quota
writer, the samples and the CLI (so the apply path does not load the planner to read a quota)."""

from __future__ import annotations

from rebalancer import catalog
from rebalancer.errors import InvalidInput
from rebalancer.models import ComputeQuota

__all__ = ["held", "holdings"]


def holdings(quota: ComputeQuota, index: int | None = None) -> dict[str, float]:
    """What a quota holds, per pool name, in the pool's unit (Count is turned into accelerators or vCPUs).
    With `index`, an unknown instance type is reported at its place in the snapshot's quotas."""
    out: dict[str, float] = {}
    for j, r in enumerate(quota.ComputeQuotaConfig.ComputeQuotaResources):
        t = r.InstanceType
        try:
            spec = catalog.spec(t)
        except InvalidInput:
            if index is None:
                raise
            # The field path is built only on failure: this loop runs for every entry of every quota.
            catalog.spec(t, field=f"quotas.{index}.ComputeQuotaConfig.ComputeQuotaResources.{j}.InstanceType")
            raise
        part = r.AcceleratorPartition
        if part is not None:
            name, amount = f"{t}:{part.Type}" if part.Type else t, float(part.Count)  # pool_name, inlined
        elif spec.accelerators:
            name = t
            amount = float(r.Accelerators if r.Accelerators is not None else (r.Count or 0) * spec.accelerators)
        else:
            name = t
            amount = float(r.VCpu if r.VCpu is not None else (r.Count or 0) * spec.vcpu)
        out[name] = out.get(name, 0.0) + amount
    return out


def held(quota: ComputeQuota, pool: object) -> float:
    """What a quota holds in one pool (a PoolKey or its name), in the pool's unit."""
    return holdings(quota).get(str(pool), 0.0)
