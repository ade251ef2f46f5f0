"""The emulator keeps each cluster's allocated totals write by write (rebalancer_tools.emulator.allocations); after a
write through every path that changes a quota, the totals equal a fresh sum over the quotas as Describe shows them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from support.emulator import EmulatorHandle, in_process_emulator

from rebalancer_tools.emulator import capacity
from rebalancer_tools.emulator.control import GroupSpec

P5 = "ml.p5.48xlarge"
CLUSTER = "totals"
NOT_HOLDING = ("CreateFailed", "CreateRollbackFailed")


@pytest.fixture
def emu() -> Iterator[EmulatorHandle]:
    with in_process_emulator() as handle:
        handle.emulator.create_cluster(CLUSTER, [GroupSpec("g", P5, 2)])
        yield handle


def rescanned(emu: EmulatorHandle) -> dict[capacity.Key, float]:
    """What the live, enabled quotas that did not fail to be created ask for, summed afresh."""
    out: dict[capacity.Key, float] = defaultdict(float)
    for q in emu.emulator.quotas(CLUSTER):
        if q["Status"] in NOT_HOLDING or q.get("ActivationState", "Enabled") != "Enabled":
            continue
        for key, amount in capacity.quota_amounts([q["ComputeQuotaConfig"]]).items():
            if amount:
                out[key] += amount
    return dict(out)


def assert_fresh(emu: EmulatorHandle) -> None:
    got, want = emu.emulator.allocated(CLUSTER), rescanned(emu)
    assert sorted(got) == sorted(want)
    assert got == pytest.approx(want, rel=1e-12)


def create(emu: EmulatorHandle, team: str, entry: dict[str, Any], **extra: Any) -> str:
    return str(emu.sagemaker.create_compute_quota(
        Name=f"{team}-q", ClusterArn=emu.emulator.cluster_arn(CLUSTER),
        ComputeQuotaConfig={"ComputeQuotaResources": [{"InstanceType": P5, **entry}]},
        ComputeQuotaTarget={"TeamName": team}, **extra)["ComputeQuotaId"])


def update(emu: EmulatorHandle, quota_id: str, entry: dict[str, Any] | None = None, **extra: Any) -> None:
    version = emu.sagemaker.describe_compute_quota(ComputeQuotaId=quota_id)["ComputeQuotaVersion"]
    if entry is not None:
        extra["ComputeQuotaConfig"] = {"ComputeQuotaResources": [{"InstanceType": P5, **entry}]}
    emu.sagemaker.update_compute_quota(ComputeQuotaId=quota_id, TargetVersion=version, **extra)


def status(emu: EmulatorHandle, quota_id: str) -> str:
    return str(emu.sagemaker.describe_compute_quota(ComputeQuotaId=quota_id)["Status"])


def test_the_totals_follow_every_write_that_settles_at_once(emu: EmulatorHandle) -> None:
    a = create(emu, "a", {"Accelerators": 4})
    b = create(emu, "b", {"AcceleratorPartition": {"Type": "mig-1g.10gb", "Count": 3}})  # 3/7 of a GPU
    c = create(emu, "c", {"Accelerators": 2}, ActivationState="Disabled")
    assert emu.emulator.allocated(CLUSTER)[(P5, "Accelerators")] == pytest.approx(4 + 3 / 7)
    assert_fresh(emu)
    update(emu, a, {"Accelerators": 6})
    assert_fresh(emu)
    update(emu, c, ActivationState="Enabled")
    assert_fresh(emu)
    emu.emulator.inject("failed", "UpdateComputeQuota", team="b", status="UpdateFailed")
    update(emu, b, {"Accelerators": 5})  # restored: b still asks for its partitions
    assert status(emu, b) == "UpdateFailed"
    assert_fresh(emu)
    emu.emulator.inject("failed", "UpdateComputeQuota", team="a", status="UpdateRollbackFailed")
    update(emu, a, {"Accelerators": 7})  # kept, partly applied
    assert_fresh(emu)
    emu.emulator.inject("failed", "CreateComputeQuota", status="CreateRollbackFailed")
    d = create(emu, "d", {"Accelerators": 8})
    assert status(emu, d) == "CreateRollbackFailed"
    assert_fresh(emu)
    emu.emulator.external_edit("a-q")  # the console lowers a by one
    assert_fresh(emu)
    emu.emulator.inject("external-edit", "UpdateComputeQuota", team="c", edit={"ActivationState": "Disabled"})
    with pytest.raises(ClientError, match="changed since it was read"):
        update(emu, c, {"Accelerators": 1})
    assert_fresh(emu)
    emu.sagemaker.delete_compute_quota(ComputeQuotaId=c)
    emu.sagemaker.delete_compute_quota(ComputeQuotaId=a)
    assert_fresh(emu)
    assert set(emu.emulator.allocated(CLUSTER)) == {(P5, r) for r in capacity.RESOURCES}  # b's partitions only


def test_the_totals_follow_transitions_that_settle_on_describe(emu: EmulatorHandle) -> None:
    a = create(emu, "a", {"Accelerators": 4})
    b = create(emu, "b", {"Accelerators": 2})
    emu.emulator.set_transition_reads(2)
    emu.emulator.inject("failed", "CreateComputeQuota", team="f", status="CreateFailed")
    f = create(emu, "f", {"Accelerators": 8})  # counts while Creating
    assert emu.emulator.allocated(CLUSTER)[(P5, "Accelerators")] == 14
    assert_fresh(emu)
    while status(emu, f) == "Creating":
        assert_fresh(emu)
    assert_fresh(emu)
    emu.emulator.inject("failed", "UpdateComputeQuota", team="a", status="UpdateFailed")
    update(emu, a, {"Accelerators": 1})  # counts as updated until the failure shows
    assert emu.emulator.allocated(CLUSTER)[(P5, "Accelerators")] == 3
    assert_fresh(emu)
    emu.emulator.settle()
    assert emu.emulator.allocated(CLUSTER)[(P5, "Accelerators")] == 6
    emu.sagemaker.delete_compute_quota(ComputeQuotaId=b)
    assert_fresh(emu)
    for _ in range(2):  # the transition reads
        assert status(emu, b) == "Deleting"
        assert_fresh(emu)
    with pytest.raises(ClientError, match="not found"):
        status(emu, b)  # the read that settles it removes it
    assert_fresh(emu)
    emu.sagemaker.delete_compute_quota(ComputeQuotaId=a)
    emu.emulator.settle()
    assert emu.emulator.allocated(CLUSTER) == {}
    assert_fresh(emu)
