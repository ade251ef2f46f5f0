"""SchedulerConfigClient.write / restore against the emulator: the Rollback step's undo of our scheduler-config
write uses a fresh TargetVersion, leaves a config someone edited after our write alone, and deletes a config we
created."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.emulator import EmulatorHandle, in_process_emulator

from rebalancer.adapters.sagemaker.quota_writer import Poller
from rebalancer.adapters.sagemaker.scheduler_config import SchedulerConfigClient
from rebalancer.domain.plan import SchedulerRequest
from rebalancer_tools.emulator import DEMO
from rebalancer_tools.emulator.resources import Kind

CLUSTER = DEMO.cluster_name


@pytest.fixture
def emu() -> Iterator[EmulatorHandle]:
    with in_process_emulator(seed_demo=True) as handle:
        yield handle


def client(emu: EmulatorHandle) -> SchedulerConfigClient:
    ticks = iter(range(10_000))
    return SchedulerConfigClient(emu.sagemaker, Poller(sleep=lambda _s: emu.emulator.settle(),
                                                       clock=lambda: float(next(ticks)), interval=1, timeout=50))


def ours(emu: EmulatorHandle, configs: SchedulerConfigClient) -> tuple[str, int]:
    """Our write: idle-resource sharing off, settled. (config id, the version it produced)."""
    current = configs.read(emu.emulator.cluster_arn(CLUSTER))
    assert current is not None
    config_id, version = configs.write(SchedulerRequest(operation="UpdateClusterSchedulerConfig", parameters={
        "ClusterSchedulerConfigId": current.ClusterSchedulerConfigId,
        "TargetVersion": current.ClusterSchedulerConfigVersion,
        "SchedulerConfig": {**current.SchedulerConfig, "IdleResourceSharing": "Disabled"}}))
    assert version == current.ClusterSchedulerConfigVersion + 1
    configs.wait(config_id)
    return config_id, version


def test_restore_puts_the_config_back_with_the_version_it_reads(emu: EmulatorHandle) -> None:
    configs = client(emu)
    before = configs.read(emu.emulator.cluster_arn(CLUSTER))
    assert before is not None
    config_id, version = ours(emu, configs)
    undo = configs.restore(config_id, before, version)
    assert (undo.result, undo.target_version, undo.version) == ("applied", version, version + 1)
    now = configs.describe(config_id)
    assert now.SchedulerConfig == before.SchedulerConfig
    assert configs.restore(config_id, before, now.ClusterSchedulerConfigVersion).result == "unchanged"


def test_an_edit_made_after_our_write_is_left_alone(emu: EmulatorHandle) -> None:
    configs = client(emu)
    before = configs.read(emu.emulator.cluster_arn(CLUSTER))
    assert before is not None
    config_id, version = ours(emu, configs)
    edited = emu.emulator.external_edit(before.Name, cluster=CLUSTER, kind=Kind.SCHEDULER_CONFIG)
    seen = configs.describe(config_id)
    undo = configs.restore(config_id, before, version)
    assert undo.result == "conflict"
    assert f"our version {version}, now {edited}" in undo.message
    assert configs.describe(config_id) == seen  # not written


def test_a_config_we_created_is_deleted(emu: EmulatorHandle) -> None:
    configs = client(emu)
    arn = emu.emulator.cluster_arn(CLUSTER)
    seeded = configs.read(arn)
    assert seeded is not None
    emu.sagemaker.delete_cluster_scheduler_config(ClusterSchedulerConfigId=seeded.ClusterSchedulerConfigId)
    emu.emulator.settle()
    created = configs.apply(SchedulerRequest(operation="CreateClusterSchedulerConfig", parameters={
        "Name": "ours", "ClusterArn": arn, "SchedulerConfig": {"FairShare": "Disabled"}}))
    undo = configs.restore(created.ClusterSchedulerConfigId, None, created.ClusterSchedulerConfigVersion)
    assert (undo.operation, undo.result) == ("DeleteClusterSchedulerConfig", "applied")
    emu.emulator.settle()
    assert configs.read(arn) is None
