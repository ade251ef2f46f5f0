"""`why` over the stored runs (rebalancer.app.why): the latest run's snapshot and plan, the last applied change of
each of the team's quotas with its plan's reason, and one clear line for an unknown team, a bad name or no run."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from support.clock import T0, ticking
from support.why_runs import CLUSTER, FIRST, P5, SECOND, record_runs, run

from rebalancer.adapters.sagemaker.outcomes import ApplyReport, ChangeOutcome, Result
from rebalancer.app.why import why
from rebalancer.app.workflow import audit
from rebalancer.domain.plan import Change, Plan
from rebalancer.errors import InvalidInput, NotFound
from rebalancer_tools.fakes.memory_store import MemoryStore
from rebalancer_tools.fakes.ticking_clock import TickingClock


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(now=ticking())
    record_runs(s)
    return s


def test_the_latest_run_and_the_last_applied_change(store: MemoryStore) -> None:
    got = why(store, CLUSTER, "a")
    assert got.execution == SECOND
    (line,) = got.quotas
    assert (line.pool, line.quota, line.in_use) == (P5, 8, 8)
    assert line.last_change is not None
    assert (line.last_change.execution, line.last_change.before, line.last_change.after) == (FIRST, 24, 8)
    assert line.last_change.reason == "idle 90 % of its quota"
    assert line.last_change.outcome == "applied"
    (gang,) = got.waiting
    assert gang.name == "pretrain"
    assert [r.kind for r in gang.reasons] == ["over_quota", "borrow_limit"]


def test_a_planned_change_never_applied_is_not_a_last_change(store: MemoryStore) -> None:
    raise_ = Change(team="a", instance_type=P5, resource="accelerators", before=8, after=24, reason="3 jobs pending")
    plan = Plan(cluster_name=CLUSTER, cluster_arn="arn", taken_at=store.now(), mode="approve", changes=(raise_,))
    audit.planned(store.audit, run("test-0003"), plan, decision="approve", known_versions={})
    got = why(store, CLUSTER, "a")
    assert got.execution == SECOND  # run 3 has no stored snapshot
    assert got.quotas[0].last_change is not None
    assert got.quotas[0].last_change.execution == FIRST


def rollback_of_a(result: Result, held: float, holds: float, message: str = "") -> ApplyReport:
    outcome = ChangeOutcome(team="a", operation="UpdateComputeQuota", quota_id="cq-a", result=result,
                            held={P5: held}, holds={P5: holds}, message=message)
    return ApplyReport(cluster_arn="arn", outcomes=(outcome,), succeeded=result == "applied")


def test_a_rollback_is_the_last_change(store: MemoryStore) -> None:
    plan = Plan.model_validate(store.artifacts.get(FIRST, "PLAN"))
    audit.rolled_back(store.audit, run(FIRST), plan, rollback_of_a("applied", 8, 24), ok=True,
                      cause="verify timed out", scheduler_line=None)
    change = why(store, CLUSTER, "a").quotas[0].last_change
    assert change is not None
    assert (change.before, change.after, change.outcome) == (8, 24, "rolled back")
    assert change.reason == f"run {FIRST} rolled back (idle 90 % of its quota)"


def test_a_quota_a_rollback_left_alone_shows_what_it_holds_and_why(store: MemoryStore) -> None:
    """Someone set a's quota to 12 after the run wrote 8: the rollback left it, and `why` says so, at 12."""
    plan = Plan.model_validate(store.artifacts.get(FIRST, "PLAN"))
    left = "changed by someone else after our write (our version 2, now 3); left as it is"
    audit.rolled_back(store.audit, run(FIRST), plan, rollback_of_a("conflict", 12, 12, left), ok=False,
                      cause="ApplyFailed", scheduler_line=None)
    answer = why(store, CLUSTER, "a")
    change = answer.quotas[0].last_change
    assert change is not None
    assert (change.after, change.outcome, change.reason) == (12, "left", left)
    assert f"left at 12 by the rollback of run {FIRST} on " in "\n".join(answer.lines())


def test_bad_input_is_one_line(store: MemoryStore) -> None:
    with pytest.raises(InvalidInput, match=r"^team: no team 'nobody' in the latest snapshot of test \(teams: a, b\)$"):
        why(store, CLUSTER, "nobody")
    with pytest.raises(InvalidInput, match=r"^team: not a team name"):
        why(store, CLUSTER, "a b; rm -rf")
    with pytest.raises(NotFound, match=r"^no stored run of cluster other"):
        why(store, "other", "a")


def test_the_audit_log_is_read_only_as_far_as_the_answer_needs(store: MemoryStore) -> None:
    """A year of runs before: the answer (the latest run, a's last change and its plan) is in the newest three."""
    older = MemoryStore(now=TickingClock(T0 - timedelta(days=365)))
    for i in range(300):
        plan = Plan(cluster_name=CLUSTER, cluster_arn="arn", taken_at=older.now(), mode="auto")
        audit.planned(older.audit, run(f"old-{i:04d}"), plan, decision="no_change", known_versions={})
    store.audit.log[CLUSTER] = {**older.audit.log[CLUSTER], **store.audit.log[CLUSTER]}
    read: list[dict[str, object]] = []
    newest = store.audit.newest

    def counted(cluster: str, page_size: int = 100) -> Iterator[dict[str, object]]:
        for record in newest(cluster, page_size):
            read.append(record)
            yield record

    store.audit.newest = counted  # type: ignore[method-assign]
    got = why(store, CLUSTER, "a")
    assert got.quotas[0].last_change is not None
    assert [(r["execution"], r["kind"]) for r in read] == [(SECOND, "plan"), (FIRST, "apply"), (FIRST, "plan")]


def test_a_change_beyond_what_is_read_is_said(store: MemoryStore) -> None:
    got = why(store, CLUSTER, "a", read_max=1)
    assert got.quotas[0].last_change is None
    assert got.notes == (f"the newest 1 audit records name no change of its quota on {P5} (`rebalancer why` on "
                         "the command line reads further, `rebalancer history` all)",)


def test_another_teams_stored_reservation_is_named(store: MemoryStore) -> None:
    """The answer reads the cluster's reservations from the store: an approved one active at the snapshot's time
    holds the free accelerators for its team; a pending one holds nothing. Run 3: a's pending work is 4, what is
    free."""
    from support.why_runs import waiting_snapshot

    from rebalancer.app.workflow import state
    from rebalancer.domain.reservation import Reservation

    snap = waiting_snapshot()
    small = snap.model_copy(update={"pending_workloads": (snap.pending_workloads[0].model_copy(
        update={"accelerators": 4.0, "pods": 1}),)})
    plan = Plan.model_validate(store.artifacts.get(SECOND, "PLAN"))
    state.record_snapshot(store.artifacts, run("test-0003"), small)
    store.artifacts.put("test-0003", "PLAN", plan.model_dump(mode="json"))
    audit.planned(store.audit, run("test-0003"), plan, decision="no_change", known_versions={})
    assert [r.kind for r in why(store, CLUSTER, "a").waiting[0].reasons] == []
    held = Reservation(reservation_id="r-0001", cluster=CLUSTER, team="c", pool=P5, accelerators=4,
                       start=small.taken_at - timedelta(hours=1), until=small.taken_at + timedelta(days=1),
                       reason="launch", status="pending", requested_by="admin",
                       requested_at=small.taken_at - timedelta(days=2))
    store.reservations.put(held)
    assert [r.kind for r in why(store, CLUSTER, "a").waiting[0].reasons] == []
    store.reservations.decide(CLUSTER, "r-0001", "approved", "admin", allowed=("pending",))
    reasons = why(store, CLUSTER, "a").waiting[0].reasons
    assert [(r.kind, r.text) for r in reasons] == [
        ("over_quota", "over quota: 8 in use + 4 asked is more than its quota of 8, so it must borrow"),
        ("reservation", "4 of the free accelerators are reserved for c")]
