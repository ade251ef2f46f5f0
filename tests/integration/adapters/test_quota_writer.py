"""Applying, verifying and rolling back quota changes against the emulator over HTTP.

The cluster: 4 × ml.p5.48xlarge = 32 GPUs, held by five teams (10, 8, 6, 4, 4). The change set moves 6 GPUs:
a 10→6 and b 8→6 first, then c 6→8, d 4→6, e 4→6. Raising any quota before the decreases settle would sum above
the capacity, which the emulator's invariant monitor records.
"""

from __future__ import annotations

import pytest
from support import five_teams
from support.fake_clock import FakeClock, FakeTime
from support.five_teams import AFTER, BEFORE, ORDER, config, gpus, plan_requests, violations, writer

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.sagemaker.cluster import SageMakerReader
from rebalancer.adapters.sagemaker.quota_writer import raise_for_report
from rebalancer.domain.plan import QuotaRequest
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.errors import ApplyFailed, ConflictError, TransientError
from rebalancer_tools.emulator.control import Emulator


def setup_cluster(emu: Emulator, aws: AwsClients) -> tuple[str, tuple[ComputeQuota, ...]]:
    return five_teams.setup_cluster(emu, aws.client("sagemaker"))


def test_apply_settles_decreases_before_increases(emu: Emulator, aws: AwsClients, clock: FakeClock) -> None:
    arn, before = setup_cluster(emu, aws)
    emu.set_transition_reads(2)
    report = writer(aws, clock).apply(arn, plan_requests(before), before)
    assert report.succeeded, report.lines()
    assert gpus(emu) == AFTER
    assert [o.result for o in report.outcomes] == ["applied"] * 5
    assert [o.status for o in report.outcomes] == ["Updated"] * 5
    assert all(o.version == 2 for o in report.outcomes)
    assert violations(emu, arn) == []
    assert clock.sleeps  # statuses lagged, so the writer had to poll


def test_increases_wait_until_the_decreases_read_as_updated(emu: Emulator, aws: AwsClients,
                                                             clock: FakeClock) -> None:
    """The monitor counts a quota at its new value as soon as it is written; this checks the wire order instead:
    no increase is sent before every decrease has been read back as Updated."""
    arn, before = setup_cluster(emu, aws)
    emu.set_transition_reads(2)
    sm = aws.client("sagemaker")
    wire: list[tuple[str, str, str]] = []
    sm.meta.events.register("before-parameter-build.sagemaker.UpdateComputeQuota",
                            lambda params, **_: wire.append(("update", params["ComputeQuotaId"], "")))
    sm.meta.events.register("after-call.sagemaker.DescribeComputeQuota",
                            lambda parsed, **_: wire.append(("read", parsed["ComputeQuotaId"], parsed["Status"])))
    team_of = {q.ComputeQuotaId: q.team for q in before}
    assert writer(aws, clock).apply(arn, plan_requests(before), before).succeeded
    first_increase = next(i for i, (kind, qid, _) in enumerate(wire) if kind == "update" and team_of[qid] == "c")
    settled_before = {team_of[qid] for kind, qid, status in wire[:first_increase]
                      if kind == "read" and status == "Updated"}
    assert settled_before == {"a", "b"}
    assert [team_of[qid] for kind, qid, _ in wire if kind == "update"] == ORDER


def test_the_same_requests_in_the_wrong_order_would_trip_the_monitor(emu: Emulator, aws: AwsClients,
                                                                     clock: FakeClock) -> None:
    """The invariant check above can fail: raising first sums above capacity."""
    arn, before = setup_cluster(emu, aws)
    requests = list(reversed(plan_requests(before)))
    sm = aws.client("sagemaker")
    for r in requests:
        sm.update_compute_quota(**r.parameters)
    assert violations(emu, arn)


def test_throttling_storm_still_completes(emu: Emulator, aws: AwsClients, clock: FakeClock,
                                          backoff: FakeTime) -> None:
    arn, before = setup_cluster(emu, aws)
    emu.seed_faults(7)
    storm = emu.inject("throttle", None, times=None, probability=0.5)
    report = writer(aws, clock).apply(arn, plan_requests(before), before)
    assert report.succeeded, report.lines()
    assert gpus(emu) == AFTER
    assert storm.fired >= 5
    assert len(backoff.slept) == storm.fired  # every throttled call was retried by botocore
    assert violations(emu, arn) == []


def test_external_edit_is_never_overwritten(emu: Emulator, aws: AwsClients, clock: FakeClock) -> None:
    arn, before = setup_cluster(emu, aws)
    edit = {"ComputeQuotaConfig": config(3)}
    emu.inject("external-edit", "UpdateComputeQuota", team="c", edit=edit)
    report = writer(aws, clock).apply(arn, plan_requests(before), before)
    assert not report.succeeded
    assert report.conflict
    assert [o.result for o in report.outcomes] == ["applied", "applied", "conflict", "not-attempted",
                                                   "not-attempted"]
    assert "we read version 1, it is now version 2" in (report.error or "")
    assert "Stopped without overwriting it" in (report.error or "")
    # c keeps the admin's edit; a and b are back where they were; d and e were never touched
    assert gpus(emu) == {"a": 10, "b": 8, "c": 3, "d": 4, "e": 4}
    assert report.rolled_back is True
    assert violations(emu, arn) == []
    with pytest.raises(ConflictError, match="rolled back"):
        raise_for_report(report)


def test_update_failed_on_the_third_change_rolls_back_to_the_exact_before_state(
        emu: Emulator, aws: AwsClients, clock: FakeClock) -> None:
    arn, before = setup_cluster(emu, aws)
    emu.set_transition_reads(1)
    emu.inject("update-failed", "UpdateComputeQuota", team="c")
    report = writer(aws, clock).apply(arn, plan_requests(before), before)
    assert not report.succeeded
    # increases do not wait for one another, so d and e were written before c's failure showed
    assert [o.result for o in report.outcomes] == ["applied", "applied", "failed", "applied", "applied"]
    assert report.outcomes[2].status == "UpdateFailed"
    assert report.rolled_back is True, report.lines()
    assert {o.team for o in report.rollback if o.result == "applied"} == {"a", "b", "c", "d", "e"}
    after = {q.ComputeQuotaId: q for q in SageMakerReader(aws.client("sagemaker")).quotas(arn)}
    for b in before:
        now = after[b.ComputeQuotaId]
        assert now.ComputeQuotaConfig == b.ComputeQuotaConfig
        assert now.ComputeQuotaTarget == b.ComputeQuotaTarget
        assert now.Status == "Updated"
    assert violations(emu, arn) == []
    with pytest.raises(ApplyFailed, match="UpdateFailed"):
        raise_for_report(report)


def test_rollback_leaves_a_quota_edited_after_our_write(emu: Emulator, aws: AwsClients, clock: FakeClock) -> None:
    arn, before = setup_cluster(emu, aws)
    w = writer(aws, clock)
    report = w.apply(arn, plan_requests(before), before)
    versions = {o.quota_id: o.version for o in report.outcomes if o.quota_id and o.version}
    emu.external_edit("a-quota", {"ComputeQuotaConfig": config(5)})
    undo = w.rollback(arn, before, expected_versions=versions)
    assert not undo.succeeded
    by_team = {o.team: o for o in undo.outcomes}
    assert by_team["a"].result == "conflict"
    assert gpus(emu) == {"a": 5, "b": 8, "c": 6, "d": 4, "e": 4}
    assert violations(emu, arn) == []


def test_standalone_rollback_restores_a_snapshot(emu: Emulator, aws: AwsClients, clock: FakeClock) -> None:
    arn, before = setup_cluster(emu, aws)
    w = writer(aws, clock)
    assert w.apply(arn, plan_requests(before), before).succeeded
    undo = w.rollback(arn, before)
    assert undo.succeeded, undo.lines()
    assert gpus(emu) == BEFORE
    assert sorted(o.result for o in undo.outcomes) == ["applied"] * 5
    assert violations(emu, arn) == []
    again = w.rollback(arn, before)
    assert [o.result for o in again.outcomes] == ["unchanged"] * 5


def test_created_quota_is_deleted_by_the_rollback(emu: Emulator, aws: AwsClients, clock: FakeClock) -> None:
    arn, before = setup_cluster(emu, aws)
    requests = [*plan_requests(before, {**BEFORE, "a": 7}),  # 32 → 29, +2 for f, +1 for b: within the 32
                QuotaRequest(operation="CreateComputeQuota", team="f", parameters={
                    "Name": "f-quota", "ClusterArn": arn, "ComputeQuotaConfig": config(2),
                    "ComputeQuotaTarget": {"TeamName": "f", "FairShareWeight": 10}}),
                *plan_requests(before, {**BEFORE, "b": 9})]
    emu.inject("update-failed", "UpdateComputeQuota", team="b")
    report = writer(aws, clock).apply(arn, requests, before)
    assert [o.result for o in report.outcomes] == ["applied", "applied", "failed"]
    assert report.rolled_back is True, report.lines()
    emu.settle()
    assert gpus(emu) == BEFORE
    assert violations(emu, arn) == []


def test_verify_polls_until_settled_and_bounds_the_wait(emu: Emulator, aws: AwsClients, clock: FakeClock) -> None:
    _, before = setup_cluster(emu, aws)
    emu.set_transition_reads(3)
    w = writer(aws, clock)
    sm = aws.client("sagemaker")
    r = plan_requests(before)[0]
    sm.update_compute_quota(**r.parameters)
    assert w.verify([r.parameters["ComputeQuotaId"]]) == {r.parameters["ComputeQuotaId"]: "Updated"}
    assert len(clock.sleeps) == 3
    emu.set_transition_reads(1000)
    sm.update_compute_quota(**{**r.parameters, "TargetVersion": 2})
    with pytest.raises(TransientError, match="have not settled after 60 s"):
        w.verify([r.parameters["ComputeQuotaId"]])


def test_plan_from_stale_read_is_refused(emu: Emulator, aws: AwsClients, clock: FakeClock) -> None:
    arn, before = setup_cluster(emu, aws)
    requests = plan_requests(before)
    stale = [QuotaRequest(operation=r.operation, team=r.team,
                          parameters={**r.parameters, "ComputeQuotaId": "nonexistent0"}) for r in requests[:1]]
    with pytest.raises(ApplyFailed, match="not among the quotas read"):
        writer(aws, clock).apply(arn, stale, before)


def test_persistent_5xx_after_the_first_write_is_transient_and_rolled_back(
        emu: Emulator, aws: AwsClients, clock: FakeClock, backoff: FakeTime) -> None:
    arn, before = setup_cluster(emu, aws)
    outage = emu.inject("server-error", "UpdateComputeQuota", skip=1, times=aws.max_attempts, status_code=503)
    report = writer(aws, clock).apply(arn, plan_requests(before), before)
    assert [o.result for o in report.outcomes][:2] == ["applied", "failed"]
    assert outage.fired == aws.max_attempts  # botocore tried every attempt before giving up
    assert report.rolled_back is True, report.lines()
    assert gpus(emu) == BEFORE
    assert violations(emu, arn) == []
    with pytest.raises(TransientError, match=r"^UpdateComputeQuota on quota \w+ of team b: ServiceUnavailable"):
        raise_for_report(report)
