"""MIG partitions per GPU, table-tested against NVIDIA's "Supported MIG Profiles" tables and the API's enum."""

from __future__ import annotations

import pytest

from rebalancer.catalog import mig
from rebalancer.catalog import specs as catalog
from rebalancer_tools.packaging.sdk_model import mig_profile_types

# (GPU, profile, instances per GPU) as NVIDIA's tables give them ("Number of Instances Available").
NVIDIA = [
    ("A100-40GB", "mig-1g.5gb", 7), ("A100-40GB", "mig-1g.10gb", 4), ("A100-40GB", "mig-2g.10gb", 3),
    ("A100-40GB", "mig-3g.20gb", 2), ("A100-40GB", "mig-4g.20gb", 1), ("A100-40GB", "mig-7g.40gb", 1),
    ("A100-80GB", "mig-1g.10gb", 7), ("A100-80GB", "mig-1g.20gb", 4), ("A100-80GB", "mig-2g.20gb", 3),
    ("A100-80GB", "mig-3g.40gb", 2), ("A100-80GB", "mig-4g.40gb", 1), ("A100-80GB", "mig-7g.80gb", 1),
    ("H100-80GB", "mig-1g.10gb", 7), ("H100-80GB", "mig-1g.20gb", 4), ("H100-80GB", "mig-2g.20gb", 3),
    ("H100-80GB", "mig-3g.40gb", 2), ("H100-80GB", "mig-4g.40gb", 1), ("H100-80GB", "mig-7g.80gb", 1),
    ("H200-141GB", "mig-1g.18gb", 7), ("H200-141GB", "mig-1g.35gb", 4), ("H200-141GB", "mig-2g.35gb", 3),
    ("H200-141GB", "mig-3g.71gb", 2), ("H200-141GB", "mig-4g.71gb", 1), ("H200-141GB", "mig-7g.141gb", 1),
    ("B200-180GB", "mig-1g.23gb", 7), ("B200-180GB", "mig-1g.45gb", 4), ("B200-180GB", "mig-2g.45gb", 3),
    ("B200-180GB", "mig-3g.90gb", 2), ("B200-180GB", "mig-4g.90gb", 1), ("B200-180GB", "mig-7g.180gb", 1),
    ("GB200-186GB", "mig-1g.23gb", 7), ("GB200-186GB", "mig-1g.47gb", 4), ("GB200-186GB", "mig-2g.47gb", 3),
    ("GB200-186GB", "mig-3g.93gb", 2), ("GB200-186GB", "mig-4g.93gb", 1), ("GB200-186GB", "mig-7g.186gb", 1),
]


@pytest.mark.parametrize(("gpu", "profile", "per_gpu"), NVIDIA)
def test_partitions_per_gpu_follow_nvidias_tables(gpu: str, profile: str, per_gpu: int) -> None:
    assert mig.partitions_per_gpu(profile, gpu) == per_gpu


def test_the_double_memory_1g_profiles_fit_four_times_not_seven() -> None:
    assert mig.partitions_per_gpu_on("ml.p5.48xlarge", "mig-1g.20gb") == 4
    assert mig.partitions_per_gpu_on("ml.p5e.48xlarge", "mig-1g.35gb") == 4
    assert mig.partitions_per_gpu_on("ml.p6-b200.48xlarge", "mig-1g.45gb") == 4
    # the same name, another GPU: 1/8 of an 80 GB GPU but 2/8 of a 40 GB A100
    assert mig.partitions_per_gpu_on("ml.p4de.24xlarge", "mig-1g.10gb") == 7
    assert mig.partitions_per_gpu_on("ml.p4d.24xlarge", "mig-1g.10gb") == 4


def test_every_profile_of_the_apis_enum_has_a_count() -> None:
    assert set(mig_profile_types()) <= set(mig.gpus_by_profile())
    assert {p for gpu, p, _ in NVIDIA} == set(mig_profile_types())


def test_every_table_is_a_whole_gpu_at_most() -> None:
    # seven compute slices: n instances of a `kg` profile never take more than 7
    for gpu, table in mig.PER_GPU.items():
        for profile, n in table.items():
            slices = int(profile.removeprefix("mig-").split("g.", 1)[0])
            assert n * slices <= 7, (gpu, profile)


@pytest.mark.parametrize(("instance_type", "profile", "message"), [
    ("ml.p5.48xlarge", "mig-1g.5gb", r"'mig-1g.5gb' is not a MIG profile of H100-80GB \(its profiles: mig-1g.10gb"),
    ("ml.g5.48xlarge", "mig-1g.10gb", r"ml.g5.48xlarge \(A10G\) does not support MIG"),
    ("ml.c5.18xlarge", "mig-1g.10gb", r"ml.c5.18xlarge \(no GPU\) does not support MIG"),
])
def test_a_profile_a_gpu_does_not_have_is_named(instance_type: str, profile: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mig.partitions_per_gpu_on(instance_type, profile)


def test_mig_instance_types_of_the_catalog_have_a_table() -> None:
    for t in catalog.known_types():
        if catalog.spec(t).mig_profiles:
            assert mig.gpu_of(t) in mig.PER_GPU


def test_the_catalogs_profiles_are_those_of_the_instance_types_gpu_that_the_api_names() -> None:
    api = set(mig_profile_types())
    for t in sorted(catalog.known_types()):
        s = catalog.spec(t)
        if s.accelerator_model in mig.GPU_OF_MODEL:
            assert set(s.mig_profiles) == set(mig.PER_GPU[mig.gpu_of(t)]) & api, t
        else:
            assert s.mig_profiles == (), t
    assert catalog.spec("ml.p6e-gb200.36xlarge").mig_profiles[-1] == "mig-7g.186gb"
    assert catalog.spec("ml.p6-b300.48xlarge").mig_profiles == ()  # its 7g.269gb family is not in the enum yet
