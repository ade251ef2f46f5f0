"""MIG partitions per GPU, per GPU model and profile, from NVIDIA's Multi-Instance GPU User Guide ("Supported MIG
Profiles": the "Number of Instances Available" column).

How many instances of a profile fit on one GPU depends on the GPU, not on the profile's name alone: `1g.10gb` is
1/8 of the memory of an 80 GB GPU (7 fit) but 2/8 of a 40 GB A100 (4 fit). Every GPU follows the same layout of
eight memory slices and seven compute slices: `1g` with 1/8 of the memory ×7, `1g` with 2/8 ×4, `2g` ×3, `3g` ×2,
`4g` ×1, `7g` ×1. The `+me` (media extension) variants are left out: the SageMaker API's MIGProfileType has none.
"""

from __future__ import annotations

from functools import cache

from rebalancer.catalog.specs import spec
from rebalancer.errors import UnknownMigProfile


def _layout(eighth: int, quarter: int, half: int, full: int) -> dict[str, int]:
    """The six profiles of a GPU whose memory slices are `eighth`, `quarter` (2/8), `half` (4/8) and `full` GB."""
    return {f"mig-1g.{eighth}gb": 7, f"mig-1g.{quarter}gb": 4, f"mig-2g.{quarter}gb": 3,
            f"mig-3g.{half}gb": 2, f"mig-4g.{half}gb": 1, f"mig-7g.{full}gb": 1}


# GPU (as the catalog's accelerator_model names it, with memory) → profile → instances per GPU.
PER_GPU: dict[str, dict[str, int]] = {
    "A100-40GB": _layout(5, 10, 20, 40),      # A100-SXM4-40GB table
    "A100-80GB": _layout(10, 20, 40, 80),     # A100-SXM4-80GB: the 40 GB names scaled by memory
    "H100-80GB": _layout(10, 20, 40, 80),     # H100-SXM5-80GB
    "H200-141GB": _layout(18, 35, 71, 141),   # H200-SXM5-141GB
    "B200-180GB": _layout(23, 45, 90, 180),   # B200
    "GB200-186GB": _layout(23, 47, 93, 186),  # GB200
    # B300 (288 GB) is not in the guide's table yet; figures as the SageMaker HyperPod CLI's MIG configs give them
    # (NVIDIA GPU Operator). None of these is in the SageMaker API's MIGProfileType enum today.
    "B300-288GB": _layout(34, 67, 135, 269),
}

# The catalog's accelerator_model → the GPU above. Instance types' GPUs: p4d A100 40 GB, p4de A100 80 GB, p5 H100
# 80 GB, p5e/p5en H200 141 GB, p6-b200 B200, p6e-gb200 GB200, p6-b300 B300.
GPU_OF_MODEL = {"A100-40GB": "A100-40GB", "A100-80GB": "A100-80GB", "H100": "H100-80GB", "H200": "H200-141GB",
                "B200": "B200-180GB", "GB200": "GB200-186GB", "B300": "B300-288GB"}


def partitions_per_gpu(profile: str, gpu: str) -> int:
    """How many `profile` instances fit on one `gpu`. UnknownMigProfile naming both when the GPU has no such profile
    (or no MIG table)."""
    table = PER_GPU.get(gpu)
    if table is None:
        raise UnknownMigProfile(f"no MIG table for GPU {gpu!r}; known: {', '.join(PER_GPU)}", value=gpu)
    try:
        return table[profile]
    except KeyError:
        raise UnknownMigProfile(f"{profile!r} is not a MIG profile of {gpu} (its profiles: {', '.join(table)})",
                                value=profile) from None


def gpu_of(instance_type: str) -> str:
    model = spec(instance_type).accelerator_model
    gpu = GPU_OF_MODEL.get(model or "")
    if gpu is None:
        raise UnknownMigProfile(f"{instance_type} ({model or 'no GPU'}) does not support MIG", value=instance_type)
    return gpu


@cache
def partitions_per_gpu_on(instance_type: str, profile: str) -> int:
    """`ml.p5.48xlarge`, `mig-1g.20gb` → 4. UnknownMigProfile naming the type and profile when they do not go
    together."""
    return partitions_per_gpu(profile, gpu_of(instance_type))


def gpus_by_profile() -> dict[str, tuple[str, ...]]:
    """Each profile name in any table → the GPUs that have it (a name can mean different slices on different GPUs)."""
    out: dict[str, list[str]] = {}
    for gpu, table in PER_GPU.items():
        for profile in table:
            out.setdefault(profile, []).append(gpu)
    return {p: tuple(g) for p, g in out.items()}
