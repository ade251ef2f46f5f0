"""Reclaim to fair share through the planner: a new team's demand in a full cluster gets quota in one plan, from the
work the busy team's quota refilled last; older work stays protected."""

from __future__ import annotations

from datetime import timedelta

from support.clock import T0
from support.clusters import policy, snapshot

from rebalancer.domain.snapshot import RunningWorkload, Snapshot
from rebalancer.planning.planner import make_plan

P5 = "ml.p5.48xlarge"


def full(minutes: list[float | None]) -> Snapshot:
    """64 GPUs, all run by `busy` in workloads of 8 admitted `minutes` ago; `new` waits for 32."""
    snap = snapshot({P5: 8}, quotas={"busy": {P5: 64}, "new": {P5: 0}}, in_use={"busy": {P5: 64}},
                    pending={"busy": {P5: 16}, "new": {P5: 32}})
    return snap.model_copy(update={"running_workloads": tuple(
        RunningWorkload(name=f"busy-{k}", team="busy", pool=P5, accelerators=8, pods=1,
                        started=None if m is None else T0 - timedelta(minutes=m)) for k, m in enumerate(minutes))})


TEAMS = {"busy": {"weight": 1, "protected_in_use": True}, "new": {"weight": 1, "protected_in_use": True}}


def quotas(snap: Snapshot, **reclaim: float) -> dict[str, float]:
    plan = make_plan(snap, policy(TEAMS, reclaim=reclaim) if reclaim else policy(TEAMS), T0)
    return {c.team: c.after for c in plan.changes}


def test_a_new_team_in_a_full_cluster_gets_quota_in_one_plan_from_the_work_admitted_last() -> None:
    snap = full([3, 8, 12, 14, 90, 200, 300, 400])  # four workloads admitted since the last run, 15 min ago
    plan = make_plan(snap, policy(TEAMS), T0)
    assert {c.team: c.after for c in plan.changes} == {"busy": 32, "new": 32}
    [new] = [c for c in plan.changes if c.team == "new"]
    assert new.reason == ("wants 32 because demand 32 (0 running); reclaims 32 accelerators of work admitted 3-14 "
                          "min ago from team busy")
    # without the rule, protection keeps what busy runs and the newcomer gets nothing
    assert quotas(snap, max_gpu_hours=0) == {}


def test_older_work_stays_protected_and_the_budget_bounds_what_is_taken() -> None:
    snap = full([3, 8, 25, 50, 90, 200, 300, 400])
    assert quotas(snap) == {"busy": 48, "new": 16}  # 25 min is past the default max_age_minutes
    assert quotas(snap, max_age_minutes=60, max_gpu_hours=1) == {"busy": 56, "new": 8}  # 8 × 8 min is over 1 GPU-h
    assert quotas(full([None, 3, 8])) == {}  # a workload of unknown age might be Kueue's first: nothing is taken


def test_work_of_several_priorities_is_left_to_kueue() -> None:
    # Kueue reclaims the lowest priority first, whatever its age: an old low-priority workload would go first
    snap = full([3, 8, 12, 14, 90, 200, 300, 400])
    mixed = tuple(w.model_copy(update={"priority": 10 if w.name == "busy-7" else 100}) for w in snap.running_workloads)
    assert quotas(snap.model_copy(update={"running_workloads": mixed})) == {}
    same = tuple(w.model_copy(update={"priority": 100}) for w in snap.running_workloads)
    assert quotas(snap.model_copy(update={"running_workloads": same})) == {"busy": 32, "new": 32}
