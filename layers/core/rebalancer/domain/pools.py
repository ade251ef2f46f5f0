"""A pool: what the engine allocates and a quota holds. Its name is an instance type, or `type:profile` for one MIG
profile's partitions of that type; `PoolKey` is that name parsed against the catalog, and `holdings` is the one
reading of a quota's resource entries per pool (the planner, the quota writer, the samples and the CLI share it)."""

from rebalancer.catalog import specs as catalog
from rebalancer.domain.frozen import Frozen
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.errors import InvalidInput, UnknownInstanceType


def pool_name(instance_type: str, profile: str | None) -> str:
    """A pool's name: the instance type, or `type:profile` for one MIG profile's partitions of that type."""
    return f"{instance_type}:{profile}" if profile else instance_type


class PoolKey(Frozen):
    """One allocatable pool: an instance type's primary resource, or one MIG profile on it."""

    instance_type: str
    mig_profile: str | None = None

    @classmethod
    def parse(cls, key: str) -> "PoolKey":
        """Raises ValueError naming the key when the type or the MIG profile is unknown."""
        instance_type, _, profile = key.partition(":")
        try:
            spec = catalog.spec(instance_type)
        except UnknownInstanceType as e:
            raise ValueError(str(e)) from None
        if profile:
            if profile not in spec.mig_profiles:
                raise ValueError(f"{profile!r} is not a MIG profile of {instance_type} (it supports: "
                                 f"{', '.join(spec.mig_profiles) or 'none'})")
            return cls(instance_type=instance_type, mig_profile=profile)
        return cls(instance_type=instance_type)

    @property
    def resource(self) -> str:
        if self.mig_profile:
            return "partitions"
        return catalog.spec(self.instance_type).primary_resource

    def __str__(self) -> str:
        return pool_name(self.instance_type, self.mig_profile)


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
            name, amount = pool_name(t, part.Type), float(part.Count)
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
