"""The quota writer refuses a write that would raise an instance type above the healthy capacity it reads just
before writing, against the emulator over HTTP (5 teams holding 10, 8, 6, 4, 4 of 4 × 8 H100s). An apply stops at
the refused write; a rollback restores what fits and says what it left. The emulator's monitor counts every write
that raised a pool above its capacity: none here."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from support import five_teams
from support.fake_clock import FakeClock
from support.five_teams import AFTER, BEFORE, P5, config, gpus, plan_requests, queueing_kube, raised, writer

from rebalancer.adapters.aws import AwsClients
from rebalancer.adapters.collect import KubeAccess, collect_snapshot
from rebalancer.adapters.sagemaker.cluster import SageMakerReader
from rebalancer.app.workflow.state import RunRef
from rebalancer.app.workflow.steps.apply import apply
from rebalancer.app.workflow.steps.collect import collect
from rebalancer.app.workflow.steps.plan import plan
from rebalancer.app.workflow.steps.rollback import rollback
from rebalancer.domain.plan import QuotaRequest
from rebalancer.domain.policy import Policy
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.errors import RollbackFailed
from rebalancer_tools.emulator.control import Emulator
from rebalancer_tools.fakes.memory_store import MemoryStore
from rebalancer_tools.fakes.ticking_clock import TickingClock

NOW = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


def setup_cluster(emu: Emulator, aws: AwsClients) -> tuple[str, tuple[ComputeQuota, ...]]:
    return five_teams.setup_cluster(emu, aws.client("sagemaker"))


def test_an_apply_planned_before_a_node_failed_stops_at_the_first_raise_above_capacity(
        emu: Emulator, aws: AwsClients, clock: FakeClock) -> None:
    arn, before = setup_cluster(emu, aws)
    emu.fail_node("c1", "p5-0")  # 24 healthy GPUs under quotas of 32
    report = writer(aws, clock).apply(arn, plan_requests(before), before)
    assert [o.result for o in report.outcomes] == ["applied", "applied", "refused", "not-attempted",
                                                   "not-attempted"]
    assert report.error == (f"UpdateComputeQuota for team c refused: {P5}: the enabled quotas would hold 28, the "
                            "cluster has 24 healthy (they hold 26 now); stopped (the cluster changed since the plan "
                            "was made: plan again)")
    # Undoing a and b's decreases would raise the pool again: the rollback leaves them lowered and says so.
    assert report.rolled_back is False
    assert [(o.team, o.result) for o in report.rollback] == [("a", "refused"), ("b", "refused")]
    assert report.rollback[0].message.startswith(f"left as it is: {P5}: the enabled quotas would hold 30")
    assert (report.rollback[0].held, report.rollback[0].holds) == ({P5: 6}, {P5: 6})
    assert gpus(emu) == {**BEFORE, "a": 6, "b": 6}
    assert raised(emu, arn) == []


def test_a_node_failing_while_the_decreases_settle_stops_the_raises_that_no_longer_fit(
        emu: Emulator, aws: AwsClients, clock: FakeClock) -> None:
    """The capacity is read before the first write (32), a and b are lowered (32 → 26), and a node fails while the
    writer polls for them to settle: the raises that follow are checked against the 24 GPUs read after that wait,
    not against the 32 read before it."""
    arn, before = setup_cluster(emu, aws)
    emu.inject("node-failure", "DescribeComputeQuota", cluster="c1", node="p5-0")
    report = writer(aws, clock).apply(arn, plan_requests(before), before)
    assert [o.result for o in report.outcomes] == ["applied", "applied", "refused", "not-attempted",
                                                   "not-attempted"]
    assert report.outcomes[2].message == (f"{P5}: the enabled quotas would hold 28, the cluster has 24 healthy "
                                          "(they hold 26 now) (it had 32 when this pass of writes began)")
    assert not report.succeeded
    assert [(o.team, o.result) for o in report.rollback] == [("a", "refused"), ("b", "refused")]
    assert gpus(emu) == {**BEFORE, "a": 6, "b": 6}
    assert raised(emu, arn) == []


def test_a_failed_read_of_the_nodes_after_the_decreases_stops_before_any_raise(
        emu: Emulator, aws: AwsClients, clock: FakeClock) -> None:
    arn, before = setup_cluster(emu, aws)
    emu.inject("server-error", "ListClusterNodes", skip=1, times=None)  # the first read only is answered
    report = writer(aws, clock).apply(arn, plan_requests(before), before, rollback_on_failure=False)
    assert [o.result for o in report.outcomes] == ["applied", "applied", "not-attempted", "not-attempted",
                                                   "not-attempted"]
    assert report.error is not None
    assert report.error.startswith("reading the cluster's capacity again before UpdateComputeQuota for team c: ")
    assert report.transient
    assert gpus(emu) == {**BEFORE, "a": 6, "b": 6}


def test_raises_made_one_after_another_share_one_reading_of_the_nodes(aws: AwsClients, emu: Emulator,
                                                                       clock: FakeClock) -> None:
    """Reading 22,000 nodes is 223 calls: the nodes are read before the first write and once more after the
    decreases settled, not before each of c, d and e's raises."""
    arn, before = setup_cluster(emu, aws)
    w = writer(aws, clock)
    calls: list[str] = []
    w.sm.meta.events.register("before-call.sagemaker.ListClusterNodes", lambda **_: calls.append("nodes"))
    assert w.apply(arn, plan_requests(before), before).succeeded
    assert calls == ["nodes", "nodes"]
    calls.clear()  # raises only, up to an autoscaler's ceiling: one reading, before the first write
    now = SageMakerReader(aws.client("sagemaker")).quotas(arn)
    by_team = {q.team: q for q in now}
    raises = [QuotaRequest(operation="UpdateComputeQuota", team=t, parameters={
        "ComputeQuotaId": by_team[t].ComputeQuotaId, "TargetVersion": by_team[t].ComputeQuotaVersion,
        "ComputeQuotaConfig": config(AFTER[t] + 1)}) for t in "cde"]
    assert w.apply(arn, raises, now, ceilings={P5: 40.0}).succeeded
    assert calls == ["nodes"]


def test_a_rollback_after_a_node_failed_restores_what_fits(emu: Emulator, aws: AwsClients, clock: FakeClock) -> None:
    arn, before = setup_cluster(emu, aws)
    w = writer(aws, clock)
    done = w.apply(arn, plan_requests(before), before)
    assert done.succeeded, done.lines()
    versions = {o.quota_id: o.version for o in done.outcomes if o.quota_id and o.version}
    emu.external_edit("d-quota", {"ComputeQuotaConfig": config(0)})  # 6 → 0 in the console
    emu.fail_node("c1", "p5-3")  # 24 healthy
    undo = w.rollback(arn, before, expected_versions=versions)
    # c 8→6 and e 6→4 first (26 → 22), then a 6→10 would hold 26: refused; b 6→8 holds 24: restored.
    by_team = {o.team: o for o in undo.outcomes}
    assert {t: o.result for t, o in by_team.items()} == {"a": "refused", "b": "applied", "c": "applied",
                                                          "d": "conflict", "e": "applied"}
    assert by_team["a"].message == (f"left as it is: {P5}: the enabled quotas would hold 26, the cluster has 24 "
                                    "healthy")
    assert {t: (o.held, o.holds) for t, o in by_team.items()} == {
        "a": ({P5: 6}, {P5: 6}), "b": ({P5: 6}, {P5: 8}), "c": ({P5: 8}, {P5: 6}), "d": ({P5: 0}, {P5: 0}),
        "e": ({P5: 6}, {P5: 4})}
    assert not undo.succeeded
    assert gpus(emu) == {"a": 6, "b": 8, "c": 6, "d": 0, "e": 4}
    assert raised(emu, arn) == []


def test_a_new_quota_above_capacity_is_refused_and_one_that_fits_is_not(emu: Emulator, aws: AwsClients,
                                                                         clock: FakeClock) -> None:
    arn, before = setup_cluster(emu, aws)
    create = QuotaRequest(operation="CreateComputeQuota", team="f", parameters={
        "Name": "f-quota", "ClusterArn": arn, "ComputeQuotaConfig": config(2),
        "ComputeQuotaTarget": {"TeamName": "f", "FairShareWeight": 10}})
    refused = writer(aws, clock).apply(arn, [create], before)
    assert [o.result for o in refused.outcomes] == ["refused"]
    assert "f" not in gpus(emu)
    room = [*plan_requests(before, {**BEFORE, "a": 8}), create]  # 32 → 30, then f's 2
    assert writer(aws, clock).apply(arn, room, before).succeeded
    assert gpus(emu)["f"] == 2
    assert raised(emu, arn) == []


def test_the_autoscaler_s_ceiling_lets_quotas_above_today_s_nodes(emu: Emulator, aws: AwsClients,
                                                                   clock: FakeClock) -> None:
    arn, before = setup_cluster(emu, aws)
    grow = plan_requests(before, {**AFTER, "a": 10, "b": 8})  # c, d, e up by 2 each: 38 of 32 healthy
    assert [o.result for o in writer(aws, clock).apply(arn, grow, before).outcomes] == ["refused"] + [
        "not-attempted"] * 2
    report = writer(aws, clock).apply(arn, grow, before, ceilings={P5: 40.0})
    assert report.succeeded, report.lines()
    assert sum(gpus(emu).values()) == 38


POLICY = Policy.model_validate({
    "mode": "auto", "stability": {"min_step": 1, "cooldown_minutes": 0, "max_move": 64},
    "approval": {"moved_accelerators": 64, "max_decrease_percent": 100},
    "teams": {t: {"weight": 1, "guarantee": {P5: 2}} for t in "abcde"}})


def test_the_workflow_s_rollback_after_a_node_failed_restores_what_fits_and_records_what_it_left(
        emu: Emulator, aws: AwsClients, clock: FakeClock) -> None:
    """The steps as the Lambdas run them: Collect, Plan and Apply on 32 GPUs; then a node fails and something
    sends the run to Rollback. Undoing the cuts would raise the pool above the 24 left: those quotas are left, the
    step fails as RollbackFailed naming them, and the record holds what each quota holds after, not the plan
    read backwards."""
    setup_cluster(emu, aws)
    with queueing_kube() as kube:
        store = MemoryStore(now=TickingClock(NOW))
        run = RunRef(cluster_name="c1", execution_name="c1-run", execution_arn="arn:aws:states:::execution:x:c1-run")
        collect(run, store=store, read_snapshot=lambda c: collect_snapshot(
            c, aws, now=NOW, kube=KubeAccess(mode="url", url=kube), metrics_window=None).snapshot)
        plan(run, store=store, load_policy=lambda _c: POLICY, now=NOW)
        w = writer(aws, clock)
        apply(run, store=store, writer=w)
    assert gpus(emu) == {"a": 4, "b": 4, "c": 8, "d": 8, "e": 8}
    emu.fail_node("c1", "p5-0")
    with pytest.raises(RollbackFailed, match=r"refused +UpdateComputeQuota a .*: left as it is: ml.p5.48xlarge: the "
                                             r"enabled quotas would hold 28, the cluster has 24 healthy"):
        rollback(run, {"Error": "VerifyTimedOut"}, store=store, writer=w)
    # c, d, e back down first (32 → 22); a 4→10 would hold 28 and b 4→8 26, of 24: both left.
    assert gpus(emu) == {"a": 4, "b": 4, "c": 6, "d": 4, "e": 4}
    [record] = [r for r in store.audit.records("c1") if r["kind"] == "rollback"]
    assert record["outcome"] == "incomplete"
    assert record["before"] == {"a": {P5: 4}, "b": {P5: 4}, "c": {P5: 8}, "d": {P5: 8}, "e": {P5: 8}}
    assert record["after"] == {"a": {P5: 4}, "b": {P5: 4}, "c": {P5: 6}, "d": {P5: 4}, "e": {P5: 4}}
    assert sorted(record["detail"]["left"]) == ["a", "b"]
    assert raised(emu, emu.cluster_arn("c1")) == []
