"""What a plan's writes would make Kueue preempt (rebalancer.planning.preemptions): the forecast's reclaim model at the
moment of the write, the newest admitted of the borrowers first, each with how long it has run and the GPU-hours at
risk; and the approval rule on them (approval.max_preempted_gpu_hours)."""

from __future__ import annotations

from datetime import timedelta

from support.clusters import T0, policy, snapshot
from support.preempting import OPEN, P5, H, full

from rebalancer.domain.plan import PREEMPTIONS_LISTED, Plan, Preemption, preemption_line, ran_text
from rebalancer.domain.snapshot import PendingWorkload, RunningWorkload
from rebalancer.planning.planner import make_plan


def test_a_raise_that_takes_back_borrowed_quota_names_the_newest_borrowed_workload() -> None:
    plan = make_plan(full(), policy({"a": {}, "b": {}}, approval=OPEN), T0)
    assert plan.allocations["a"][P5]["accelerators"] == 8
    assert plan.preemptions == (Preemption(team="b", workload="b-new", pool=P5, accelerators=8, ran_s=3600),)
    assert plan.preempted_gpu_hours == 8
    out = plan.output()
    assert out["preemptions"] == [{"team": "b", "workload": "b-new", "pool": P5, "accelerators": 8.0,
                                   "ran_s": 3600.0}]
    assert out["preempted_gpu_hours"] == 8
    assert Plan.model_validate(plan.model_dump(mode="json")) == plan  # the stored plan keeps them


def test_what_fits_in_free_capacity_preempts_nothing() -> None:
    snap = full((("b-old", 8, 3 * H),))  # b runs 8 of its 16: the 8 a gets are free
    plan = make_plan(snap, policy({"a": {}, "b": {}}, approval=OPEN), T0)
    assert plan.allocations["a"][P5]["accelerators"] == 8
    assert plan.preemptions == ()
    assert plan.output()["preemptions"] == []
    assert plan.output()["preempted_gpu_hours"] == 0


def test_a_plan_that_raises_nothing_preempts_nothing() -> None:
    plan = make_plan(full(), policy({"a": {"weight": 0}, "b": {}}, approval=OPEN), T0)
    assert plan.preemptions == ()


def test_a_workload_whose_start_was_not_read_is_named_with_nothing_counted() -> None:
    plan = make_plan(full((("b-old", 8, 3 * H), ("b-new", 8, None))), policy({"a": {}, "b": {}}, approval=OPEN), T0)
    # b-new has no start: the forecast takes it as admitted now, the newest, so the one Kueue takes
    assert [(p.workload, p.ran_s) for p in plan.preemptions] == [("b-new", None)]
    assert plan.preempted_gpu_hours == 0
    assert ran_text(None) == "unknown"
    assert "ran unknown (0.0 GPU-hours)" in preemption_line(plan.preemptions[0])


def test_many_preemptions_are_listed_largest_first_and_counted() -> None:
    n = PREEMPTIONS_LISTED + 20  # a multiple of 8: b fills every node
    runs = tuple((f"b-{i:03d}", 1, (i + 1) * timedelta(minutes=1)) for i in range(n))
    snap = snapshot({P5: n // 8}, quotas={"a": {P5: 0}, "b": {P5: n}}, in_use={"b": {P5: n}},
                    pending={"a": {P5: n}})
    snap = full().model_copy(update={
        **{k: getattr(snap, k) for k in ("nodes", "quotas", "demand", "cluster")},
        "running_workloads": tuple(RunningWorkload(name=name, team="b", pool=P5, accelerators=g, pods=1,
                                                   started=T0 - ran) for name, g, ran in runs),
        "pending_workloads": (PendingWorkload(name="a-1", team="a", pool=P5, accelerators=n, pods=1,
                                              created=T0 - H),)})
    plan = make_plan(snap, policy({"a": {"guarantee": {P5: n}}, "b": {}}, approval=OPEN, stability={"max_move": None}),
                     T0)
    assert plan.preemptions_unlisted == 20
    assert len(plan.preemptions) == PREEMPTIONS_LISTED
    hours = [p.gpu_hours for p in plan.preemptions]
    assert hours == sorted(hours, reverse=True)
    assert abs(plan.preempted_gpu_hours - sum(i + 1 for i in range(n)) / 60) < 1e-9  # all of them, listed or not


def test_the_approval_rule_sends_a_plan_that_preempts_more_to_an_admin() -> None:
    over = make_plan(full(), policy({"a": {}, "b": {}}, approval={**OPEN, "max_preempted_gpu_hours": 7.5}), T0)
    assert over.requires_approval
    assert over.approval_reasons == ("preempts 1 running workload with 8.0 GPU-hours of work at risk, above "
                                     "approval.max_preempted_gpu_hours 7.5",)
    within = make_plan(full(), policy({"a": {}, "b": {}}, approval={**OPEN, "max_preempted_gpu_hours": 8}), T0)
    assert not within.requires_approval
    off = make_plan(full(), policy({"a": {}, "b": {}}, approval=OPEN), T0)
    assert not off.requires_approval


def test_a_raise_for_a_team_with_nothing_waiting_there_takes_nothing_back() -> None:
    # a's guarantee raises it to 8, but nothing of a waits: Kueue reclaims only for a workload it would admit
    idle = full().model_copy(update={"pending_workloads": ()})
    plan = make_plan(idle, policy({"a": {"guarantee": {P5: 8}}, "b": {}}, approval=OPEN), T0)
    assert plan.allocations["a"][P5]["accelerators"] == 8
    assert plan.preemptions == ()


def test_kueue_takes_the_lowest_priority_first_whatever_its_age() -> None:
    snap = full()
    old, new = snap.running_workloads
    snap = snap.model_copy(update={"running_workloads": (old.model_copy(update={"priority": 10}),
                                                         new.model_copy(update={"priority": 100}))})
    plan = make_plan(snap, policy({"a": {}, "b": {}}, approval=OPEN), T0)
    assert [p.workload for p in plan.preemptions] == ["b-old"]  # older, but the lower priority
