"""The model-driven request validator and the capacity arithmetic of the invariant monitor, called directly."""

from __future__ import annotations

from typing import Any

import pytest

from rebalancer_tools.emulator.capacity import entry_amounts, healthy_capacity, quota_amounts
from rebalancer_tools.emulator.errors import SerializationException, ValidationError
from rebalancer_tools.emulator.faults import FaultKind, FaultRule
from rebalancer_tools.emulator.invariant import excess_of
from rebalancer_tools.emulator.shapes import validate_request

ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdef012345"


def _create(**overrides: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "Name": "q", "ClusterArn": ARN, "ComputeQuotaTarget": {"TeamName": "t"},
        "ComputeQuotaConfig": {"ComputeQuotaResources": [{"InstanceType": "ml.p5.48xlarge", "Accelerators": 8}]},
    }
    request.update(overrides)
    return request


def test_a_valid_request_passes() -> None:
    validate_request("CreateComputeQuota", _create(Description="Équipe de recherche — GPU"))


def test_missing_required_members_are_named() -> None:
    request = _create()
    del request["ClusterArn"]
    with pytest.raises(ValidationError, match=r"Value null at 'clusterArn' failed to satisfy constraint: Member "
                                              r"must not be null"):
        validate_request("CreateComputeQuota", request)


def test_cluster_arn_must_carry_a_cluster_id() -> None:
    with pytest.raises(ValidationError, match=r"'clusterArn'.*regular expression pattern"):
        validate_request("CreateComputeQuota", _create(ClusterArn="arn:aws:sagemaker:us-east-1:1:cluster/My_C"))


def test_description_pattern_uses_unicode_classes() -> None:
    with pytest.raises(ValidationError, match="'description'"):
        validate_request("CreateComputeQuota", _create(Description="bell \x07"))


def test_wrong_types_are_serialization_errors() -> None:
    config = {"ComputeQuotaResources": [{"InstanceType": "ml.p5.48xlarge", "Accelerators": "8"}]}
    with pytest.raises(SerializationException, match="accelerators"):
        validate_request("CreateComputeQuota", _create(ComputeQuotaConfig=config))


def test_mig_profile_enum_comes_from_the_model() -> None:
    entry = {"InstanceType": "ml.p5.48xlarge", "AcceleratorPartition": {"Type": "mig-9g.1tb", "Count": 1}}
    with pytest.raises(ValidationError, match=r"computeQuotaResources\.1\.member\.acceleratorPartition\.type"):
        validate_request("CreateComputeQuota", _create(ComputeQuotaConfig={"ComputeQuotaResources": [entry]}))


def test_count_entries_ask_for_whole_instances() -> None:
    assert entry_amounts({"InstanceType": "ml.p5.48xlarge", "Count": 2}) == {
        "Accelerators": 16.0, "VCpu": 384.0, "MemoryInGiB": 4096.0}


def test_accelerator_entries_fill_vcpu_and_memory_by_ratio() -> None:
    assert entry_amounts({"InstanceType": "ml.trn1.32xlarge", "Accelerators": 4}) == {
        "Accelerators": 4.0, "VCpu": 32.0, "MemoryInGiB": 128.0}
    explicit = entry_amounts({"InstanceType": "ml.trn1.32xlarge", "Accelerators": 4, "VCpu": 10})
    assert explicit["VCpu"] == 10.0


def test_vcpu_only_means_no_accelerators() -> None:
    got = entry_amounts({"InstanceType": "ml.g5.12xlarge", "VCpu": 24})
    assert got == {"Accelerators": 0.0, "VCpu": 24.0, "MemoryInGiB": 96.0}


def test_mig_partitions_count_as_their_share_of_a_gpu() -> None:
    got = entry_amounts({"InstanceType": "ml.p5.48xlarge",
                         "AcceleratorPartition": {"Type": "mig-1g.10gb", "Count": 14}})
    assert got["Accelerators"] == 2.0


def test_capacity_counts_only_running_nodes_and_excess_is_reported() -> None:
    cap = healthy_capacity([("ml.g5.12xlarge", "Running"), ("ml.g5.12xlarge", "Failure")])
    assert cap[("ml.g5.12xlarge", "Accelerators")] == 4.0
    asked = quota_amounts([{"ComputeQuotaResources": [{"InstanceType": "ml.g5.12xlarge", "Accelerators": 3}]},
                           {"ComputeQuotaResources": [{"InstanceType": "ml.g5.12xlarge", "Accelerators": 2}]}])
    excess = excess_of(asked, cap)
    assert [(e.resource, e.allocated, e.capacity) for e in excess] == [
        ("Accelerators", 5.0, 4.0), ("MemoryInGiB", 240.0, 192.0), ("VCpu", 60.0, 48.0)]


def test_fault_rules_reject_nonsense() -> None:
    with pytest.raises(ValueError, match="5xx"):
        FaultRule(FaultKind.SERVER_ERROR, status_code=404)
    with pytest.raises(ValueError, match="probability"):
        FaultRule(FaultKind.THROTTLE, probability=2)
    with pytest.raises(ValueError, match="'sometimes'"):
        FaultRule("sometimes")  # type: ignore[arg-type]
