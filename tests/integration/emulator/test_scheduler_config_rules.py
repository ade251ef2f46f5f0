"""Cluster scheduler config API rules, through a real boto3 client against the in-process emulator."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from support.emulator import EmulatorHandle, in_process_emulator

from rebalancer_tools.emulator import DEMO


@pytest.fixture
def emu() -> Iterator[EmulatorHandle]:
    with in_process_emulator(seed_demo=True) as handle:
        yield handle


def _config(classes: list[tuple[str, int]]) -> dict[str, Any]:
    return {"PriorityClasses": [{"Name": n, "Weight": w} for n, w in classes], "FairShare": "Enabled"}


def test_demo_config_describes_and_lists(emu: EmulatorHandle) -> None:
    assert emu.demo is not None
    sm = emu.sagemaker
    got = sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=emu.demo.scheduler_config_id)
    assert got["Name"] == DEMO.scheduler_config_name
    assert got["ClusterSchedulerConfigVersion"] == 1
    assert got["Status"] == "Created"
    assert [(p["Name"], p["Weight"]) for p in got["SchedulerConfig"]["PriorityClasses"]] == list(
        DEMO.priority_classes)
    listed = sm.list_cluster_scheduler_configs(ClusterArn=emu.demo.cluster_arn)["ClusterSchedulerConfigSummaries"]
    assert [c["ClusterSchedulerConfigId"] for c in listed] == [emu.demo.scheduler_config_id]


def test_one_config_per_cluster(emu: EmulatorHandle) -> None:
    assert emu.demo is not None
    with pytest.raises(emu.sagemaker.exceptions.ConflictException):
        emu.sagemaker.create_cluster_scheduler_config(Name="second", ClusterArn=emu.demo.cluster_arn,
                                                      SchedulerConfig=_config([("a", 1)]))


def test_update_versions_and_conflicts(emu: EmulatorHandle) -> None:
    assert emu.demo is not None
    sm = emu.sagemaker
    cid = emu.demo.scheduler_config_id
    out = sm.update_cluster_scheduler_config(ClusterSchedulerConfigId=cid, TargetVersion=1,
                                             SchedulerConfig=_config([("urgent", 100)]))
    assert out["ClusterSchedulerConfigVersion"] == 2
    with pytest.raises(sm.exceptions.ConflictException):
        sm.update_cluster_scheduler_config(ClusterSchedulerConfigId=cid, TargetVersion=1,
                                           SchedulerConfig=_config([("x", 1)]))
    old = sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=cid, ClusterSchedulerConfigVersion=1)
    assert len(old["SchedulerConfig"]["PriorityClasses"]) == len(DEMO.priority_classes)


def test_priority_class_limits(emu: EmulatorHandle) -> None:
    assert emu.demo is not None
    sm = emu.sagemaker
    cid = emu.demo.scheduler_config_id
    with pytest.raises(ClientError) as exc:
        sm.update_cluster_scheduler_config(ClusterSchedulerConfigId=cid, TargetVersion=1,
                                           SchedulerConfig=_config([(f"p{i}", i) for i in range(11)]))
    assert "less than or equal to 10" in exc.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as exc:
        sm.update_cluster_scheduler_config(ClusterSchedulerConfigId=cid, TargetVersion=1,
                                           SchedulerConfig=_config([("a", 1), ("a", 2)]))
    assert "duplicate names a" in exc.value.response["Error"]["Message"]


def test_delete_and_unknown_ids(emu: EmulatorHandle) -> None:
    assert emu.demo is not None
    sm = emu.sagemaker
    sm.delete_cluster_scheduler_config(ClusterSchedulerConfigId=emu.demo.scheduler_config_id)
    with pytest.raises(sm.exceptions.ResourceNotFound):
        sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=emu.demo.scheduler_config_id)
    created = sm.create_cluster_scheduler_config(Name="again", ClusterArn=emu.demo.cluster_arn,
                                                 SchedulerConfig=_config([("a", 1)]))
    assert created["ClusterSchedulerConfigArn"].endswith(created["ClusterSchedulerConfigId"])
    # a quota id is not a scheduler config id
    with pytest.raises(sm.exceptions.ResourceNotFound):
        sm.describe_cluster_scheduler_config(ClusterSchedulerConfigId=emu.demo.quota_ids["research"])


def test_deleting_waits_for_describe_calls_when_transitions_are_slow(emu: EmulatorHandle) -> None:
    assert emu.demo is not None
    emu.emulator.set_transition_reads(1)
    sm = emu.sagemaker
    qid = emu.demo.quota_ids["platform"]
    sm.delete_compute_quota(ComputeQuotaId=qid)
    assert sm.describe_compute_quota(ComputeQuotaId=qid)["Status"] == "Deleting"
    with pytest.raises(sm.exceptions.ResourceNotFound):
        sm.describe_compute_quota(ComputeQuotaId=qid)
