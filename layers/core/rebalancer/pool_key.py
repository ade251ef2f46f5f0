"""A pool's key as the policy, the planner and the quota writer read it: an instance type, or `type:profile` for
one MIG profile's partitions of that type (rebalancer.plan.pool_name writes it). Apart from the policy's models so
that the steps that only write quotas do not build them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from rebalancer import catalog
from rebalancer.errors import UnknownInstanceType
from rebalancer.plan import pool_name


class PoolKey(BaseModel):
    """One allocatable pool: an instance type's primary resource, or one MIG profile on it."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    instance_type: str
    mig_profile: str | None = None

    @classmethod
    def parse(cls, key: str) -> PoolKey:
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
