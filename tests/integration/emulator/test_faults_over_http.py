"""Fault injection and the invariant monitor, over HTTP on loopback with real boto3 clients."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from support.emulator import EmulatorHandle, http_emulator

from rebalancer_tools.emulator import DEMO, FaultKind

P5, TRN1, G5 = "ml.p5.48xlarge", "ml.trn1.32xlarge", "ml.g5.12xlarge"


@pytest.fixture
def emu() -> Iterator[EmulatorHandle]:
    with http_emulator(seed_demo=True) as handle:
        yield handle


def _qid(emu: EmulatorHandle, team: str) -> str:
    assert emu.demo is not None
    return emu.demo.quota_ids[team]


def _set_p5(sm: Any, qid: str, version: int, amount: int) -> int:
    out = sm.update_compute_quota(ComputeQuotaId=qid, TargetVersion=version, ComputeQuotaConfig={
        "ComputeQuotaResources": [{"InstanceType": P5, "Accelerators": amount}]})
    return int(out["ComputeQuotaVersion"])


def test_throttling_is_retried_by_botocore_and_then_succeeds(emu: EmulatorHandle) -> None:
    emu.emulator.inject(FaultKind.THROTTLE, "UpdateComputeQuota", times=3)
    sm = emu.client(max_attempts=5)
    version = _set_p5(sm, _qid(emu, "research"), 1, 10)
    assert version == 2
    assert [f.kind for f in emu.emulator.faults.log] == [FaultKind.THROTTLE] * 3


def test_throttling_beyond_the_retry_budget_surfaces_as_throttling_exception(emu: EmulatorHandle) -> None:
    emu.emulator.inject(FaultKind.THROTTLE, "DescribeComputeQuota", times=None)
    sm = emu.client(max_attempts=2)
    with pytest.raises(ClientError) as exc:
        sm.describe_compute_quota(ComputeQuotaId=_qid(emu, "research"))
    assert exc.value.response["Error"]["Code"] == "ThrottlingException"
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert exc.value.response["ResponseMetadata"]["RetryAttempts"] == 1


def test_a_throttled_write_has_no_effect(emu: EmulatorHandle) -> None:
    emu.emulator.inject(FaultKind.THROTTLE, "UpdateComputeQuota", times=1)
    sm = emu.client(max_attempts=1)
    with pytest.raises(ClientError):
        _set_p5(sm, _qid(emu, "research"), 1, 10)
    assert emu.emulator.quota("research-quota")["ComputeQuotaVersion"] == 1


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_carry_their_status_and_are_retried(emu: EmulatorHandle, status: int) -> None:
    emu.emulator.inject(FaultKind.SERVER_ERROR, "ListClusterNodes", times=1, status_code=status)
    sm = emu.client(max_attempts=3)
    out = sm.list_cluster_nodes(ClusterName=DEMO.cluster_name)
    assert out["ResponseMetadata"]["RetryAttempts"] == 1
    emu.emulator.inject(FaultKind.SERVER_ERROR, "ListClusterNodes", times=1, status_code=status)
    once = emu.client(max_attempts=1)
    with pytest.raises(ClientError) as exc:
        once.list_cluster_nodes(ClusterName=DEMO.cluster_name)
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == status


def test_faults_match_on_team_and_skip_the_first_calls(emu: EmulatorHandle) -> None:
    emu.emulator.inject(FaultKind.THROTTLE, "DescribeComputeQuota", team="training", skip=1, times=1)
    sm = emu.client(max_attempts=1)
    sm.describe_compute_quota(ComputeQuotaId=_qid(emu, "research"))  # another team: untouched
    sm.describe_compute_quota(ComputeQuotaId=_qid(emu, "training"))  # skipped
    with pytest.raises(ClientError):
        sm.describe_compute_quota(ComputeQuotaId=_qid(emu, "training"))
    sm.describe_compute_quota(ComputeQuotaId=_qid(emu, "training"))  # times=1: spent


def test_probabilistic_faults_repeat_with_the_same_seed(emu: EmulatorHandle) -> None:
    def pattern(seed: int) -> list[bool]:
        emu.emulator.clear_faults()
        emu.emulator.seed_faults(seed)
        emu.emulator.inject(FaultKind.THROTTLE, "ListComputeQuotas", times=None, probability=0.5)
        sm = emu.client(max_attempts=1)
        out = []
        for _ in range(12):
            try:
                sm.list_compute_quotas()
                out.append(True)
            except ClientError:
                out.append(False)
        return out

    first = pattern(7)
    assert pattern(7) == first
    assert True in first
    assert False in first


def test_update_failed_keeps_the_config_and_reports_a_reason(emu: EmulatorHandle) -> None:
    emu.emulator.set_transition_reads(1)
    emu.emulator.inject(FaultKind.UPDATE_FAILED, "UpdateComputeQuota", team="inference")
    sm = emu.sagemaker
    qid = _qid(emu, "inference")
    before = sm.describe_compute_quota(ComputeQuotaId=qid)["ComputeQuotaConfig"]
    version = _set_p5(sm, qid, 1, 1)
    first = sm.describe_compute_quota(ComputeQuotaId=qid)
    final = sm.describe_compute_quota(ComputeQuotaId=qid)
    assert first["Status"] == "Updating"
    assert final["Status"] == "UpdateFailed"
    assert final["FailureReason"]
    assert final["ComputeQuotaVersion"] == version
    assert final["ComputeQuotaConfig"] == before
    # the next update starts from the failed version, and succeeds
    assert _set_p5(sm, qid, version, 3) == version + 1
    emu.emulator.settle()
    assert sm.describe_compute_quota(ComputeQuotaId=qid)["Status"] == "Updated"


def test_slow_transition_adds_describe_calls_for_that_quota_only(emu: EmulatorHandle) -> None:
    emu.emulator.inject(FaultKind.SLOW, "UpdateComputeQuota", team="training", extra_reads=3)
    sm = emu.sagemaker
    _set_p5(sm, _qid(emu, "research"), 1, 12)
    _set_p5(sm, _qid(emu, "training"), 1, 12)
    assert sm.describe_compute_quota(ComputeQuotaId=_qid(emu, "research"))["Status"] == "Updated"
    seen = [sm.describe_compute_quota(ComputeQuotaId=_qid(emu, "training"))["Status"] for _ in range(4)]
    assert seen == ["Updating"] * 3 + ["Updated"]


def test_external_edit_between_read_and_write_is_a_conflict_not_an_overwrite(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    qid = _qid(emu, "research")
    read = sm.describe_compute_quota(ComputeQuotaId=qid)
    emu.emulator.inject(FaultKind.EXTERNAL_EDIT, "UpdateComputeQuota", team="research")
    with pytest.raises(sm.exceptions.ConflictException):
        _set_p5(sm, qid, read["ComputeQuotaVersion"], 16)
    now = sm.describe_compute_quota(ComputeQuotaId=qid)
    assert now["ComputeQuotaVersion"] == read["ComputeQuotaVersion"] + 1
    assert now["ComputeQuotaConfig"] != read["ComputeQuotaConfig"]
    assert {"InstanceType": P5, "Accelerators": 16} not in now["ComputeQuotaConfig"]["ComputeQuotaResources"]


def test_external_edit_with_a_given_config(emu: EmulatorHandle) -> None:
    edit = {"ComputeQuotaTarget": {"TeamName": "research", "FairShareWeight": 77}}
    version = emu.emulator.external_edit("research-quota", edit)
    got = emu.sagemaker.describe_compute_quota(ComputeQuotaId=_qid(emu, "research"))
    assert version == 2
    assert got["ComputeQuotaTarget"]["FairShareWeight"] == 77


def test_invariant_monitor_records_raising_before_lowering(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    start = emu.emulator.monitor.last_seq
    # Move 4 H100s from research to training the wrong way round: increase first.
    _set_p5(sm, _qid(emu, "training"), 1, 16)
    _set_p5(sm, _qid(emu, "research"), 1, 8)
    bad = emu.emulator.monitor.violations(since=start)
    assert len(bad) == 1
    assert bad[0].target == "training-quota"
    excess = {e.resource: (e.allocated, e.capacity) for e in bad[0].excess}
    assert excess["Accelerators"] == (36.0, 32.0)
    # ...and the right way round: decrease first, then increase.
    start = emu.emulator.monitor.last_seq
    _set_p5(sm, _qid(emu, "research"), 2, 4)
    _set_p5(sm, _qid(emu, "inference"), 1, 8)
    assert emu.emulator.monitor.violations(since=start) == []


def test_disabled_quotas_do_not_count_towards_capacity(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    sm.update_compute_quota(ComputeQuotaId=_qid(emu, "data-science"), TargetVersion=1, ActivationState="Disabled")
    start = emu.emulator.monitor.last_seq
    _set_p5(sm, _qid(emu, "research"), 1, 16)
    assert emu.emulator.monitor.violations(since=start) == []


def test_a_node_failure_shows_in_the_api_and_in_the_monitor(emu: EmulatorHandle) -> None:
    sm = emu.sagemaker
    emu.emulator.fail_node(DEMO.cluster_name, "gpu-p5-2", "GPU ECC errors")
    node = sm.describe_cluster_node(ClusterName=DEMO.cluster_name, NodeId="gpu-p5-2")["NodeDetails"]
    assert node["InstanceStatus"] == {"Status": "Failure", "Message": "GPU ECC errors"}
    summaries = sm.list_cluster_nodes(ClusterName=DEMO.cluster_name)["ClusterNodeSummaries"]
    assert {n["InstanceId"]: n["InstanceStatus"]["Status"] for n in summaries}["gpu-p5-2"] == "Failure"
    last = emu.emulator.monitor.records[-1]
    assert last.operation == "control:node-status"
    assert {(e.instance_type, e.resource) for e in last.excess} >= {(P5, "Accelerators")}
    assert emu.emulator.monitor.violations(api_only=True) == []
    emu.emulator.heal_node(DEMO.cluster_name, "gpu-p5-2")
    assert emu.emulator.monitor.records[-1].ok
