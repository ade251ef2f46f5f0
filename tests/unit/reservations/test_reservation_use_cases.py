"""Making, deciding and announcing reservations (rebalancer.app.reservations) on the in-memory store: pending when
the approval thresholds say so and honoured only once approved, decided once, audited at every step, and the start
and the end each announced once by the plan run that first sees them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from support.clock import T0, ticking
from support.clusters import policy, snapshot
from support.reservation_news import Told

from rebalancer.app import reservations
from rebalancer.app.notifications.messages import Message, render_blocks, render_text
from rebalancer.domain.policy import Policy
from rebalancer.domain.reservation import Reservation
from rebalancer.errors import ReservationNotPending, ReservationRefused, UnknownReservation
from rebalancer.planning.context import planning_context
from rebalancer_tools.fakes.memory_store import MemoryStore

P5 = "ml.p5.48xlarge"
POLICY = policy({"research": {}, "inference": {"guarantee": {P5: 16}}}, approval={"moved_accelerators": 16})
SNAP = snapshot({P5: 8})


def request(n: int, hours: float = 24) -> reservations.Request:
    return reservations.Request("test", "research", P5, n, T0 + timedelta(hours=1), T0 + timedelta(hours=1 + hours),
                                "launch")


def make(store: MemoryStore, n: int, pol: Policy = POLICY) -> Reservation:
    rid = f"r-{len(store.reservations.of_cluster('test'))}"
    return reservations.reserve(store.reservations, store.audit, request(n), policy=pol, snapshot=SNAP, now=T0,
                                new_id=lambda: rid, who="alice")


def test_a_small_reservation_is_approved_and_a_large_one_waits_for_an_admin() -> None:
    store = MemoryStore(now=ticking())
    small, large = make(store, 16), make(store, 17)
    assert (small.status, large.status) == ("approved", "pending")
    at = T0 + timedelta(hours=2)
    active = planning_context(SNAP.model_copy(update={"taken_at": at}), POLICY,
                              reservations=store.reservations.of_cluster("test")).reservations
    assert [r.reservation_id for r in active] == [small.reservation_id]
    record = [r for r in store.audit.records("test") if r["kind"] == "reservation"][-1]
    assert record["outcome"] == "requested:pending"
    assert record["who"] == "alice"
    assert "above approval.moved_accelerators 16" in record["detail"]["needs_approval"]


def test_mode_approve_holds_every_reservation_for_an_admin() -> None:
    store = MemoryStore(now=ticking())
    assert make(store, 1, POLICY.model_copy(update={"mode": "approve"})).status == "pending"


def test_approval_is_once_and_cancel_ends_either() -> None:
    store = MemoryStore(now=ticking())
    rec = make(store, 40)
    approved = reservations.decide(store.reservations, store.audit, "test", rec.reservation_id, "approve", "bob")
    assert (approved.status, approved.decided_by) == ("approved", "bob")
    with pytest.raises(ReservationNotPending, match="is approved"):
        reservations.decide(store.reservations, store.audit, "test", rec.reservation_id, "approve", "bob")
    assert reservations.decide(store.reservations, store.audit, "test", rec.reservation_id, "cancel",
                               "carol").status == "cancelled"
    with pytest.raises(ReservationNotPending):
        reservations.decide(store.reservations, store.audit, "test", rec.reservation_id, "cancel", "carol")
    with pytest.raises(UnknownReservation):
        reservations.decide(store.reservations, store.audit, "test", "r-none", "approve", "bob")
    outcomes = [r["outcome"] for r in store.audit.records("test") if r["kind"] == "reservation"]
    assert outcomes == ["requested:pending", "approved:approved", "cancelled:cancelled"]


def test_a_refused_reservation_stores_nothing() -> None:
    store = MemoryStore(now=ticking())
    make(store, 40)
    with pytest.raises(ReservationRefused):
        make(store, 16)  # 40 + 16 + inference's 16 > 64
    assert len(store.reservations.of_cluster("test")) == 1
    assert len(store.audit.records("test")) == 1


def test_start_and_end_are_announced_once_each_with_the_reason() -> None:
    store, told = MemoryStore(now=ticking()), Told()
    rec = make(store, 16)

    def run(hours: float) -> list[str]:
        return told.news(store, T0 + timedelta(hours=hours))

    assert run(0.25) == []  # not begun
    started = run(0.5)  # the policy's default lead: a run interval (15 min) and 15 min to settle
    assert rec.lead_minutes == 30
    assert len(started) == 1
    assert "for launch" in started[0]
    assert "research is guaranteed at least 16 of" in started[0]
    assert run(2) == []
    ended = run(25)
    assert len(ended) == 1
    assert "ended" in ended[0]
    assert "returns to the policy" in ended[0]
    assert run(26) == []
    assert [k for k, _ in told.sent] == ["reservation_started", "reservation_ended"]
    stored = store.reservations.get("test", rec.reservation_id)
    assert stored is not None
    assert stored.started_at is not None
    assert stored.ended_at is not None
    text = render_text(Message(kind="reservation_started", cluster="test", notes=told.sent[0][1]))
    assert text[0] == "Reservation started on test"
    assert "for launch" in text[1]
    blocks = render_blocks(Message(kind="reservation_ended", cluster="test", notes=told.sent[1][1]))
    assert "for launch" in blocks[1]["text"]["text"]


def test_a_retried_plan_step_says_its_run_s_lines_again_and_audits_them_once() -> None:
    """The run that saw a window begin flags it with its snapshot's time: that run again (its Plan step retried)
    finds its own flag and says the line again; the audit record is written once; the next run says nothing."""
    store = MemoryStore(now=ticking())
    make(store, 16)
    at = T0 + timedelta(hours=1)
    first = reservations.news(store.reservations, store.audit, "test", at)
    assert first[0]
    assert reservations.news(store.reservations, store.audit, "test", at) == first
    assert [r["outcome"] for r in store.audit.records("test") if r["kind"] == "reservation"] == [
        "requested:approved", "started:approved"]
    assert reservations.news(store.reservations, store.audit, "test", at + timedelta(minutes=15)) == ([], [])
    end = T0 + timedelta(hours=25)
    ended = reservations.news(store.reservations, store.audit, "test", end)
    assert ended[1]
    assert reservations.news(store.reservations, store.audit, "test", end) == ended


def test_a_reservation_cancelled_after_its_start_is_announced_as_cancelled() -> None:
    store, told = MemoryStore(now=ticking()), Told()
    rec = make(store, 16)
    told.news(store, T0 + timedelta(hours=1))
    reservations.decide(store.reservations, store.audit, "test", rec.reservation_id, "cancel", "bob")
    lines = told.news(store, T0 + timedelta(hours=2))
    assert len(lines) == 1
    assert "cancelled" in lines[0]


def test_a_pending_reservation_is_never_announced() -> None:
    store, told = MemoryStore(now=ticking()), Told()
    make(store, 40)
    assert told.news(store, T0 + timedelta(hours=2)) == []
    assert told.sent == []


def test_the_requester_cannot_approve_their_own_reservation() -> None:
    store = MemoryStore(now=ticking())
    rec = make(store, 40)
    assert rec.requested_by == "alice"
    with pytest.raises(ReservationNotPending, match="requested by alice: another admin approves it"):
        reservations.decide(store.reservations, store.audit, "test", rec.reservation_id, "approve", "alice")
    got = store.reservations.get("test", rec.reservation_id)
    assert got is not None
    assert got.status == "pending"
    assert reservations.decide(store.reservations, store.audit, "test", rec.reservation_id, "cancel",
                               "alice").status == "cancelled"  # withdrawing one's own request is fine
