"""Instance catalog: what each HyperPod instance type carries.

Covers every type in the SageMaker SDK's `ClusterInstanceType` enum. Accelerator figures are from the EC2 and
SageMaker instance pages; at run time EC2 DescribeInstanceTypes (GpuInfo, NeuronInfo) is the authority, and the
collect step can override an entry. An unknown type is an error that names it, never a silent zero.
"""

from __future__ import annotations

from enum import StrEnum
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rebalancer.errors import UnknownInstanceType


class AcceleratorKind(StrEnum):
    NVIDIA_GPU = "nvidia-gpu"
    TRAINIUM = "trainium"
    TRAINIUM2 = "trainium2"


PrimaryResource = Literal["accelerators", "vcpu"]

# MIG profiles by GPU memory size, and how many slices of a GPU each profile takes (7 slices per GPU).
_MIG_A100_40 = ("mig-1g.5gb", "mig-2g.10gb", "mig-3g.20gb", "mig-4g.20gb", "mig-7g.40gb")
_MIG_80 = ("mig-1g.10gb", "mig-1g.20gb", "mig-2g.20gb", "mig-3g.40gb", "mig-4g.40gb", "mig-7g.80gb")
_MIG_H200 = ("mig-1g.18gb", "mig-1g.35gb", "mig-2g.35gb", "mig-3g.71gb", "mig-4g.71gb", "mig-7g.141gb")
_MIG_B200 = ("mig-1g.23gb", "mig-1g.45gb", "mig-2g.45gb", "mig-3g.90gb", "mig-4g.90gb", "mig-7g.180gb")
_MIG_B300 = ("mig-1g.47gb", "mig-2g.47gb", "mig-3g.93gb", "mig-4g.93gb", "mig-7g.186gb")

# How many instances of a profile fit on one GPU (NVIDIA's MIG tables: 1g ×7, 2g ×3, 3g ×2, 4g ×1, 7g ×1).
MIG_PER_GPU = {"1g": 7, "2g": 3, "3g": 2, "4g": 1, "7g": 1}


def mig_partitions_per_gpu(profile: str) -> int:
    """`mig-1g.10gb` → 7. Raises ValueError for a string that is not a MIG profile."""
    try:
        slices = profile.removeprefix("mig-").split(".", 1)[0]
        return MIG_PER_GPU[slices]
    except (KeyError, IndexError):
        raise ValueError(f"not a MIG profile: {profile!r}") from None


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


def _gpu(t: str, n: int, model: str, vcpu: int, mem: float, mig: tuple[str, ...] = ()) -> InstanceSpec:
    return InstanceSpec(
        instance_type=t, vcpu=vcpu, memory_gib=mem, accelerators=n,
        accelerator_kind=AcceleratorKind.NVIDIA_GPU, accelerator_model=model, mig_profiles=mig,
    )


def _neuron(t: str, n: int, kind: AcceleratorKind, cores: int, vcpu: int, mem: float) -> InstanceSpec:
    model = "Trainium" if kind is AcceleratorKind.TRAINIUM else "Trainium2"
    return InstanceSpec(
        instance_type=t, vcpu=vcpu, memory_gib=mem, accelerators=n,
        accelerator_kind=kind, accelerator_model=model, neuron_cores_per_device=cores,
    )


# (size suffix → (GPUs, vCPU, GiB)) for the single-family G instances, which share a shape per size.
_G_SIZES = {
    "g5": ("A10G", {"xlarge": (1, 4, 16), "2xlarge": (1, 8, 32), "4xlarge": (1, 16, 64), "8xlarge": (1, 32, 128),
                    "12xlarge": (4, 48, 192), "16xlarge": (1, 64, 256), "24xlarge": (4, 96, 384),
                    "48xlarge": (8, 192, 768)}),
    "g6": ("L4", {"xlarge": (1, 4, 16), "2xlarge": (1, 8, 32), "4xlarge": (1, 16, 64), "8xlarge": (1, 32, 128),
                  "12xlarge": (4, 48, 192), "16xlarge": (1, 64, 256), "24xlarge": (4, 96, 384),
                  "48xlarge": (8, 192, 768)}),
    "gr6": ("L4", {"4xlarge": (1, 16, 128), "8xlarge": (1, 32, 256)}),
    "g6e": ("L40S", {"xlarge": (1, 4, 32), "2xlarge": (1, 8, 64), "4xlarge": (1, 16, 128), "8xlarge": (1, 32, 256),
                     "12xlarge": (4, 48, 384), "16xlarge": (1, 64, 512), "24xlarge": (4, 96, 768),
                     "48xlarge": (8, 192, 1536)}),
    "g4dn": ("T4", {"xlarge": (1, 4, 16), "2xlarge": (1, 8, 32), "4xlarge": (1, 16, 64), "8xlarge": (1, 32, 128),
                    "12xlarge": (4, 48, 192), "16xlarge": (1, 64, 256)}),
    "g7e": ("RTX PRO 6000 Blackwell", {"2xlarge": (1, 8, 64), "4xlarge": (1, 16, 128), "8xlarge": (1, 32, 256),
                                       "12xlarge": (2, 48, 512), "24xlarge": (4, 96, 1024),
                                       "48xlarge": (8, 192, 2048)}),
    "g7": ("RTX PRO 4500 Blackwell", {"2xlarge": (1, 8, 32), "4xlarge": (1, 16, 64), "8xlarge": (1, 32, 128),
                                      "12xlarge": (2, 48, 256), "24xlarge": (4, 96, 512),
                                      "48xlarge": (8, 192, 1024)}),
}

# GiB of memory per vCPU for the CPU-only families (t3 and c5n are irregular and listed whole below).
_CPU_GIB_PER_VCPU = {"c5": 2, "c6i": 2, "c6g": 2, "c7g": 2, "c8g": 2, "c6a": 2, "c8a": 2,
                     "m5": 4, "m6i": 4, "m7i": 4, "m6a": 4, "m6g": 4, "m7g": 4, "m8g": 4, "m8a": 4,
                     "r6i": 8, "r7i": 8, "r5d": 8, "i3en": 8}
_IRREGULAR_CPU = {
    "ml.t3.medium": (2, 4), "ml.t3.large": (2, 8), "ml.t3.xlarge": (4, 16), "ml.t3.2xlarge": (8, 32),
    "ml.c5n.large": (2, 5.25), "ml.c5n.2xlarge": (8, 21), "ml.c5n.4xlarge": (16, 42), "ml.c5n.9xlarge": (36, 96),
    "ml.c5n.18xlarge": (72, 192), "ml.c5.9xlarge": (36, 72), "ml.c5.18xlarge": (72, 144),
    "ml.i3en.3xlarge": (12, 96),
}


def _size_vcpu(size: str) -> int:
    if size == "medium":
        return 1
    if size == "large":
        return 2
    if size == "xlarge":
        return 4
    return int(size.removesuffix("xlarge")) * 4


def _build() -> dict[str, InstanceSpec]:
    specs = [
        _gpu("ml.p4d.24xlarge", 8, "A100-40GB", 96, 1152, _MIG_A100_40),
        _gpu("ml.p4de.24xlarge", 8, "A100-80GB", 96, 1152, _MIG_80),
        _gpu("ml.p5.48xlarge", 8, "H100", 192, 2048, _MIG_80),
        _gpu("ml.p5.4xlarge", 1, "H100", 16, 256, _MIG_80),
        _gpu("ml.p5e.48xlarge", 8, "H200", 192, 2048, _MIG_H200),
        _gpu("ml.p5en.48xlarge", 8, "H200", 192, 2048, _MIG_H200),
        _gpu("ml.p6-b200.48xlarge", 8, "B200", 192, 2048, _MIG_B200),
        _gpu("ml.p6-b300.48xlarge", 8, "B300", 192, 4096, _MIG_B300),
        _gpu("ml.p6e-gb200.36xlarge", 4, "GB200", 144, 960, _MIG_B200),
        _neuron("ml.trn1.32xlarge", 16, AcceleratorKind.TRAINIUM, 2, 128, 512),
        _neuron("ml.trn1n.32xlarge", 16, AcceleratorKind.TRAINIUM, 2, 128, 512),
        _neuron("ml.trn2.48xlarge", 16, AcceleratorKind.TRAINIUM2, 8, 192, 2048),
        _neuron("ml.trn2.3xlarge", 1, AcceleratorKind.TRAINIUM2, 8, 12, 128),
    ]
    for family, (model, sizes) in _G_SIZES.items():
        specs += [_gpu(f"ml.{family}.{size}", n, model, v, m) for size, (n, v, m) in sizes.items()]
    out = {s.instance_type: s for s in specs}
    for family, per in _CPU_GIB_PER_VCPU.items():
        for size in ("medium", "large", "xlarge", "2xlarge", "3xlarge", "4xlarge", "6xlarge", "8xlarge",
                     "9xlarge", "12xlarge", "16xlarge", "18xlarge", "24xlarge", "32xlarge", "48xlarge"):
            t = f"ml.{family}.{size}"
            v = _size_vcpu(size)
            out.setdefault(t, InstanceSpec(instance_type=t, vcpu=v, memory_gib=float(v * per)))
    for t, (v, mem) in _IRREGULAR_CPU.items():
        out[t] = InstanceSpec(instance_type=t, vcpu=v, memory_gib=float(mem))
    return out


_ALL = _build()


@cache
def known_types() -> frozenset[str]:
    """Types HyperPod accepts (the SDK enum) that this catalog describes."""
    from rebalancer.sdk_model import cluster_instance_types

    return frozenset(t for t in cluster_instance_types() if t in _ALL)


def spec(instance_type: str, *, field: str | None = None) -> InstanceSpec:
    """The spec of a HyperPod instance type; UnknownInstanceType names it when it is not one."""
    if instance_type not in known_types():
        raise UnknownInstanceType(instance_type, field=field)
    return _ALL[instance_type]


def family_of(instance_type: str) -> str:
    return spec(instance_type).family


def types_in_family(family: str) -> tuple[str, ...]:
    """`ml.p5` → every known type whose family is exactly ml.p5 or a variant of it (ml.p5e, ml.p5en)."""
    return tuple(sorted(t for t in known_types() if _ALL[t].family == family or (_ALL[t].family.startswith(family)
                        and _ALL[t].family[len(family):].isalpha())))
