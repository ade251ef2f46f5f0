"""Generates layers/core/rebalancer/catalog/instance_types.py, the runtime's table of HyperPod instance types:

    python -m rebalancer_tools.packaging.catalog_gen > layers/core/rebalancer/catalog/instance_types.py

Its rows are the types of the installed botocore's SageMaker `ClusterInstanceType` enum, each described by the
family rules below (accelerator figures from the EC2 and SageMaker instance pages). A type of the enum that no rule
describes is an error naming it: add a rule, regenerate. tests/unit/test_catalog.py fails when the table is not what
this prints, so a botocore that brings new types asks for a regeneration instead of a service-model load at run time.
"""

from __future__ import annotations

import json
import sys

from rebalancer.catalog import mig
from rebalancer.catalog.specs import AcceleratorKind, InstanceSpec
from rebalancer_tools.packaging.sdk_model import cluster_instance_types, mig_profile_types


def _gpu(t: str, n: int, model: str, vcpu: int, mem: float) -> InstanceSpec:
    return InstanceSpec(
        instance_type=t, vcpu=vcpu, memory_gib=mem, accelerators=n,
        accelerator_kind=AcceleratorKind.NVIDIA_GPU, accelerator_model=model, mig_profiles=_mig_profiles(model),
    )


def _mig_profiles(model: str) -> tuple[str, ...]:
    """The GPU's profiles (rebalancer.catalog.mig's table, the one place they are written) that the SDK's MIGProfileType
    enum names: a quota can only be set on those. B300's are in none of today's enum values, so p6-b300 has none."""
    gpu = mig.GPU_OF_MODEL.get(model)
    if gpu is None:
        return ()
    allowed = set(mig_profile_types())
    return tuple(p for p in mig.PER_GPU[gpu] if p in allowed)


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


def rules() -> dict[str, InstanceSpec]:
    specs = [
        _gpu("ml.p4d.24xlarge", 8, "A100-40GB", 96, 1152),
        _gpu("ml.p4de.24xlarge", 8, "A100-80GB", 96, 1152),
        _gpu("ml.p5.48xlarge", 8, "H100", 192, 2048),
        _gpu("ml.p5.4xlarge", 1, "H100", 16, 256),
        _gpu("ml.p5e.48xlarge", 8, "H200", 192, 2048),
        _gpu("ml.p5en.48xlarge", 8, "H200", 192, 2048),
        _gpu("ml.p6-b200.48xlarge", 8, "B200", 192, 2048),
        _gpu("ml.p6-b300.48xlarge", 8, "B300", 192, 4096),
        _gpu("ml.p6e-gb200.36xlarge", 4, "GB200", 144, 960),
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




def table() -> dict[str, InstanceSpec]:
    """Every type of the SDK enum, described; SystemExit names the types no rule describes."""
    described = rules()
    undescribed = sorted(set(cluster_instance_types()) - set(described))
    if undescribed:
        raise SystemExit(f"no catalog rule describes {', '.join(undescribed)}: "
                         "add one to rebalancer_tools.packaging.catalog_gen")
    return {t: described[t] for t in sorted(cluster_instance_types())}


LINE_LENGTH = 121  # ruff's 120 and the newline

HEADER = '''"""HyperPod instance types and what each carries. Generated by
`python -m rebalancer_tools.packaging.catalog_gen` from the SageMaker SDK's ClusterInstanceType enum: do not edit
(tests/unit/test_catalog.py checks it is current).

Row: vCPU, memory GiB, accelerators, accelerator kind, accelerator model, NeuronCores per device, MIG profiles.
"""

from __future__ import annotations

Row = tuple[int, float, int, str | None, str | None, int, tuple[str, ...]]

TABLE: dict[str, Row] = {
'''


def _literal(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        return "(" + ", ".join(map(_literal, value)) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


def render() -> str:
    rows = []
    for t, s in table().items():
        kind = s.accelerator_kind.value if s.accelerator_kind else None
        head = ", ".join(_literal(v) for v in (s.vcpu, s.memory_gib, s.accelerators, kind, s.accelerator_model,
                                                s.neuron_cores_per_device))
        line = f"    {_literal(t)}: ({head}, {_literal(s.mig_profiles)}),\n"
        if len(line) > LINE_LENGTH:
            line = f"    {_literal(t)}: ({head},\n        {_literal(s.mig_profiles)}),\n"
        rows.append(line)
    return HEADER + "".join(rows) + "}\n"


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
