"""Every failure status a write can end in (SchedulerResourceStatus: CreateFailed, CreateRollbackFailed,
UpdateFailed, UpdateRollbackFailed, DeleteFailed, DeleteRollbackFailed), produced by the emulator: the writer
reports each as a failure naming the status and what it leaves behind, and its rollback leaves nothing of the run
in place (or says, in one line, which quota it could not undo)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import botocore.session
import pytest
from botocore.stub import Stubber
from support.fake_clock import FakeClock
from support.five_teams import BEFORE, config, gpus, setup_cluster, violations

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.sagemaker.cluster import SageMakerReader
from rebalancer.adapters.sagemaker.quota_writer import FAILED_MEANS, Poller, QuotaWriter, raise_for_report
from rebalancer.adapters.sagemaker.scheduler_config import SchedulerConfigClient
from rebalancer.domain.plan import QuotaRequest, SchedulerRequest
from rebalancer.errors import ApplyFailed
from rebalancer_tools.emulator.control import Emulator
from rebalancer_tools.emulator.faults import FaultRule
from rebalancer_tools.packaging.sdk_model import sagemaker_model


def writer(aws: AwsClients, clock: FakeClock) -> QuotaWriter:
    return QuotaWriter(aws.client("sagemaker"), Poller(sleep=clock.sleep, clock=clock, interval=2, timeout=60))


def update(quota: Any, gpus_: int) -> QuotaRequest:
    return QuotaRequest(operation="UpdateComputeQuota", team=quota.team, parameters={
        "ComputeQuotaId": quota.ComputeQuotaId, "TargetVersion": quota.ComputeQuotaVersion,
        "ComputeQuotaConfig": config(gpus_), "ComputeQuotaTarget": {"TeamName": quota.team, "FairShareWeight": 10}})


def create(arn: str) -> QuotaRequest:
    return QuotaRequest(operation="CreateComputeQuota", team="f", parameters={
        "Name": "f-quota", "ClusterArn": arn, "ComputeQuotaConfig": config(0),
        "ComputeQuotaTarget": {"TeamName": "f", "FairShareWeight": 10}})


def test_the_emulator_and_the_writer_know_every_failure_status_of_the_model() -> None:
    statuses = sagemaker_model().shape_for("SchedulerResourceStatus").enum  # type: ignore[attr-defined]
    failed = {s for s in statuses if s.endswith("Failed")}
    assert failed == set(FAILED_MEANS)
    for status in failed:
        assert FaultRule("failed", status=status).status == status  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="UpdateFailed cannot be the outcome of CreateComputeQuota"):
        FaultRule("failed", "CreateComputeQuota", status="UpdateFailed")  # type: ignore[arg-type]


@pytest.mark.parametrize("status", ["CreateFailed", "CreateRollbackFailed"])
def test_a_create_that_fails_is_deleted_by_the_rollback(emu: Emulator, aws: AwsClients, clock: FakeClock,
                                                        status: str) -> None:
    arn, before = setup_cluster(emu, aws.client("sagemaker"))
    a = next(q for q in before if q.team == "a")
    emu.inject("failed", "CreateComputeQuota", status=status, reason="no capacity for team f")
    report = writer(aws, clock).apply(arn, [update(a, 9), create(arn)], before)
    assert not report.succeeded
    failed = report.outcomes[1]
    assert (failed.operation, failed.result, failed.status) == ("CreateComputeQuota", "failed", status)
    assert report.error == (f"quota {failed.quota_id} of team f ended in {status} ({FAILED_MEANS[status]}): "
                            "no capacity for team f")
    assert report.rolled_back is True, report.lines()
    emu.settle()
    assert "f" not in gpus(emu)  # the failed quota is gone
    assert gpus(emu) == BEFORE
    assert violations(emu, arn) == []
    with pytest.raises(ApplyFailed, match=f"{status}.*; rolled back$"):
        raise_for_report(report)


@pytest.mark.parametrize("status", ["UpdateFailed", "UpdateRollbackFailed"])
def test_an_update_that_fails_is_restored_by_the_rollback(emu: Emulator, aws: AwsClients, clock: FakeClock,
                                                          status: str) -> None:
    arn, before = setup_cluster(emu, aws.client("sagemaker"))
    by_team = {q.team: q for q in before}
    emu.inject("failed", "UpdateComputeQuota", team="c", status=status)
    report = writer(aws, clock).apply(arn, [update(by_team["a"], 8), update(by_team["c"], 8)], before)
    assert [(o.result, o.status) for o in report.outcomes] == [("applied", "Updated"), ("failed", status)]
    assert FAILED_MEANS[status] in (report.error or "")
    assert report.rolled_back is True, report.lines()
    now = {q.team: q for q in SageMakerReader(aws.client("sagemaker")).quotas(arn)}
    for team in ("a", "c"):  # an UpdateRollbackFailed kept the new config: the rollback writes the old one again
        assert now[team].ComputeQuotaConfig == by_team[team].ComputeQuotaConfig
        assert now[team].Status == "Updated"
    assert gpus(emu) == BEFORE
    assert violations(emu, arn) == []


@pytest.mark.parametrize("status", ["DeleteFailed", "DeleteRollbackFailed"])
def test_a_delete_the_rollback_cannot_finish_is_reported_not_hidden(emu: Emulator, aws: AwsClients,
                                                                    clock: FakeClock, status: str) -> None:
    arn, before = setup_cluster(emu, aws.client("sagemaker"))
    b = next(q for q in before if q.team == "b")
    emu.inject("update-failed", "UpdateComputeQuota", team="b")
    emu.inject("failed", "DeleteComputeQuota", status=status, reason="the team still has workloads")
    report = writer(aws, clock).apply(arn, [create(arn), update(b, 9)], before)
    assert report.rolled_back is False
    [delete] = [o for o in report.rollback if o.operation == "DeleteComputeQuota"]
    assert (delete.result, delete.status) == ("failed", status)
    assert f"ended in {status} ({FAILED_MEANS[status]}): the team still has workloads" in delete.message
    with pytest.raises(ApplyFailed, match=r"ROLLBACK INCOMPLETE$") as e:
        raise_for_report(report)
    assert "\n" not in str(e.value)
    assert gpus(emu)["b"] == BEFORE["b"]


# --- versions: learned from a Describe, never assumed ---------------------------------------------------------------
def _stubbed() -> tuple[Any, Stubber]:
    sm = botocore.session.get_session().create_client("sagemaker", region_name="us-east-1",
                                                      aws_access_key_id="x", aws_secret_access_key="x")
    return sm, Stubber(sm)


def _described(version: int, status: str) -> dict[str, Any]:
    return {"ComputeQuotaArn": "arn:aws:sagemaker:us-east-1:123456789012:compute-quota/q1a2b3c4d5e6",
            "ComputeQuotaId": "q1a2b3c4d5e6", "Name": "f-quota", "ComputeQuotaVersion": version, "Status": status,
            "ComputeQuotaTarget": {"TeamName": "f"}, "ComputeQuotaConfig": {"ComputeQuotaResources": []},
            "CreationTime": datetime(2026, 11, 30, tzinfo=UTC)}


def test_the_version_of_a_created_quota_is_read_back() -> None:
    sm, stub = _stubbed()
    arn = "arn:aws:sagemaker:us-east-1:123456789012:cluster/a1b2c3d4e5f6"
    stub.add_response("create_compute_quota", {"ComputeQuotaArn": _described(3, "Creating")["ComputeQuotaArn"],
                                               "ComputeQuotaId": "q1a2b3c4d5e6"})
    stub.add_response("describe_compute_quota", _described(3, "Creating"), {"ComputeQuotaId": "q1a2b3c4d5e6"})
    stub.add_response("describe_compute_quota", _described(3, "Created"), {"ComputeQuotaId": "q1a2b3c4d5e6"})
    with stub:
        report = QuotaWriter(sm, Poller(sleep=lambda _s: None, clock=lambda: 0.0)).apply(arn, [create(arn)], [])
    assert report.succeeded, report.lines()
    assert [(o.quota_id, o.version, o.status) for o in report.outcomes] == [("q1a2b3c4d5e6", 3, "Created")]


def test_a_created_quota_whose_version_cannot_be_read_is_still_rolled_back() -> None:
    sm, stub = _stubbed()
    arn = "arn:aws:sagemaker:us-east-1:123456789012:cluster/a1b2c3d4e5f6"
    stub.add_response("create_compute_quota", {"ComputeQuotaArn": _described(1, "Creating")["ComputeQuotaArn"],
                                               "ComputeQuotaId": "q1a2b3c4d5e6"})
    stub.add_client_error("describe_compute_quota", "AccessDeniedException", "not authorized", 400)
    stub.add_response("delete_compute_quota", {}, {"ComputeQuotaId": "q1a2b3c4d5e6"})
    stub.add_client_error("describe_compute_quota", "ResourceNotFound", "gone", 400)
    with stub:
        report = QuotaWriter(sm, Poller(sleep=lambda _s: None, clock=lambda: 0.0)).apply(arn, [create(arn)], [])
    assert not report.succeeded
    assert report.outcomes[0].result == "failed"
    assert "q1a2b3c4d5e6 was created but reading its version failed" in (report.error or "")
    assert [(o.operation, o.result) for o in report.rollback] == [("DeleteComputeQuota", "applied")]
    assert report.rolled_back is True


def test_the_version_of_a_created_scheduler_config_is_read_back() -> None:
    sm, stub = _stubbed()
    arn = "arn:aws:sagemaker:us-east-1:123456789012:cluster/a1b2c3d4e5f6"
    config_arn = "arn:aws:sagemaker:us-east-1:123456789012:cluster-scheduler-config/s1a2b3c4d5e6"
    stub.add_response("create_cluster_scheduler_config", {"ClusterSchedulerConfigArn": config_arn,
                                                           "ClusterSchedulerConfigId": "s1a2b3c4d5e6"})
    stub.add_response("describe_cluster_scheduler_config", {
        "ClusterSchedulerConfigArn": config_arn, "ClusterSchedulerConfigId": "s1a2b3c4d5e6", "Name": "c-scheduler",
        "ClusterSchedulerConfigVersion": 2, "Status": "Creating", "CreationTime": datetime(2026, 11, 30, tzinfo=UTC)})
    with stub:
        written = SchedulerConfigClient(sm).write(SchedulerRequest(
            operation="CreateClusterSchedulerConfig",
            parameters={"Name": "c-scheduler", "ClusterArn": arn, "SchedulerConfig": {"FairShare": "Enabled"}}))
    assert written == ("s1a2b3c4d5e6", 2)
