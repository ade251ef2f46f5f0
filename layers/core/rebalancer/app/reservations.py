"""Reservations as use cases: make one (one window, or one that comes back), approve or cancel it (or one window of
a recurring one), and, at each plan run, say which windows began or ended since the last run (once each: the run
that first sees it sets the flag on the record, and its Notify step sends the line: rebalancer.app.workflow.news).
Every step has its audit record (`app.workflow.audit.reservation`).

Made atomically: the check reads the cluster's reservations with their version (`ReservationRecords.book`) and the
write stores the new one only while that version holds, moving it on (one DynamoDB transaction). Two reservations
checked at the same moment cannot both be stored on the same reading: the second finds the version moved, reads
again, and is checked against the first (or refused)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal, Protocol

from pydantic import ValidationError

from rebalancer.app.workflow import audit
from rebalancer.app.workflow.audit import AuditLog
from rebalancer.domain.clock import time_zone
from rebalancer.domain.policy import Policy
from rebalancer.domain.reservation import (
    RESERVATION_ID,
    Book,
    Flag,
    Reservation,
    ReservationStatus,
    Window,
    occurrence_key,
    parse_every,
)
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import InvalidInput, ReservationNotPending, TransientError, UnknownReservation
from rebalancer.parsing.text import printable, short
from rebalancer.planning.reservations import default_lead_minutes, refuse_if_unfit

ATTEMPTS = 5  # checks of one request against reservations others stored meanwhile, before giving up (transient)


class ReservationRecords(Protocol):
    """rebalancer.adapters.dynamodb.reservations.TableReservations;
    rebalancer_tools.fakes.memory_store.MemoryReservations."""

    def put(self, rec: Reservation, *, version: int | None = None) -> bool: ...
    def book(self, cluster: str) -> Book: ...
    def get(self, cluster: str, reservation_id: str) -> Reservation | None: ...
    def of_cluster(self, cluster: str) -> list[Reservation]: ...
    def decide(self, cluster: str, reservation_id: str, status: ReservationStatus, who: str,
               allowed: Sequence[ReservationStatus]) -> Reservation: ...
    def skip(self, cluster: str, reservation_id: str, occurrence: str,
             allowed: Sequence[ReservationStatus]) -> Reservation: ...
    def mark(self, cluster: str, reservation_id: str, flag: Flag, at: datetime,
             occurrence: str | None = None) -> bool: ...


@dataclass(frozen=True, slots=True)
class Request:
    cluster: str
    team: str
    pool: str
    accelerators: int
    start: datetime
    until: datetime
    reason: str
    every: str | None = None  # "Mon-Fri 18:00-08:00": windows that come back, in `timezone`
    timezone: str = "UTC"
    lead_minutes: int | None = None  # None: planning.reservations.default_lead_minutes of the policy


def needs_approval(policy: Policy, accelerators: int) -> str | None:
    """Why a reservation of this size waits for an admin, as a plan moving as many accelerators would."""
    if policy.mode == "approve":
        return "mode is approve: every change needs an admin"
    if accelerators > policy.approval.moved_accelerators:
        return f"reserves {accelerators} accelerators, above approval.moved_accelerators " \
               f"{policy.approval.moved_accelerators}"
    return None


def reserve(store: ReservationRecords, log: AuditLog, request: Request, *, policy: Policy, snapshot: Snapshot,
            now: datetime, new_id: Callable[[], str], who: str) -> Reservation:
    """Stores the reservation (approved, or pending with the reason it waits) once it fits; refuses it otherwise
    (ReservationRefused, nothing stored). The check and the write are one step (see the module)."""
    seen = snapshot.cluster.ClusterName
    if seen != request.cluster:
        raise InvalidInput(f"the snapshot is of cluster {short(seen)}, not {request.cluster}: capacity is checked "
                           "on the cluster reserved on", field="--snapshot", value=seen)
    why = needs_approval(policy, request.accelerators)
    rec = _record(request, new_id(), "pending" if why else "approved", policy, who, now)
    for _ in range(ATTEMPTS):
        book = store.book(request.cluster)
        refuse_if_unfit(rec, policy, snapshot, book.reservations, now)
        if store.put(rec, version=book.version):
            audit.reservation(log, rec, "requested", who, note=why)
            return rec
        if store.get(request.cluster, rec.reservation_id) is not None:
            raise ReservationNotPending(f"reservation {rec.reservation_id} exists already")
    raise TransientError(f"the reservations of {request.cluster} changed {ATTEMPTS} times while this one was "
                         "checked; nothing was stored, try again")


def _record(request: Request, reservation_id: str, status: ReservationStatus, policy: Policy, who: str,
            now: datetime) -> Reservation:
    """The request as a reservation; its recurrence and time zone refused in one line naming the option."""
    if request.every is not None:
        try:
            parse_every(request.every)
        except ValueError as e:
            raise InvalidInput(str(e), field="--every", value=request.every) from None
    try:
        time_zone(request.timezone)
    except ValueError as e:
        raise InvalidInput(str(e), field="--tz", value=request.timezone) from None
    lead = default_lead_minutes(policy) if request.lead_minutes is None else request.lead_minutes
    try:
        return Reservation(reservation_id=reservation_id, cluster=request.cluster, team=request.team,
                           pool=request.pool, accelerators=request.accelerators, start=request.start,
                           until=request.until, reason=request.reason, status=status, requested_by=who,
                           requested_at=now, every=request.every, timezone=request.timezone, lead_minutes=lead)
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        where = {"until": "--until", "start": "--from", "lead_minutes": "--lead", "accelerators": "--accelerators"}
        field = where.get(str(first["loc"][0]) if first["loc"] else "", "--until")
        raise InvalidInput(first["msg"].removeprefix("Value error, "), field=field) from None


def known(reservation_id: str) -> str:
    """`reservation_id` when it has the shape of one (what `reserve` makes); InvalidInput showing it escaped
    otherwise, so an id typed with escapes or line breaks is never echoed as it came."""
    if not RESERVATION_ID.fullmatch(reservation_id):
        raise InvalidInput(f"not a reservation id (letters, digits, '-' and '_', at most 64): {short(reservation_id)}",
                           field="reservation id")
    return reservation_id


def decide(store: ReservationRecords, log: AuditLog, cluster: str, reservation_id: str,
           decision: Literal["approve", "cancel"], who: str) -> Reservation:
    """Pending → approved (once), or pending / approved → cancelled; anything else raises ReservationNotPending.
    Approval is a second pair of eyes: whoever requested a reservation cannot approve it (ReservationNotPending)."""
    known(reservation_id)
    if decision == "approve":
        asked = store.get(cluster, reservation_id)
        if asked is not None and asked.requested_by == who:
            raise ReservationNotPending(f"reservation {reservation_id} was requested by {printable(who)}: another "
                                        "admin approves it")
        rec = store.decide(cluster, reservation_id, "approved", who, ("pending",))
    else:
        rec = store.decide(cluster, reservation_id, "cancelled", who, ("pending", "approved"))
    audit.reservation(log, rec, "approved" if decision == "approve" else "cancelled", who)
    return rec


def cancel_occurrence(store: ReservationRecords, log: AuditLog, cluster: str, reservation_id: str, local_day: date,
                      who: str) -> tuple[Reservation, Window]:
    """Cancels the window of a recurring reservation that opens on `local_day` (in its time zone); the others stay.
    A window already begun ends at the next run (announced as cancelled)."""
    current = store.get(cluster, known(reservation_id))
    if current is None:
        raise UnknownReservation(f"no reservation {reservation_id} on {printable(cluster)}")
    if not current.recurring:
        raise InvalidInput(f"reservation {reservation_id} has one window: cancel it whole (leave --occurrence out)",
                           field="--occurrence", value=local_day.isoformat())
    key = occurrence_key(current, local_day)
    if key is None:
        raise InvalidInput(f"no window of reservation {reservation_id} ({current.every} {current.timezone}) opens on "
                           f"{local_day:%a %Y-%m-%d} that is not cancelled already", field="--occurrence",
                           value=local_day.isoformat())
    rec = store.skip(cluster, reservation_id, key, ("pending", "approved"))
    audit.reservation(log, rec, "cancelled-occurrence", who, occurrence=key)
    window = next(w for w in current.windows(datetime.fromisoformat(key), rec.until) if w.key == key)
    return rec, window


def news(store: ReservationRecords, log: AuditLog, cluster: str, at: datetime) -> tuple[list[str], list[str]]:
    """(windows that began, windows that ended) by `at`, the time of this run's snapshot, and not yet flagged: a
    window began when it is held (approved, within the lead of its start) and ended when it is past its end, or
    cancelled, after it began. Each is flagged on its record with `at` and audited once; a flag already set to `at`
    is this run's own (a retried step): its line comes again, its audit record does not."""
    started: list[str] = []
    ended: list[str] = []
    for rec in store.of_cluster(cluster):
        if rec.recurring:
            _window_news(store, log, rec, at, started, ended)
            continue
        if _unflagged(rec.started_at, at) and rec.active_at(at) \
                and store.mark(cluster, rec.reservation_id, "started", at):
            started.append(f"{rec.label}: began; {rec.team} is guaranteed at least {rec.accelerators} of "
                           f"{rec.pool} from this run's plan (reserved by {rec.requested_by})")
            _audited(log, rec, "started", rec.started_at)
        over = rec.status == "cancelled" or at >= rec.until
        if rec.started_at not in (None, at) and _unflagged(rec.ended_at, at) and over \
                and store.mark(cluster, rec.reservation_id, "ended", at):
            ended.append(f"{rec.label}: {'cancelled' if rec.status == 'cancelled' else 'ended'}; {rec.team}'s quota "
                         f"on {rec.pool} returns to the policy")
            _audited(log, rec, "ended", rec.ended_at)
    return started, ended


def _unflagged(flag: datetime | None, at: datetime) -> bool:
    """Not flagged yet, or flagged by this run (at its snapshot's time `at`)."""
    return flag is None or flag == at


def _audited(log: AuditLog, rec: Reservation, step: str, flag: datetime | None, occurrence: str | None = None) -> None:
    if flag is None:  # set just now, not by an earlier attempt of this run
        audit.reservation(log, rec, step, None, occurrence=occurrence)


def _window_news(store: ReservationRecords, log: AuditLog, rec: Reservation, at: datetime, started: list[str],
                 ended: list[str]) -> None:
    """A recurring reservation's windows: the one held now, once; each one begun and not yet ended, once over."""
    held = rec.window_at(at) if rec.status == "approved" else None
    if held is not None and _unflagged(rec.announced.get(f"{held.key}/started"), at) \
            and store.mark(rec.cluster, rec.reservation_id, "started", at, occurrence=held.key):
        opens = f" (the window opens at {held.start:%H:%M} UTC)" if at < held.start else ""
        started.append(f"{_occurrence(rec, held.key)}: began; {rec.team} is guaranteed at least {rec.accelerators} "
                       f"of {rec.pool} from this run's plan until {held.end:%a %d %b %H:%M} UTC{opens} (reserved by "
                       f"{rec.requested_by})")
        _audited(log, rec, "started", rec.announced.get(f"{held.key}/started"), held.key)
    begun = [k.removesuffix("/started") for k, flag in rec.announced.items() if k.endswith("/started") and flag != at]
    for key in sorted(begun):
        if not _unflagged(rec.announced.get(f"{key}/ended"), at) or (held is not None and held.key == key):
            continue
        cancelled = rec.status == "cancelled" or key in rec.skipped
        if store.mark(rec.cluster, rec.reservation_id, "ended", at, occurrence=key):
            ended.append(f"{_occurrence(rec, key)}: {'cancelled' if cancelled else 'ended'}; {rec.team}'s quota on "
                         f"{rec.pool} returns to the policy")
            _audited(log, rec, "ended", rec.announced.get(f"{key}/ended"), key)


def _occurrence(rec: Reservation, key: str) -> str:
    """`reservation r-1a2b for nightly (Mon-Fri 18:00-08:00 Europe/Berlin), window of Mon 07 Dec 18:00`."""
    opens = datetime.fromisoformat(key).astimezone(time_zone(rec.timezone))
    return (f"reservation {rec.reservation_id} for {rec.reason} ({rec.every} {rec.timezone}), window of "
            f"{opens:%a %d %b %H:%M}")
