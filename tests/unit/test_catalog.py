from pathlib import Path

import pytest

from rebalancer.catalog import instance_types
from rebalancer.catalog import specs as catalog
from rebalancer.errors import UnknownInstanceType
from rebalancer_tools.packaging import catalog_gen
from rebalancer_tools.packaging.sdk_model import cluster_instance_types, mig_profile_types

REGENERATE = "python -m rebalancer_tools.packaging.catalog_gen > layers/core/rebalancer/catalog/instance_types.py"


def test_the_table_is_the_installed_sdk_enum() -> None:
    """A botocore with new (or fewer) ClusterInstanceType values fails here: regenerate the table."""
    assert catalog.known_types() == set(cluster_instance_types()), REGENERATE


def test_the_table_is_what_the_generator_prints() -> None:
    assert Path(instance_types.__file__).read_text() == catalog_gen.render(), f"stale or hand-edited: {REGENERATE}"


def test_the_generator_names_a_type_no_rule_describes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_gen, "cluster_instance_types", lambda: ("ml.p5.48xlarge", "ml.p9.huge"))
    with pytest.raises(SystemExit, match=r"ml\.p9\.huge"):
        catalog_gen.render()


def test_accelerator_figures_of_the_design_doc() -> None:
    p5 = catalog.spec("ml.p5.48xlarge")
    assert (p5.accelerators, p5.vcpu, p5.memory_gib, p5.primary_resource) == (8, 192, 2048, "accelerators")
    trn1 = catalog.spec("ml.trn1.32xlarge")
    assert (trn1.accelerators, trn1.neuron_cores_per_device, trn1.vcpu, trn1.memory_gib) == (16, 2, 128, 512)
    assert catalog.spec("ml.trn2.48xlarge").accelerator_kind is catalog.AcceleratorKind.TRAINIUM2
    assert catalog.spec("ml.g5.12xlarge").accelerators == 4
    assert catalog.spec("ml.c5.large").primary_resource == "vcpu"


def test_mig_profiles_are_sdk_values() -> None:
    allowed = set(mig_profile_types())
    for t in catalog.known_types():
        assert set(catalog.spec(t).mig_profiles) <= allowed, t


def test_unknown_type_is_named() -> None:
    with pytest.raises(UnknownInstanceType, match=r"ml\.p9\.huge"):
        catalog.spec("ml.p9.huge")


def test_families() -> None:
    assert catalog.types_in_family("ml.p5") == (
        "ml.p5.48xlarge", "ml.p5.4xlarge", "ml.p5e.48xlarge", "ml.p5en.48xlarge")
    assert catalog.spec("ml.p5en.48xlarge").family == "ml.p5en"
    assert catalog.mig_partitions_per_gpu("mig-1g.10gb") == 7
    assert catalog.mig_partitions_per_gpu("mig-3g.40gb") == 2
