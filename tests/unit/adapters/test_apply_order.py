"""What counts as raising a quota, for the apply order (pure: no AWS)."""

from __future__ import annotations

from typing import Any

from rebalancer.adapters.sagemaker.quota_writer import raises_any, same_state
from rebalancer.domain.quotas import ComputeQuota

P5, M5 = "ml.p5.48xlarge", "ml.m5.4xlarge"


def quota(*resources: dict[str, Any], state: str = "Enabled") -> ComputeQuota:
    return ComputeQuota.model_validate({
        "ComputeQuotaId": "q1", "Name": "a-quota", "ComputeQuotaVersion": 1, "Status": "Created",
        "ComputeQuotaTarget": {"TeamName": "a"}, "ActivationState": state,
        "ComputeQuotaConfig": {"ComputeQuotaResources": list(resources)}})


def test_count_and_accelerators_compare_in_gpus() -> None:
    two_nodes = quota({"InstanceType": P5, "Count": 2})  # 16 GPUs
    assert not raises_any(two_nodes, quota({"InstanceType": P5, "Accelerators": 12}))
    assert raises_any(two_nodes, quota({"InstanceType": P5, "Accelerators": 17}))


def test_a_new_type_or_mig_pool_is_a_raise() -> None:
    before = quota({"InstanceType": P5, "Accelerators": 8})
    assert raises_any(before, quota({"InstanceType": P5, "Accelerators": 8}, {"InstanceType": M5, "VCpu": 4}))
    assert raises_any(before, quota({"InstanceType": P5, "Accelerators": 8},
                                    {"InstanceType": P5, "AcceleratorPartition": {"Type": "mig-1g.10gb",
                                                                                   "Count": 7}}))


def test_mixed_change_is_a_raise_and_pure_decrease_is_not() -> None:
    before = quota({"InstanceType": P5, "Accelerators": 8}, {"InstanceType": M5, "VCpu": 16})
    assert raises_any(before, quota({"InstanceType": P5, "Accelerators": 4}, {"InstanceType": M5, "VCpu": 32}))
    assert not raises_any(before, quota({"InstanceType": P5, "Accelerators": 4}))


def test_enabling_raises_and_disabling_lowers() -> None:
    on = quota({"InstanceType": P5, "Accelerators": 8})
    off = quota({"InstanceType": P5, "Accelerators": 8}, state="Disabled")
    assert raises_any(off, on)
    assert not raises_any(on, off)


def test_same_state_ignores_version_and_status() -> None:
    a = quota({"InstanceType": P5, "Accelerators": 8})
    b = a.model_copy(update={"ComputeQuotaVersion": 7, "Status": "Updated"})
    assert same_state(a, b)
    assert not same_state(a, quota({"InstanceType": P5, "Accelerators": 9}))
