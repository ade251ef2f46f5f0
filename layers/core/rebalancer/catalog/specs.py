"""Instance catalog: what each HyperPod instance type carries.

The table (rebalancer.catalog.instance_types) is generated from the SageMaker SDK's `ClusterInstanceType` enum by
`python -m rebalancer_tools.packaging.catalog_gen`, so no service model is read at run time. Accelerator figures are
from the EC2 and SageMaker instance pages; at run time EC2 DescribeInstanceTypes (GpuInfo, NeuronInfo) is the
authority, and the collect step can override an entry. An unknown type is an error that names it, never a silent zero.
"""

import functools
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rebalancer.catalog.instance_types import TABLE
from rebalancer.errors import UnknownInstanceType, UnknownMigProfile


class AcceleratorKind(StrEnum):
    NVIDIA_GPU = "nvidia-gpu"
    TRAINIUM = "trainium"
    TRAINIUM2 = "trainium2"


PrimaryResource = Literal["accelerators", "vcpu"]

# How many instances of a profile fit on one GPU (NVIDIA's MIG tables: 1g ×7, 2g ×3, 3g ×2, 4g ×1, 7g ×1).
MIG_PER_GPU = {"1g": 7, "2g": 3, "3g": 2, "4g": 1, "7g": 1}


def mig_partitions_per_gpu(profile: str) -> int:
    """`mig-1g.10gb` → 7. Raises UnknownMigProfile for a string that is not a MIG profile."""
    try:
        slices = profile.removeprefix("mig-").split(".", 1)[0]
        return MIG_PER_GPU[slices]
    except (KeyError, IndexError):
        raise UnknownMigProfile(f"not a MIG profile: {profile!r}", value=profile) from None


class InstanceSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    instance_type: str
    vcpu: int
    memory_gib: float
    accelerators: int = 0
    accelerator_kind: AcceleratorKind | None = None
    accelerator_model: str | None = None
    neuron_cores_per_device: int = 0
    mig_profiles: tuple[str, ...] = ()

    @property
    def family(self) -> str:
        """`ml.p5e.48xlarge` → `ml.p5e`."""
        return self.instance_type.rsplit(".", 1)[0]

    @property
    def primary_resource(self) -> PrimaryResource:
        return "accelerators" if self.accelerators else "vcpu"

    @property
    def primary_per_instance(self) -> int:
        return self.accelerators if self.accelerators else self.vcpu


def _specs() -> dict[str, InstanceSpec]:
    return {t: InstanceSpec(instance_type=t, vcpu=v, memory_gib=mem, accelerators=n,
                            accelerator_kind=AcceleratorKind(kind) if kind else None, accelerator_model=model,
                            neuron_cores_per_device=cores, mig_profiles=mig)
            for t, (v, mem, n, kind, model, cores, mig) in TABLE.items()}


_ALL = _specs()
_KNOWN = frozenset(_ALL)


def known_types() -> frozenset[str]:
    """Types HyperPod accepts (the SDK enum when the table was generated), each described."""
    return _KNOWN


def spec(instance_type: str, *, field: str | None = None) -> InstanceSpec:
    """The spec of a HyperPod instance type; UnknownInstanceType names it when it is not one."""
    try:
        return _ALL[instance_type]
    except KeyError:
        raise UnknownInstanceType(instance_type, field=field, known=_ALL.keys) from None


def family_of(instance_type: str) -> str:
    return spec(instance_type).family


@functools.lru_cache(maxsize=256)  # the table is fixed; a plan asks once per family key and team
def types_in_family(family: str) -> tuple[str, ...]:
    """`ml.p5` → every known type whose family is exactly ml.p5 or a variant of it (ml.p5e, ml.p5en)."""
    return tuple(sorted(t for t in known_types() if _ALL[t].family == family or (_ALL[t].family.startswith(family)
                        and _ALL[t].family[len(family):].isalpha())))
