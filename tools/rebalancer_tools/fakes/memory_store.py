"""The table's repositories in memory, written once for the CLI's offline paths and the tests: the same
interfaces and the same answers as rebalancer.adapters.dynamodb (tests/integration/store runs one contract against
both), kept in dicts for as long as the object lives.

Documents and audit fields go through JSON as the table's do, so what comes back is what the table would give
(a tuple comes back a list, a value JSON cannot hold fails here as there)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from rebalancer.budgets.metering import Fact, MeterResult, Reading, fact_between
from rebalancer.domain.clock import Clock, system_clock
from rebalancer.domain.outlook import RunHistory
from rebalancer.domain.records import ApprovalRecord, ApprovalStatus, LockResult, RunContext
from rebalancer.domain.reservation import Book, Flag, Reservation, ReservationStatus
from rebalancer.domain.sample import DemandSample
from rebalancer.errors import ApprovalNotPending, ReservationNotPending, UnknownReservation
from rebalancer.parsing.text import printable


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


class MemoryArtifacts:
    def __init__(self) -> None:
        self.documents: dict[tuple[str, str], str] = {}

    def put(self, execution: str, kind: Any, document: Any) -> None:
        self.documents[(execution, str(kind))] = json.dumps(document, sort_keys=True)

    def get(self, execution: str, kind: Any) -> Any:
        text = self.documents.get((execution, str(kind)))
        return None if text is None else json.loads(text)


class MemoryDeliveries:
    def __init__(self) -> None:
        self.sent: set[tuple[str, str, str]] = set()

    def mark(self, execution: str, kind: str, channel: str) -> bool:
        if (execution, kind, channel) in self.sent:
            return False
        self.sent.add((execution, kind, channel))
        return True

    def unmark(self, execution: str, kind: str, channel: str) -> None:
        self.sent.discard((execution, kind, channel))


class MemoryAudit:
    def __init__(self, now: Clock) -> None:
        self.now = now
        self.log: dict[str, dict[str, dict[str, Any]]] = {}  # cluster → the table's sort key → record

    def append(self, cluster_name: str, execution: str, kind: str, *, outcome: str, who: str | None = None,
               before: Any = None, after: Any = None, detail: Any = None) -> None:
        at = self.now().isoformat()
        record: dict[str, Any] = {"kind": kind, "execution": execution, "at": at, "outcome": outcome}
        for name, value in (("who", who), ("before", before), ("after", after), ("detail", detail)):
            if value is not None:
                record[name] = _json(value)
        self.log.setdefault(cluster_name, {})[f"{at}#{execution}#{kind}"] = record

    def records(self, cluster_name: str) -> list[dict[str, Any]]:
        kept = self.log.get(cluster_name, {})
        return [_json(kept[key]) for key in sorted(kept)]

    def newest(self, cluster_name: str, page_size: int = 100) -> Iterator[dict[str, Any]]:
        return iter(self.records(cluster_name)[::-1])


class MemoryApprovals:
    def __init__(self, now: Clock) -> None:
        self.now = now
        self.approvals: dict[str, ApprovalRecord] = {}
        self.contexts: dict[str, RunContext] = {}
        self.nonces: set[tuple[str, str]] = set()

    def put(self, rec: ApprovalRecord) -> bool:
        if rec.approval_id in self.approvals:
            return False
        self.approvals[rec.approval_id] = rec
        return True

    def get(self, approval_id: str) -> ApprovalRecord | None:
        return self.approvals.get(approval_id)

    def decide(self, approval_id: str, status: ApprovalStatus, who: str) -> ApprovalRecord:
        current = self.approvals.get(approval_id)
        if current is None:
            raise ApprovalNotPending("unknown")
        if current.status != "pending":
            raise ApprovalNotPending(current.status)
        if current.decide_by <= self.now():
            raise ApprovalNotPending("expired")
        decided = replace(current, status=status, decided_by=who)
        self.approvals[approval_id] = decided
        return decided

    def supersede(self, approval_id: str, why: str) -> bool:
        current = self.approvals.get(approval_id)
        if current is None:
            return False
        self.approvals[approval_id] = replace(current, status="superseded")
        return True

    def put_context(self, approval_id: str, context: RunContext, decide_by: datetime) -> None:
        self.contexts[approval_id] = RunContext(trigger=_json(context.trigger), started_at=context.started_at or None)

    def context(self, approval_id: str) -> RunContext:
        return self.contexts.get(approval_id, RunContext(trigger={}))

    def claim_nonce(self, approval_id: str, nonce_id: str, expires: datetime) -> bool:
        if (approval_id, nonce_id) in self.nonces:
            return False
        self.nonces.add((approval_id, nonce_id))
        return True


class MemoryLocks:
    def __init__(self, now: Clock) -> None:
        self.now = now
        # cluster → holder, acquired_at, expires (epoch s), run_arn, by, followup, followup_machine, followup_lease
        self.locks: dict[str, dict[str, Any]] = {}

    def acquire(self, cluster_name: str, holder: str, ttl: timedelta, *, replace: str | None = None,
                if_followup: bool = False, run_arn: str | None = None, by: str | None = None) -> LockResult:
        now = self.now()
        lock = self.locks.get(cluster_name)
        if replace is not None and if_followup:
            free = lock is not None and lock["holder"] == replace and "followup" in lock
        else:
            free = (lock is None or lock["expires"] < int(now.timestamp())
                    or (replace is not None and lock["holder"] == replace and (by is None or "followup" not in lock)))
        if free:
            self.locks[cluster_name] = {"holder": holder, "acquired_at": now, "expires": int((now + ttl).timestamp()),
                                        "run_arn": run_arn, "by": by}
            return LockResult(True, holder, now, expires_at=datetime.fromtimestamp(int((now + ttl).timestamp()), UTC),
                              run_arn=run_arn, by=by)
        if lock is None:
            return LockResult(False, "", now)
        held = self.holding(cluster_name)
        assert held is not None
        return held

    def holding(self, cluster_name: str) -> LockResult | None:
        lock = self.locks.get(cluster_name)
        if lock is None:
            return None
        return LockResult(False, lock["holder"], lock["acquired_at"],
                          expires_at=datetime.fromtimestamp(lock["expires"], UTC), run_arn=lock.get("run_arn"),
                          by=lock.get("by"), followup=lock.get("followup"),
                          followup_machine=lock.get("followup_machine"),
                          followup_lease_seconds=lock.get("followup_lease"))

    def request_followup(self, cluster_name: str, holder: str, reason: str, *, machine: str | None = None,
                         lease: timedelta | None = None) -> bool:
        lock = self.locks.get(cluster_name)
        if lock is None or lock["holder"] != holder:
            return False
        lock["followup"], lock["followup_at"] = reason[:500], self.now()
        if machine is not None and lease is not None:
            lock["followup_machine"], lock["followup_lease"] = machine, int(lease.total_seconds())
        return True

    def renew(self, cluster_name: str, holder: str, ttl: timedelta) -> bool:
        lock = self.locks.get(cluster_name)
        if lock is None or lock["holder"] != holder:
            return False
        lock["expires"] = int((self.now() + ttl).timestamp())
        return True

    def release(self, cluster_name: str, holder: str) -> LockResult | None:
        lock = self.locks.get(cluster_name)
        if lock is not None and lock["holder"] == holder and "followup" not in lock:
            del self.locks[cluster_name]
            return None
        return self.holding(cluster_name)


class MemoryVersions:
    def __init__(self) -> None:
        self.versions: dict[str, dict[str, int]] = {}

    def record(self, cluster_name: str, versions: dict[str, int], execution: str) -> None:
        self.versions.setdefault(cluster_name, {}).update({name: int(v) for name, v in versions.items()})

    def known(self, cluster_name: str) -> dict[str, int]:
        return dict(sorted(self.versions.get(cluster_name, {}).items()))


class MemoryMeter:
    def __init__(self) -> None:
        self.last: dict[str, Reading] = {}
        self.kept: dict[str, dict[datetime, Fact]] = {}  # cluster → start → fact
        self.announced: dict[tuple[str, str], str] = {}  # (cluster, key) → the run that announces it

    def record(self, cluster_name: str, reading: Reading, expected_gap: timedelta) -> MeterResult:
        reading = Reading.model_validate(_json(reading.model_dump(mode="json")))
        last = self.last.get(cluster_name)
        if last is None:
            self.last[cluster_name] = reading
            return MeterResult("first", None)
        fact = fact_between(last, reading, expected_gap)
        if fact is None:
            return MeterResult("stale", None)
        facts = self.kept.setdefault(cluster_name, {})
        if fact.start in facts:
            return MeterResult("duplicate", None)
        facts[fact.start] = fact
        self.last[cluster_name] = reading
        return MeterResult("recorded", fact)

    def facts(self, cluster_name: str, since: datetime, until: datetime) -> list[Fact]:
        kept = self.kept.get(cluster_name, {})
        return [kept[start] for start in sorted(kept) if kept[start].end > since and start < until]

    def claim(self, cluster_name: str, key: str, run: str) -> bool:
        return self.announced.setdefault((cluster_name, key), run) == run


class MemorySamples:
    def __init__(self) -> None:
        self.kept: dict[str, dict[str, str]] = {}  # cluster → UTC ISO time → the sample's JSON

    def put(self, sample: DemandSample, retention: timedelta = timedelta(days=90)) -> None:
        self.kept.setdefault(sample.cluster, {})[sample.at.astimezone(UTC).isoformat()] = sample.model_dump_json()

    def since(self, cluster_name: str, since: datetime | None = None) -> Iterator[DemandSample]:
        kept = self.kept.get(cluster_name, {})
        start = since.astimezone(UTC).isoformat() if since is not None else ""
        for at in sorted(kept):
            if at >= start:
                yield DemandSample.model_validate_json(kept[at])


class MemoryReservations:
    """One lock makes each write atomic, as DynamoDB's conditional writes and transactions are (tests check the
    version protocol with threads against this and against the table)."""

    def __init__(self) -> None:
        self.kept: dict[str, dict[str, str]] = {}  # cluster → id → the reservation's JSON
        self.versions: dict[str, int] = {}
        self._lock = threading.Lock()

    def put(self, rec: Reservation, *, version: int | None = None) -> bool:
        with self._lock:
            kept = self.kept.setdefault(rec.cluster, {})
            if rec.reservation_id in kept or (version is not None and self.versions.get(rec.cluster, 0) != version):
                return False
            kept[rec.reservation_id] = rec.model_dump_json(exclude={"decided_by", "started_at", "ended_at",
                                                                    "skipped", "announced"})
            self.versions[rec.cluster] = self.versions.get(rec.cluster, 0) + 1
            return True

    def book(self, cluster: str) -> Book:
        with self._lock:
            version = self.versions.get(cluster, 0)
        return Book(version=version, reservations=tuple(self.of_cluster(cluster)))

    def get(self, cluster: str, reservation_id: str) -> Reservation | None:
        text = self.kept.get(cluster, {}).get(reservation_id)
        return None if text is None else Reservation.model_validate_json(text)

    def of_cluster(self, cluster: str) -> list[Reservation]:
        kept = dict(self.kept.get(cluster, {}))
        return [Reservation.model_validate_json(kept[i]) for i in sorted(kept)]

    def decide(self, cluster: str, reservation_id: str, status: ReservationStatus, who: str,
               allowed: Sequence[ReservationStatus]) -> Reservation:
        with self._lock:
            current = self._current(cluster, reservation_id, allowed)
            return self._set(current.model_copy(update={"status": status, "decided_by": who}))

    def skip(self, cluster: str, reservation_id: str, occurrence: str,
             allowed: Sequence[ReservationStatus]) -> Reservation:
        with self._lock:
            current = self._current(cluster, reservation_id, allowed)
            return self._set(current.model_copy(update={"skipped": tuple(sorted({*current.skipped, occurrence}))}))

    def mark(self, cluster: str, reservation_id: str, flag: Flag, at: datetime,
             occurrence: str | None = None) -> bool:
        with self._lock:
            current = self.get(cluster, reservation_id)
            if current is None:
                return False
            if occurrence is None:
                if getattr(current, f"{flag}_at") not in (None, at):
                    return False
                self._set(current.model_copy(update={f"{flag}_at": at}))
                return True
            key = f"{occurrence}/{flag}"
            if current.announced.get(key, at) != at:
                return False
            self._set(current.model_copy(update={"announced": {**current.announced, key: at}}))
            return True

    def _current(self, cluster: str, reservation_id: str, allowed: Sequence[ReservationStatus]) -> Reservation:
        current = self.get(cluster, reservation_id)
        if current is None:
            raise UnknownReservation(f"no reservation {reservation_id} on {printable(cluster)}")
        if current.status not in allowed:
            raise ReservationNotPending(f"reservation {reservation_id} is {current.status}")
        return current

    def _set(self, rec: Reservation) -> Reservation:
        self.kept[rec.cluster][rec.reservation_id] = rec.model_dump_json()
        return Reservation.model_validate_json(self.kept[rec.cluster][rec.reservation_id])


class MemorySightings:
    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, tuple[str, datetime]]] = {}
        self.events: dict[str, datetime] = {}

    def unavailable(self, cluster_name: str) -> dict[str, tuple[str, datetime]]:
        return dict(self.nodes.get(cluster_name, {}))

    def record_unavailable(self, cluster_name: str, nodes: dict[str, tuple[str, datetime]]) -> None:
        self.nodes[cluster_name] = dict(nodes)

    def last_event(self, cluster_name: str) -> datetime | None:
        return self.events.get(cluster_name)

    def saw_event(self, cluster_name: str, at: datetime) -> None:
        if cluster_name not in self.events or self.events[cluster_name] < at:
            self.events[cluster_name] = at


class MemoryDurations:
    def __init__(self) -> None:
        self.kept: dict[str, RunHistory] = {}

    def history(self, cluster_name: str) -> RunHistory:
        return self.kept.get(cluster_name) or RunHistory()

    def record(self, cluster_name: str, history: RunHistory) -> None:
        self.kept[cluster_name] = history


class MemoryStore:
    """rebalancer.adapters.dynamodb.store.Store's repositories, in memory."""

    table_name = "(memory)"

    def __init__(self, *, now: Clock = system_clock) -> None:
        self.now = now
        self.artifacts = MemoryArtifacts()
        self.deliveries = MemoryDeliveries()
        self.audit = MemoryAudit(now)
        self.approvals = MemoryApprovals(now)
        self.locks = MemoryLocks(now)
        self.versions = MemoryVersions()
        self.meter = MemoryMeter()
        self.samples = MemorySamples()
        self.reservations = MemoryReservations()
        self.sightings = MemorySightings()
        self.durations = MemoryDurations()
