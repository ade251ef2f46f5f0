"""The estimated starts as the plan step computes them (rebalancer.planning.eta): the cluster the snapshot shows as
Kueue configures it, the run history the durations come from, the run's plan in place when it applies by itself,
and an estimate, or why there is none, for each pending workload."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from support.clusters import T0, policy, quota, snapshot

from rebalancer.domain.budget import BudgetUsage
from rebalancer.domain.context import PlanningContext
from rebalancer.domain.outlook import OUTCOMES_KEPT, TOLD_KEPT, Outcome, RunHistory, Seen, Told, WorkloadEta
from rebalancer.domain.snapshot import PendingWorkload, RunningWorkload, Snapshot
from rebalancer.planning import eta, forecast_cluster
from rebalancer.planning.planner import make_plan

P5 = "ml.p5.48xlarge"
H = timedelta(hours=1)
HOURLY = RunHistory(finished={"a": (3600.0,) * 10, "b": (3600.0,) * 10})
TWO_HOURS = RunHistory(finished={"a": (7200.0,) * 10, "b": (7200.0,) * 10})


def busy() -> Snapshot:
    """16 GPUs: a and b each run 8 (their quotas) since an hour ago; a waits for another 8, more than the 4 it may
    borrow, so for its own run to end."""
    snap = snapshot({P5: 2}, quotas={"a": {P5: 8}, "b": {P5: 8}}, in_use={"a": {P5: 8}, "b": {P5: 8}},
                    pending={"a": {P5: 8}})
    return snap.model_copy(update={
        "running_workloads": tuple(RunningWorkload(name=f"{t}-0", team=t, pool=P5, accelerators=8, pods=1,
                                                   started=T0 - H) for t in "ab"),
        "pending_workloads": (PendingWorkload(name="a-1", team="a", pool=P5, accelerators=8, pods=1,
                                              created=T0 - H),)})


def reclaimable() -> Snapshot:
    """b runs 16 (its 8 and 8 borrowed); a (quota 8) waits for a gang of 16."""
    snap = snapshot({P5: 2}, quotas={"a": {P5: 8}, "b": {P5: 8}}, in_use={"b": {P5: 16}}, pending={"a": {P5: 16}})
    return snap.model_copy(update={
        "running_workloads": (RunningWorkload(name="b-0", team="b", pool=P5, accelerators=16, pods=2,
                                              started=T0 - H),),
        "pending_workloads": (PendingWorkload(name="a-1", team="a", pool=P5, accelerators=16, pods=2,
                                              created=T0 - H),)})


def test_the_cluster_is_the_snapshots_as_kueue_configures_it() -> None:
    raw = [quota("c", {P5: 4}, ComputeQuotaConfig={
        "ComputeQuotaResources": [{"InstanceType": P5, "Accelerators": 4}],
        "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 100,
                                  "AbsoluteBorrowLimits": [{"InstanceType": P5, "Accelerators": 2}]},
        "PreemptTeamTasks": "Never"}),
        quota("d", {P5: 4}, ComputeQuotaConfig={"ComputeQuotaResources": [{"InstanceType": P5, "Count": 1}],
                                                "ResourceSharingConfig": {"Strategy": "DontLend"}})]
    snap = busy().model_copy(update={"quotas": (*busy().quotas, *snapshot({}, raw_quotas=raw).quotas)})
    (pool,) = forecast_cluster.cluster_of(snap).pools
    queues = {q.team: q for q in pool.queues}
    assert pool.capacity == 16
    assert (queues["a"].nominal, queues["a"].borrow_limit_percent, queues["a"].lend, queues["a"].borrow) == \
        (8, 50, True, True)
    assert (queues["c"].borrow_limit, queues["c"].borrow_limit_percent, queues["c"].preempt_within) == (2, None, False)
    assert (queues["d"].nominal, queues["d"].lend, queues["d"].borrow) == (8, False, False)  # 1 node of 8
    assert [(r.job, r.accelerators, r.started) for r in pool.running] == [
        (f"{t}/{t}-0@{P5}", 8, (T0 - H).timestamp()) for t in "ab"]
    assert [(w.job, w.queued) for w in pool.waiting] == [("a/a-1@" + P5, (T0 - H).timestamp())]


def test_the_likely_range_is_stretched_by_how_the_waits_turned_out_once_the_track_record_holds_enough() -> None:
    """Ratios actual ÷ estimated wait of 0.3, 0.4 … 2.2 (twenty): the 10th and 90th percentiles stretch the wait
    still to come; fewer than RECORD_MIN outcomes, or ones without an estimate, leave the prior (½, 2)."""
    record = tuple(Outcome(waited_s=3600.0 * (3 + k), estimated_s=36000.0) for k in range(eta.RECORD_MIN))
    assert eta.error_band(eta.wait_ratios(record)) == pytest.approx((0.4, 2.1))
    assert eta.error_band(eta.wait_ratios(record[:-1])) == (0.5, 2.0)
    assert eta.error_band(eta.wait_ratios((*record[:-1], Outcome(waited_s=7200.0)))) == (0.5, 2.0)
    # a workload told 1 h that has waited 30 h so far counts at 30 (at least): the longest waits, which the
    # outcomes learn of last, are not left out; one that has waited under an hour is not counted yet
    assert eta.wait_ratios(record[:1], [(30 * 3600.0, 3600.0), (1800.0, 60.0)]) == pytest.approx([0.3, 30.0])
    longest = eta.wait_ratios(record[:-1], [(30 * 3600.0, 3600.0)] * 3)
    assert eta.error_band(longest)[1] == 30.0
    # always about the point itself: a record of estimates that all came true stretches nothing, the draws' span
    # still counts, and an estimate starting now is the only point
    exact = tuple(Outcome(waited_s=7200.0, estimated_s=7200.0) for _ in range(eta.RECORD_MIN))
    assert eta.error_band(eta.wait_ratios(exact)) == (1.0, 1.0)
    drawn = eta.Estimate(start=10 * 3600.0, earliest=8 * 3600.0, latest=11 * 3600.0)
    assert eta.likely_range(drawn, 0.0, (1.0, 1.0)) == (8 * 3600.0, 11 * 3600.0)
    assert eta.likely_range(drawn, 0.0, (0.4, 2.1)) == pytest.approx((4 * 3600.0, 21 * 3600.0))
    assert eta.likely_range(drawn, 4 * 3600.0, (0.5, 2.0)) == (7 * 3600.0, 16 * 3600.0)  # the 6 h still to come
    assert eta.likely_range(eta.Estimate(start=5.0, earliest=5.0, latest=None), 5.0, (0.5, 2.0)) == (5.0, None)


def test_use_the_snapshot_does_not_itemise_runs_as_one_workload_started_now() -> None:
    snap = busy().model_copy(update={"running_workloads": ()})
    (pool,) = forecast_cluster.cluster_of(snap).pools
    assert [(r.team, r.accelerators, r.started) for r in pool.running] == [(t, 8, T0.timestamp()) for t in "ab"]


def test_a_workload_waits_for_what_the_history_says_the_running_one_has_left() -> None:
    # a's run has gone an hour and its runs last two: another hour in every draw; with no track record yet the
    # likely range stretches that hour by 1/2 and 2 (what this project calls a good estimate), never a point
    (e,) = eta.estimates(busy(), None, None, applies=False, context=None, history=TWO_HOURS)
    assert (e.name, e.start, e.earliest, e.latest) == ("a-1", T0 + H, T0 + H / 2, T0 + 2 * H)
    # none ran longer than an hour: Lindy's rule draws the rest; the median of the draws is the estimate
    (lindy,) = eta.estimates(busy(), None, None, applies=False, context=None, history=HOURLY)
    assert lindy.earliest is not None
    assert lindy.latest is not None
    assert T0 < lindy.earliest <= lindy.start <= lindy.latest
    # nothing seen to finish: the running workload still has Lindy's estimate, one waiting behind another has none
    two = busy().model_copy(update={"pending_workloads": (*busy().pending_workloads, PendingWorkload(
        name="a-2", team="a", pool=P5, accelerators=8, pods=1, created=T0))})
    first, second = eta.estimates(two, None, None, applies=False, context=None, history=RunHistory())
    assert first.start is not None
    assert second.unknown == eta.UNKNOWN["no_history"]


def test_the_runs_plan_counts_only_when_it_applies_by_itself() -> None:
    # a gang of 16 for a: only a quota of 16 lets it in, b's borrowed 8 reclaimed
    snap = reclaimable()
    pol = policy({"a": {"guarantee": {P5: 16}}, "b": {}},
                 approval={"moved_accelerators": 100, "max_decrease_percent": 100})
    plan = make_plan(snap, pol, T0)
    assert not plan.requires_approval
    assert plan.allocations["a"][P5]["accelerators"] == 16
    applied = eta.estimates(snap, pol, plan, applies=True, context=None, history=HOURLY, replans=0)
    waiting = eta.estimates(snap, pol, plan, applies=False, context=None, history=HOURLY, replans=0)
    assert applied[0].start is not None
    assert applied[0].start <= T0 + timedelta(minutes=2)  # in place two minutes on: b's borrowed 8 reclaimed
    assert waiting[0].start is None  # 16 is more than a's 8 and 4 of borrowing: never, as the quotas stand
    assert waiting[0].unknown == eta.UNKNOWN["never_admitted"]
    replanned = eta.estimates(snap, pol, plan, applies=False, context=None, history=HOURLY, replans=4)
    assert replanned[0].start == T0 + timedelta(minutes=15 + 2)  # the next run plans it again, and it applies
    asking = pol.model_copy(update={"approval": pol.approval.model_copy(update={"moved_accelerators": 1})})
    held = eta.estimates(snap, asking, plan, applies=False, context=None, history=HOURLY, replans=4)
    assert held[0].start is None  # a plan that waits for an approver is not in place by any time the forecast knows


def test_a_gang_larger_than_the_pool_and_a_spent_budget_say_why() -> None:
    big = busy().model_copy(update={"pending_workloads": (PendingWorkload(
        name="a-big", team="a", pool=P5, accelerators=64, pods=8, created=T0),)})
    (e,) = eta.estimates(big, None, None, applies=False, context=None, history=HOURLY)
    assert e.unknown == eta.UNKNOWN["larger_than_pool"]
    pol = policy({"a": {"budget": {"accelerator_hours": 100, "on_exhausted": "guarantee_only"}}, "b": {}})
    spent = PlanningContext(budget_usage={"a": BudgetUsage(period="2026-11", accelerator_hours=120)})
    (e,) = eta.estimates(reclaimable(), pol, None, applies=False, context=spent, history=HOURLY, replans=0)
    assert e.unknown == "its team's budget is spent until 2026-12-01 00:00 UTC"
    (e,) = eta.estimates(busy(), pol, None, applies=False, context=spent, history=TWO_HOURS, replans=0)
    assert e.start == T0 + H  # one that starts within its quota before the period ends keeps its estimate


def test_the_history_learns_a_run_from_the_runs_that_saw_it() -> None:
    first = busy()
    h1 = eta.history_after(RunHistory(), first)
    assert h1.running == {f"{t}/{t}-0@{P5}": Seen(team=t, started=T0 - H, last_seen=T0) for t in "ab"}
    # 30 min on: b-0 gone (finished), a-1 running; 30 min later still: a-1 pending again (preempted)
    later = first.model_copy(update={"taken_at": T0 + 2 * H / 4, "pending_workloads": (), "running_workloads": (
        first.running_workloads[0],
        RunningWorkload(name="a-1", team="a", pool=P5, accelerators=8, pods=1, started=T0 + H / 4))})
    h2 = eta.history_after(h1, later)
    assert h2.finished == {"b": (pytest.approx(3600.0 + 900.0),)}  # halfway between the two runs
    again = later.model_copy(update={"taken_at": T0 + H, "running_workloads": later.running_workloads[:1],
                                     "pending_workloads": (
        PendingWorkload(name="a-1", team="a", pool=P5, accelerators=8, pods=1, created=T0 + H),)})
    assert eta.history_after(h2, again).finished == h2.finished
    many = RunHistory(finished={"b": tuple(float(i) for i in range(60))})
    assert len(eta.history_after(many, later).finished["b"]) == 50


def test_the_history_learns_how_a_teams_declarations_turn_out() -> None:
    """b-0 declared 9 h and is gone half an hour on: it ran 1 h 15 min, 0.139 of what it declared; a-0 declared
    nothing and is gone too: a run, and no ratio."""
    first = busy()
    runs = tuple(w.model_copy(update={"declared_s": 9 * 3600.0 if w.team == "b" else None})
                 for w in first.running_workloads)
    h1 = eta.history_after(RunHistory(), first.model_copy(update={"running_workloads": runs}))
    assert h1.running[f"b/b-0@{P5}"].declared_s == 9 * 3600.0
    later = first.model_copy(update={"taken_at": T0 + H / 2, "running_workloads": (), "pending_workloads": ()})
    h2 = eta.history_after(h1, later)
    assert h2.finished == {"a": (4500.0,), "b": (4500.0,)}
    assert h2.declared == {"b": (0.139,)}


def pending(name: str, created: datetime, team: str = "a") -> PendingWorkload:
    return PendingWorkload(name=name, team=team, pool=P5, accelerators=8, pods=1, created=created)


def started(name: str, at: datetime, team: str = "a") -> RunningWorkload:
    return RunningWorkload(name=name, team=team, pool=P5, accelerators=8, pods=1, started=at)


def seen(at: datetime, waiting: tuple[PendingWorkload, ...] = (),
         running: tuple[RunningWorkload, ...] = ()) -> Snapshot:
    return busy().model_copy(update={"taken_at": at, "pending_workloads": waiting, "running_workloads": running})


def test_the_track_record_sets_each_wait_of_an_hour_or_more_against_its_first_estimate() -> None:
    # first seen at T0: w1 (waiting since T0 - 1 h) told T0 + 1 h, w2 told nothing, w3 told T0 + 30 min
    now = seen(T0, (pending("w1", T0 - H), pending("w2", T0 - H), pending("w3", T0)))
    told = [WorkloadEta(name="w1", team="a", pool=P5, start=T0 + H), WorkloadEta(name="w2", team="a", pool=P5),
            WorkloadEta(name="w3", team="a", pool=P5, start=T0 + H / 2)]
    h1 = eta.told_after(eta.history_after(RunHistory(), now), told, now)
    assert eta.track_record(h1) is None
    # the next run tells w1 something else: its first estimate stays
    again = seen(T0 + H / 4, now.pending_workloads)
    later = [WorkloadEta(name="w1", team="a", pool=P5, start=T0 + 9 * H)]
    h2 = eta.told_after(eta.history_after(h1, again), later, again)
    assert h2.told[f"a/w1@{P5}"].start == T0 + H
    # at T0 + 4 h all three run: w1 waited 4 h against 2 h told (within 2×), w2 3 h against nothing (a miss);
    # w3 started after 30 min: under the hour, not measured
    ran = seen(T0 + 4 * H, running=(started("w1", T0 + 3 * H), started("w2", T0 + 2 * H), started("w3", T0 + H / 2)))
    h3 = eta.history_after(h2, ran)
    assert h3.outcomes == (Outcome(waited_s=4 * 3600.0, estimated_s=2 * 3600.0), Outcome(waited_s=3 * 3600.0))
    assert h3.told == {}
    assert eta.track_record(h3) == eta.TrackRecord(workloads=2, within_2x=0.5)
    # one told 2 h that waited 5 h: outside 2×
    late = eta.told_after(h3, [WorkloadEta(name="w4", team="a", pool=P5, start=T0 + 6 * H)], seen(T0 + 4 * H, (
        pending("w4", T0 + 4 * H),)))
    h5 = eta.history_after(late, seen(T0 + 9 * H, running=(started("w4", T0 + 9 * H),)))
    record = eta.track_record(h5)
    assert record is not None
    assert (record.workloads, record.within_2x) == (3, pytest.approx(1 / 3))


def test_what_the_track_record_keeps_is_bounded_and_a_sample_that_does_not_move() -> None:
    many = tuple(pending(f"w{i}", T0 - H) for i in range(TOLD_KEPT + 50))
    now = seen(T0, many)
    h1 = eta.told_after(eta.history_after(RunHistory(), now), (), now)
    assert len(h1.told) == TOLD_KEPT
    h2 = eta.told_after(eta.history_after(h1, seen(T0 + H / 4, many)), (), seen(T0 + H / 4, many))
    assert h2.told == h1.told
    full = RunHistory(outcomes=(Outcome(waited_s=7200.0),) * OUTCOMES_KEPT,
                      told={f"a/w@{P5}": Told(queued=T0 - 2 * H, start=T0)})
    h3 = eta.history_after(full, seen(T0 + H, running=(started("w", T0),)))
    assert len(h3.outcomes) == OUTCOMES_KEPT
    assert h3.outcomes[-1] == Outcome(waited_s=7200.0, estimated_s=7200.0)


def test_a_plan_that_preempts_is_in_place_only_after_its_notice() -> None:
    snap = reclaimable()  # a's raise to 16 takes back b's run
    pol = policy({"a": {"guarantee": {P5: 16}}, "b": {}},
                 approval={"moved_accelerators": 100, "max_decrease_percent": 100}, reclaim={"notice_minutes": 30})
    plan = make_plan(snap, pol, T0)
    assert [p.workload for p in plan.preemptions] == ["b-0"]
    (e,) = eta.estimates(snap, pol, plan, applies=True, context=None, history=HOURLY, replans=0)
    assert e.start == T0 + timedelta(minutes=30 + 2)
