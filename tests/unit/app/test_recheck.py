"""The check before an approved plan is written (rebalancer.app.workflow.recheck), on the in-memory store: the plan
is written as approved when nothing moved, made again and written when it stays within the approval, superseded
with a new round of approval when it goes beyond it, and the rounds are bounded."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from support.clusters import T0, policy, snapshot

from rebalancer.app.notifications.notify import approval_id_of
from rebalancer.app.workflow import run_plan, state
from rebalancer.app.workflow.recheck import MAX_APPROVAL_ROUNDS, Rechecked, recheck
from rebalancer.app.workflow.state import RunRef
from rebalancer.app.workflow.stored_basis import load_basis
from rebalancer.domain.policy import Policy
from rebalancer.domain.records import ApprovalRecord
from rebalancer.domain.snapshot import Snapshot
from rebalancer_tools.fakes.memory_store import MemoryStore
from rebalancer_tools.fakes.ticking_clock import TickingClock

P5 = "ml.p5.48xlarge"
POLICY = policy({"a": {"weight": 1}, "b": {"weight": 1}}, mode="approve")
RUN = RunRef(cluster_name="test", execution_name="run-1", execution_arn="arn:aws:states:::execution:sm:run-1")
APPROVED = approval_id_of(RUN.execution_arn)


def cluster(healthy: int = 4, failed: int = 0, a: int = 24, taken_at: datetime = T0) -> Snapshot:
    """4 p5 nodes; a holds 24 and runs 8; b holds 8 and waits for 24 more."""
    return snapshot({P5: (healthy, failed)}, quotas={"a": {P5: a}, "b": {P5: 8}},
                    in_use={"a": {P5: 8}, "b": {P5: 8}}, pending={"b": {P5: 24}}, taken_at=taken_at)


@pytest.fixture
def store() -> MemoryStore:
    """The run planned on `cluster()` and its plan approved (a 24→8, b 8→24)."""
    s = MemoryStore(now=TickingClock(T0))
    state.record_snapshot(s.artifacts, RUN, cluster())
    planned = run_plan.make_run_plan(cluster(), POLICY, T0, store=s)
    run_plan.record_plan(s, RUN, planned)
    s.approvals.put(ApprovalRecord(approval_id=APPROVED, task_token="t", execution_arn=RUN.execution_arn,
                                   cluster_name="test", status="approved", decide_by=T0 + timedelta(hours=1)))
    return s


def again(store: MemoryStore, snap: Snapshot, *, minutes: int = 10, approval_round: int = 1,
          the_policy: Policy = POLICY) -> Rechecked:
    """The cluster collected again `minutes` after the plan, and the recheck."""
    state.record_snapshot(store.artifacts, RUN, snap.model_copy(update={"taken_at": T0 + timedelta(minutes=minutes)}))
    return recheck(RUN, the_policy, T0 + timedelta(minutes=minutes), store=store, approval_round=approval_round,
                   approvals=store.approvals, approval_id=approval_id_of(RUN.execution_arn, approval_round))


def changes(s: MemoryStore) -> list[tuple[str, float, float]]:
    return [(c.team, c.before, c.after) for c in state.load_plan(s.artifacts, RUN).changes]


def records(s: MemoryStore, kind: str) -> list[dict[str, Any]]:
    return [r for r in s.audit.records("test") if r["kind"] == kind]


def test_a_plan_whose_cluster_did_not_move_is_written_as_approved(store: MemoryStore) -> None:
    done = again(store, cluster())
    assert (done.outcome, done.decision, done.notes()) == ("fresh", "apply", [])
    assert changes(store) == [("a", 24, 8), ("b", 8, 24)]
    assert [r["outcome"] for r in records(store, "plan")] == ["approve"]  # nothing planned again was recorded
    assert [r["outcome"] for r in records(store, "recheck")] == ["fresh"]


def test_after_a_node_failed_the_plan_is_made_again_and_written_within_the_approval(store: MemoryStore) -> None:
    done = again(store, cluster(healthy=2, failed=2))  # 16 GPUs: b gets nothing more, a's cut stays
    assert (done.outcome, done.decision) == ("replanned", "apply")
    assert changes(store) == [("a", 24, 8)]
    assert done.stale[0] == f"the healthy capacity of {P5} fell from 32 to 16"
    assert done.notes()[0].startswith("The approved plan was made again before writing, and stays within")
    assert [r["outcome"] for r in records(store, "plan")] == ["approve", "replanned"]
    assert store.approvals.get(APPROVED).status == "approved"  # type: ignore[union-attr]
    basis = load_basis(store.artifacts, RUN)
    assert basis is not None
    assert basis.capacity[P5] == 16  # the write is checked against the new basis


def test_after_a_console_edit_the_approval_is_superseded_and_asked_again(store: MemoryStore) -> None:
    edited = cluster(a=28)
    edited = edited.model_copy(update={"quotas": tuple(q.model_copy(update={"ComputeQuotaVersion": 2})
                                                       if q.team == "a" else q for q in edited.quotas)})
    done = again(store, edited)
    assert (done.outcome, done.decision, done.approval_round) == ("superseded", "approve", 2)
    assert done.stale == ("the quota of team a moved (version 1 → 2)",)
    assert done.beyond == (f"a {P5} accelerators 28→8: larger than the approved 24→8",)
    assert changes(store) == [("a", 28, 8), ("b", 8, 24)]  # the new plan is the one asked about
    assert store.approvals.get(APPROVED).status == "superseded"  # type: ignore[union-attr]
    [superseded] = [r for r in records(store, "approval") if r["outcome"] == "superseded"]
    assert superseded["detail"]["approval_id"] == APPROVED
    assert "beyond the approval: " + done.beyond[0] in done.notes()
    assert approval_id_of(RUN.execution_arn, 2) != APPROVED  # the new round asks under a new id


def test_the_rounds_of_asking_again_are_bounded(store: MemoryStore) -> None:
    edited = cluster(a=28)
    edited = edited.model_copy(update={"quotas": tuple(q.model_copy(update={"ComputeQuotaVersion": 2})
                                                       if q.team == "a" else q for q in edited.quotas)})
    done = again(store, edited, approval_round=MAX_APPROVAL_ROUNDS)
    assert (done.outcome, done.decision) == ("gave_up", "stale")
    assert changes(store) == [("a", 24, 8), ("b", 8, 24)]  # nothing new recorded, nothing to write
    assert done.notes()[0].startswith(f"Stopped without writing: the approved plan went stale in "
                                      f"{MAX_APPROVAL_ROUNDS} rounds")


def test_an_old_plan_is_made_again_even_when_nothing_moved(store: MemoryStore) -> None:
    done = again(store, cluster(), minutes=61)
    assert done.stale == ("the plan is 61 min old, more than approval.max_plan_age_minutes (60)",)
    assert done.outcome == "replanned"
    assert again(store, cluster(), minutes=90, the_policy=POLICY.model_copy(update={
        "approval": POLICY.approval.model_copy(update={"max_plan_age_minutes": 120})})).outcome == "fresh"


def test_a_policy_that_is_a_dry_run_now_writes_nothing(store: MemoryStore) -> None:
    assert again(store, cluster(), the_policy=POLICY.model_copy(update={"mode": "dry-run"})).decision == "dry_run"


def test_a_cluster_someone_put_in_line_meanwhile_leaves_nothing_to_write(store: MemoryStore) -> None:
    settled = snapshot({P5: 4}, quotas={"a": {P5: 8}, "b": {P5: 24}}, in_use={"a": {P5: 8}, "b": {P5: 8}},
                       pending={"b": {P5: 24}})
    settled = settled.model_copy(update={"quotas": tuple(q.model_copy(update={"ComputeQuotaVersion": 2})
                                                         for q in settled.quotas)})
    done = again(store, settled)
    assert (done.outcome, done.decision, changes(store)) == ("no_change", "no_change", [])
