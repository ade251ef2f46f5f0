"""Why a team's work waits (rebalancer.planning.why): each reason produced by the situation that causes it, and not
by the one next to it; what would let the work start; the answer when collect read no workload, only demand."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from support.clusters import T0, snapshot
from support.props import properties

from rebalancer.domain.plan import Plan
from rebalancer.domain.reservation import Reservation
from rebalancer.domain.snapshot import PendingWorkload, RunningWorkload, Snapshot
from rebalancer.planning.why import RUNNING_SHOWN, LastChange, explain

P5 = "ml.p5.48xlarge"  # 8 GPUs a node; the snapshots below have 4 nodes: 32


def _snap(quotas: dict[str, float], in_use: dict[str, float], *workloads: PendingWorkload, nodes: int = 4,
          **fields: Any) -> Snapshot:
    snap = snapshot({P5: nodes}, quotas={t: {P5: q} for t, q in quotas.items()},
                    in_use={t: {P5: u} for t, u in in_use.items()})
    return snap.model_copy(update={"pending_workloads": workloads, **fields})


def _job(accelerators: float, *, team: str = "a", name: str = "job", topology: str | None = None) -> PendingWorkload:
    return PendingWorkload(name=name, team=team, pool=P5, accelerators=accelerators, pods=int(accelerators // 8) or 1,
                           created=T0 - timedelta(hours=3), topology=topology)


def _kinds(snap: Snapshot, plan: Plan | None = None, **kw: Any) -> list[str]:
    return [r.kind for r in explain(snap, plan, "a", **kw).waiting[0].reasons]


def _plan(snap: Snapshot, warnings: tuple[str, ...] = ()) -> Plan:
    return Plan(cluster_name="test", cluster_arn=snap.cluster.ClusterArn, taken_at=T0, mode="auto",
                allocations={"a": {P5: {"accelerators": 16.0}}}, warnings=warnings)


def test_over_quota_and_past_the_borrow_limit() -> None:
    """Quota 8, all in use, a 16-GPU job: it must borrow 16, its limit (50 %) is 4."""
    snap = _snap({"a": 8, "b": 24}, {"a": 8, "b": 20}, _job(16))
    got = explain(snap, None, "a").waiting[0]
    assert [r.kind for r in got.reasons] == ["over_quota", "borrow_limit"]
    assert "it may borrow 4 beyond its quota, 16 needed" in got.reasons[1].text
    # only 4 are free and b borrows nothing to reclaim: a guarantee alone is not enough
    assert got.would_start == f"a guarantee of 24 in {P5} (now 8) and 12 accelerators free up"


def test_a_gang_larger_than_what_is_free_when_borrowing_is_allowed() -> None:
    """Quota 16, 8 in use, a 16-GPU gang: borrowing 8 is within its limit, but only 4 GPUs are free."""
    snap = _snap({"a": 16, "b": 16}, {"a": 8, "b": 20}, _job(16))
    got = explain(snap, None, "a").waiting[0]
    assert [r.kind for r in got.reasons] == ["over_quota", "gang_larger_than_free"]
    assert got.reasons[1].text == f"it needs 16 accelerators at once; 4 of 32 are free in {P5}"
    # 12 more free, or a guarantee that reclaims b's 4 borrowed and still needs 8 more to free up
    assert got.would_start == (f"12 more accelerators in {P5} free up or a guarantee of 24 in {P5} (now 16) and 8 "
                               "accelerators free up")


def test_within_quota_it_reclaims_what_others_borrow() -> None:
    """Quota 16, none in use, nothing free, but b runs 16 beyond its quota: Kueue reclaims it, nothing holds a."""
    snap = _snap({"a": 16, "b": 16}, {"b": 32}, _job(16))
    got = explain(snap, None, "a").waiting[0]
    assert got.reasons == ()
    assert got.would_start.startswith("nothing in the last snapshot holds it")
    less_borrowed = _snap({"a": 16, "b": 24}, {"b": 32}, _job(16))  # b borrows only 8
    assert _kinds(less_borrowed) == ["gang_larger_than_free"]
    assert explain(less_borrowed, None, "a").waiting[0].would_start == f"8 accelerators in {P5} free up"


def test_a_gang_larger_than_the_whole_pool() -> None:
    snap = _snap({"a": 40}, {}, _job(40))
    got = explain(snap, None, "a").waiting[0]
    assert got.reasons[0].kind == "larger_than_pool"
    assert got.would_start == f"8 more healthy accelerators in {P5} (nodes added or repaired), or a smaller gang"


def test_unschedulable_nodes_are_not_capacity() -> None:
    snap = _snap({"a": 32}, {}, _job(32))
    assert _kinds(snap) == []
    sick = snap.model_copy(update={"node_health": {snap.nodes[0].InstanceId: "UnschedulablePendingReplacement"}})
    assert _kinds(sick) == ["larger_than_pool"]


def test_a_topology_level_is_a_reason_of_its_own() -> None:
    level = "required topology.k8s.aws/network-node-layer-3"
    snap = _snap({"a": 32}, {}, _job(16, topology=level))
    got = explain(snap, None, "a").waiting[0]
    assert [r.kind for r in got.reasons] == ["topology"]
    assert level in got.reasons[0].text
    assert got.would_start == "one topology domain with 16 free accelerators"
    assert _kinds(_snap({"a": 32}, {}, _job(16))) == []


def test_a_spent_budget_cuts_what_it_may_borrow() -> None:
    snap = _snap({"a": 8, "b": 8}, {"a": 8}, _job(4))
    assert _kinds(snap, _plan(snap)) == []  # borrowing 4 is within its limit and 16 are free: nothing holds it
    note = "a: budget 100 % used (1,000 of 1,000 accelerator-hours): no borrowing until the period ends"
    got = explain(snap, _plan(snap, (note, "b: something else")), "a")
    assert [r.kind for r in got.waiting[0].reasons] == ["over_quota", "budget_cut"]
    assert got.notes == (note.removeprefix("a: "),)
    assert got.waiting[0].would_start == (f"a guarantee of 12 in {P5} (now 8) or the budget period ends or the budget "
                                          "is raised")


def test_another_teams_reservation_holds_the_idle_capacity() -> None:
    """a borrows 4 (within its limit); 20 are free but c's reservation of 20 holds them all."""
    snap = _snap({"a": 8, "b": 4}, {"a": 8, "b": 4}, _job(4))
    assert _kinds(snap) == []
    until = T0 + timedelta(days=2)
    held = [Reservation(reservation_id="r-1", cluster=snap.cluster.ClusterName, team="c", pool=P5, accelerators=20,
                        start=T0 - timedelta(hours=1), until=until, reason="launch", status="approved",
                        requested_by="admin", requested_at=T0 - timedelta(hours=2))]
    got = explain(snap, None, "a", reservations=held).waiting[0]
    assert [r.kind for r in got.reasons] == ["over_quota", "reservation"]
    assert got.reasons[1].text == "20 of the free accelerators are reserved for c"
    assert got.would_start == f"a guarantee of 12 in {P5} (now 8) or the reservation ends ({until:%Y-%m-%d %H:%M})"
    ended = [held[0].model_copy(update={"until": T0})]
    assert _kinds(snap, reservations=ended) == []
    pending = [held[0].model_copy(update={"status": "pending"})]
    assert _kinds(snap, reservations=pending) == []
    own = [held[0].model_copy(update={"team": "a"})]
    assert _kinds(snap, reservations=own) == []


def test_pending_demand_stands_in_where_no_workload_was_read() -> None:
    snap = snapshot({P5: 4}, quotas={"a": {P5: 8}}, in_use={"a": {P5: 8}}, pending={"a": {P5: 24}})
    got = explain(snap, None, "a")
    assert [(w.name, w.accelerators, w.pods) for w in got.waiting] == [(None, 24, None)]
    assert [r.kind for r in got.waiting[0].reasons] == ["over_quota", "borrow_limit"]
    assert any(line.startswith(f"pending demand on {P5}: 24 accelerators") for line in got.lines())


def test_quota_lines_carry_the_plan_and_the_last_change() -> None:
    snap = _snap({"a": 8}, {"a": 8}, _job(8))
    change = LastChange(pool=P5, at=T0 - timedelta(days=1), execution="test-0001", before=24, after=8,
                        reason="idle 90 % of its quota", outcome="applied")
    got = explain(snap, _plan(snap), "a", last_changes={P5: change})
    assert [(q.pool, q.quota, q.in_use, q.planned) for q in got.quotas] == [(P5, 8, 8, 16)]
    assert got.quotas[0].last_change == change
    assert (f"  {P5}: quota 8, 8 in use; the latest plan makes it 16; last changed 24→8 on 2026-11-29 12:00 "
            "(applied): idle 90 % of its quota") in got.lines()
    assert explain(snap, None, "b").lines()[1:] == ["  no quota on any pool", "nothing pending"]


@properties(200)
@given(quota=st.integers(0, 40), used=st.integers(0, 32), other_quota=st.integers(0, 40),
       other_used=st.integers(0, 32), size=st.integers(1, 40))
def test_no_reason_only_when_kueue_would_admit_it(quota: int, used: int, other_quota: int, other_used: int,
                                                    size: int) -> None:
    """An answer without a reason means one of Kueue's two paths admits it: nominal quota (reclaiming what the other
    team borrows) or borrowing within the limit from what is idle; and the answer is the same on every call."""
    if used + other_used > 32:
        return
    snap = _snap({"a": quota, "b": other_quota}, {"a": used, "b": other_used}, _job(size))
    got = explain(snap, None, "a")
    assert got == explain(snap, None, "a")
    free = 32 - used - other_used
    nominal = used + size <= quota and size <= free + max(0, other_used - other_quota)
    borrowing = used + size <= quota * 1.5 and size <= free
    assert (got.waiting[0].reasons == ()) == (nominal or borrowing)


def test_workloads_are_answered_oldest_first_whatever_order_collect_listed_them() -> None:
    young, old = _job(8, name="young"), _job(8, name="old").model_copy(update={"created": T0 - timedelta(days=1)})
    unknown = _job(8, name="undated").model_copy(update={"created": None})
    snap = _snap({"a": 32}, {}, unknown, young, old)
    assert [w.name for w in explain(snap, None, "a").waiting] == ["old", "young", "undated"]


def test_a_workload_that_declares_its_run_time_says_so_in_its_title() -> None:
    declared = _job(8).model_copy(update={"declared_s": 4 * 3600.0})
    got = explain(_snap({"a": 8, "b": 24}, {"a": 8, "b": 20}, declared, _job(8, name="silent")), None, "a")
    lines = got.lines()
    assert f"workload job on {P5}: 8 accelerators in 1 pod, waiting since 2026-11-30 09:00, declared run 4 h" in lines
    assert not any("declared" in line for line in lines if line.startswith("workload silent"))
    assert got.model_dump(mode="json")["waiting"][0]["declared_s"] == 4 * 3600.0


def test_why_lists_what_the_team_runs_newest_admitted_first_and_how_long_each_has_run() -> None:
    def runs(name: str, minutes: float | None, team: str = "a") -> RunningWorkload:
        return RunningWorkload(name=name, team=team, pool=P5, accelerators=8, pods=1,
                               started=None if minutes is None else T0 - timedelta(minutes=minutes))

    snap = _snap({"a": 24}, {"a": 24}, running_workloads=(
        runs("old", 300), runs("unknown", None), runs("new", 12), runs("theirs", 1, team="b")))
    got = explain(snap, None, "a")
    assert [(r.name, r.ran_s) for r in got.running] == [("new", 720), ("old", 18_000), ("unknown", None)]
    assert got.running_unlisted == 0
    lines = got.lines()
    assert f"  running workload new on {P5}: 8 accelerators, admitted 2026-11-30 11:48, running 12 min" in lines
    assert f"  running workload old on {P5}: 8 accelerators, admitted 2026-11-30 07:00, running 5 h" in lines
    assert f"  running workload unknown on {P5}: 8 accelerators, admitted at a time not known" in lines
    many = _snap({"a": 24}, {"a": 24}, running_workloads=tuple(runs(f"w{k}", k) for k in range(RUNNING_SHOWN + 3)))
    got = explain(many, None, "a")
    assert [r.name for r in got.running] == [f"w{k}" for k in range(RUNNING_SHOWN)]
    assert got.running_unlisted == 3
    assert "  … and 3 more running" in got.lines()
