"""Reservations as use cases: make one (refused when it cannot fit; pending when the policy's approval thresholds
say a change of its size needs an admin), approve or cancel it, and, at each plan run, announce the ones that began
or ended since the last run (once each: the run that first sees it sets the flag on the record). Every step has its
audit record (`app.workflow.audit.reservation`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Literal, NamedTuple, Protocol

from rebalancer.app.workflow import audit
from rebalancer.app.workflow.audit import AuditLog
from rebalancer.domain.policy import Policy
from rebalancer.domain.reservation import Reservation, ReservationStatus
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import ReservationNotPending
from rebalancer.planning.reservations import refuse_if_unfit

Flag = Literal["started_at", "ended_at"]


class ReservationStore(Protocol):
    """rebalancer.adapters.dynamodb.reservations.TableReservations; rebalancer_tools.memory_store.MemoryReservations."""

    def put(self, rec: Reservation) -> bool: ...
    def get(self, cluster: str, reservation_id: str) -> Reservation | None: ...
    def of_cluster(self, cluster: str) -> list[Reservation]: ...
    def decide(self, cluster: str, reservation_id: str, status: ReservationStatus, who: str,
               allowed: Sequence[ReservationStatus]) -> Reservation: ...
    def mark(self, cluster: str, reservation_id: str, flag: Flag, at: datetime) -> bool: ...


class Outlet(Protocol):
    """Where start and end messages go (rebalancer.app.notifications.outlets.BudgetOutlet sends any kind)."""

    def send(self, kind: str, lines: tuple[str, ...]) -> None: ...


class Request(NamedTuple):
    cluster: str
    team: str
    pool: str
    accelerators: int
    start: datetime
    until: datetime
    reason: str


def needs_approval(policy: Policy, accelerators: int) -> str | None:
    """Why a reservation of this size waits for an admin, as a plan moving as many accelerators would."""
    if policy.mode == "approve":
        return "mode is approve: every change needs an admin"
    if accelerators > policy.approval.moved_accelerators:
        return f"reserves {accelerators} accelerators, above approval.moved_accelerators " \
               f"{policy.approval.moved_accelerators}"
    return None


def reserve(store: ReservationStore, log: AuditLog, request: Request, *, policy: Policy, snapshot: Snapshot,
            now: datetime, new_id: Callable[[], str], who: str) -> Reservation:
    """Stores the reservation (approved, or pending with the reason it waits) once it fits; refuses it otherwise
    (ReservationRefused, nothing stored)."""
    why = needs_approval(policy, request.accelerators)
    rec = Reservation(reservation_id=new_id(), cluster=request.cluster, team=request.team, pool=request.pool,
                      accelerators=request.accelerators, start=request.start, until=request.until,
                      reason=request.reason, status="pending" if why else "approved", requested_by=who,
                      requested_at=now)
    refuse_if_unfit(rec, policy, snapshot, store.of_cluster(request.cluster), now)
    if not store.put(rec):
        raise ReservationNotPending(f"reservation {rec.reservation_id} exists already")
    audit.reservation(log, rec, "requested", who, note=why)
    return rec


def decide(store: ReservationStore, log: AuditLog, cluster: str, reservation_id: str,
           decision: Literal["approve", "cancel"], who: str) -> Reservation:
    """Pending → approved (once), or pending / approved → cancelled; anything else raises ReservationNotPending.
    Approval is a second pair of eyes: whoever requested a reservation cannot approve it (ReservationNotPending)."""
    if decision == "approve":
        asked = store.get(cluster, reservation_id)
        if asked is not None and asked.requested_by == who:
            raise ReservationNotPending(f"reservation {reservation_id} was requested by {who}: another admin approves "
                                        "it")
        rec = store.decide(cluster, reservation_id, "approved", who, ("pending",))
    else:
        rec = store.decide(cluster, reservation_id, "cancelled", who, ("pending", "approved"))
    audit.reservation(log, rec, "approved" if decision == "approve" else "cancelled", who)
    return rec


def announce(store: ReservationStore, log: AuditLog, cluster: str, at: datetime, outlet: Outlet | None) -> list[str]:
    """The reservations that began (approved, inside their window) or ended (past `until`, or cancelled, after they
    began) by `at` and were not announced yet: each flagged on its record, audited and sent once."""
    started, ended = [], []
    for rec in store.of_cluster(cluster):
        if rec.started_at is None and rec.active_at(at) and store.mark(cluster, rec.reservation_id, "started_at", at):
            started.append(f"{rec.label}: began; {rec.team} is guaranteed at least {rec.accelerators} of "
                           f"{rec.pool} from this run's plan (reserved by {rec.requested_by})")
            audit.reservation(log, rec, "started", None)
        over = rec.status == "cancelled" or at >= rec.until
        if rec.started_at is not None and rec.ended_at is None and over \
                and store.mark(cluster, rec.reservation_id, "ended_at", at):
            ended.append(f"{rec.label}: {'cancelled' if rec.status == 'cancelled' else 'ended'}; {rec.team}'s quota "
                         f"on {rec.pool} returns to the policy")
            audit.reservation(log, rec, "ended", None)
    if outlet is not None:
        for kind, lines in (("reservation_started", started), ("reservation_ended", ended)):
            if lines:
                outlet.send(kind, tuple(lines))
    return started + ended
