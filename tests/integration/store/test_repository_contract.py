"""One contract, two implementations: every repository of the table (rebalancer.adapters.dynamodb, real boto3 against
moto) and its in-memory twin (rebalancer_tools.fakes.memory_store, what the CLI's offline paths and the unit tests use)
must give the same answers, so the two cannot drift. Each test runs on both; the last ones run one script on both and
compare what comes back, field for field."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws
from support.clusters import snapshot
from support.template import create_table

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.budgets.metering import Reading
from rebalancer.domain.outlook import RunHistory, Seen
from rebalancer.domain.records import ApprovalRecord, RunContext
from rebalancer.domain.sample import sample_of
from rebalancer.errors import ApprovalNotPending
from rebalancer_tools.fakes.memory_store import MemoryStore
from rebalancer_tools.fakes.ticking_clock import TickingClock

T0 = datetime(2026, 11, 30, 12, 0, 30, tzinfo=UTC)
P5 = "ml.p5.48xlarge"
GAP = timedelta(minutes=35)
IMPLEMENTATIONS = ["table", "memory"]


def _table(clock: TickingClock) -> Store:
    create_table(boto3.client("dynamodb", region_name="us-east-1"))
    return Store("t", resource=boto3.resource("dynamodb", region_name="us-east-1"), now=clock)


@pytest.fixture
def clock() -> TickingClock:
    return TickingClock(T0)


@pytest.fixture(params=IMPLEMENTATIONS)
def store(request: pytest.FixtureRequest, clock: TickingClock) -> Iterator[Any]:
    if request.param == "memory":
        yield MemoryStore(now=clock)
        return
    with mock_aws():
        yield _table(clock)


def reading(at: datetime, gpus: float) -> Reading:
    return Reading(at=at, rates={"research": {P5: (gpus, 0.0)}})


# --- artifacts and deliveries ------------------------------------------------------------------------------------
def test_an_artifact_comes_back_as_json_and_a_missing_one_is_none(store: Any) -> None:
    doc = {"quotas": [{"team": "a", "n": 1.5}], "pair": (1, 2)}
    store.artifacts.put("run-1", "SNAPSHOT", doc)
    assert store.artifacts.get("run-1", "SNAPSHOT") == {"quotas": [{"team": "a", "n": 1.5}], "pair": [1, 2]}
    assert store.artifacts.get("run-1", "PLAN") is None
    assert store.artifacts.get("run-2", "SNAPSHOT") is None
    store.artifacts.put("run-1", "SNAPSHOT", {"v": 2})
    assert store.artifacts.get("run-1", "SNAPSHOT") == {"v": 2}


def test_a_delivery_is_marked_once_until_unmarked(store: Any) -> None:
    assert store.deliveries.mark("run-1", "applied", "sns")
    assert not store.deliveries.mark("run-1", "applied", "sns")
    assert store.deliveries.mark("run-1", "applied", "slack")
    assert store.deliveries.mark("run-1", "failed", "sns")
    store.deliveries.unmark("run-1", "applied", "sns")
    assert store.deliveries.mark("run-1", "applied", "sns")


# --- audit -------------------------------------------------------------------------------------------------------
def test_the_audit_log_keeps_order_per_cluster_and_decodes_fields(store: Any) -> None:
    store.audit.append("c1", "run-1", "plan", outcome="apply", before={"a": {"p5": 8}}, after={"a": {"p5": 16}})
    store.audit.append("c1", "run-1", "approval", outcome="approved", who="alice")
    store.audit.append("c2", "run-2", "plan", outcome="no_change")
    log = store.audit.records("c1")
    assert [(r["kind"], r["outcome"]) for r in log] == [("plan", "apply"), ("approval", "approved")]
    assert log[0]["after"] == {"a": {"p5": 16}}
    assert set(log[1]) == {"kind", "execution", "at", "outcome", "who"}  # a field not given is not stored
    assert log[1]["who"] == "alice"
    assert store.audit.records("c3") == []


def test_the_audit_log_reads_newest_first_page_by_page(store: Any) -> None:
    for i in range(7):
        store.audit.append("c1", f"run-{i}", "plan", outcome="no_change", detail={"i": i})
    store.audit.append("c2", "run-x", "plan", outcome="no_change")
    newest = store.audit.newest("c1", page_size=3)
    assert [r["detail"]["i"] for r in newest] == [6, 5, 4, 3, 2, 1, 0]
    assert store.audit.newest("c1", page_size=3).__next__() == store.audit.records("c1")[-1]
    assert list(store.audit.newest("c3")) == []


# --- approvals ---------------------------------------------------------------------------------------------------
def test_an_approval_is_decided_once_and_not_after_its_deadline(store: Any, clock: TickingClock) -> None:
    rec = ApprovalRecord("a1", "token", "arn:exec:run-1", "c1", "pending", T0 + timedelta(hours=1))
    assert store.approvals.put(rec)
    assert not store.approvals.put(rec)
    assert store.approvals.get("a1") == rec
    decided = store.approvals.decide("a1", "approved", "alice")
    assert (decided.status, decided.decided_by) == ("approved", "alice")
    assert store.approvals.get("a1") == decided
    with pytest.raises(ApprovalNotPending) as e:
        store.approvals.decide("a1", "rejected", "mallory")
    assert e.value.status == "approved"
    store.approvals.put(ApprovalRecord("a2", "token", "arn:exec:run-2", "c1", "pending", T0 + timedelta(minutes=1)))
    clock.t += timedelta(minutes=2)
    with pytest.raises(ApprovalNotPending) as e:
        store.approvals.decide("a2", "approved", "late")
    assert e.value.status == "expired"
    assert store.approvals.get("a2").status == "pending"  # a late decision changes nothing
    with pytest.raises(ApprovalNotPending) as e:
        store.approvals.decide("nope", "approved", "x")
    assert e.value.status == "unknown"
    assert store.approvals.get("nope") is None


def test_a_run_context_round_trips_and_is_empty_when_none_was_stored(store: Any) -> None:
    assert store.approvals.context("a1") == RunContext(trigger={})
    store.approvals.put_context("a1", RunContext(trigger={"kind": "schedule", "n": 2}, started_at="2026-11-30T12:00"),
                                T0 + timedelta(hours=1))
    assert store.approvals.context("a1") == RunContext(trigger={"kind": "schedule", "n": 2},
                                                       started_at="2026-11-30T12:00")
    store.approvals.put_context("a2", RunContext(trigger={}), T0)
    assert store.approvals.context("a2") == RunContext(trigger={}, started_at=None)


def test_a_form_nonce_is_claimed_once_per_approval(store: Any) -> None:
    assert store.approvals.claim_nonce("a1", "n1", T0 + timedelta(hours=1))
    assert not store.approvals.claim_nonce("a1", "n1", T0 + timedelta(hours=1))
    assert store.approvals.claim_nonce("a1", "n2", T0 + timedelta(hours=1))
    assert store.approvals.claim_nonce("a2", "n1", T0 + timedelta(hours=1))


# --- the lock ----------------------------------------------------------------------------------------------------
def test_the_lock_is_exclusive_until_it_expires_or_is_taken_over(store: Any, clock: TickingClock) -> None:
    ten = timedelta(minutes=10)
    first = store.locks.acquire("c1", "run-1", ten)
    assert first.acquired
    second = store.locks.acquire("c1", "run-2", ten)
    assert (second.acquired, second.holder, second.acquired_at) == (False, "run-1", first.acquired_at)
    assert not store.locks.acquire("c1", "run-2", ten, replace="run-0").acquired
    assert store.locks.acquire("c1", "run-2", ten, replace="run-1").acquired
    assert store.locks.acquire("c2", "run-9", ten).acquired  # per cluster
    clock.t += timedelta(minutes=11)
    assert store.locks.acquire("c1", "run-3", ten).acquired


def test_a_follow_up_is_asked_of_the_holder_only_and_taken_once(store: Any) -> None:
    hour = timedelta(hours=1)
    assert not store.locks.request_followup("c1", "run-1", "no lock yet")
    assert not store.locks.acquire("c1", "run-2", hour, replace="run-1", if_followup=True).acquired  # no lock
    store.locks.acquire("c1", "run-1", hour)
    assert not store.locks.acquire("c1", "run-2", hour, replace="run-1", if_followup=True).acquired  # none asked
    assert not store.locks.request_followup("c1", "run-0", "not the holder")
    assert store.locks.request_followup("c1", "run-1", "a node failed " * 100)
    taken = store.locks.acquire("c1", "run-2", hour, replace="run-1", if_followup=True)
    assert (taken.acquired, taken.holder) == (True, "run-2")
    again = store.locks.acquire("c1", "run-3", hour, replace="run-2", if_followup=True)  # a new lock has none
    assert (again.acquired, again.holder) == (False, "run-2")


def test_a_lease_names_its_holder_renews_and_is_released_unless_a_run_waits_for_it(store: Any,
                                                                                   clock: TickingClock) -> None:
    ten, day = timedelta(minutes=10), timedelta(days=1)
    arn = "arn:aws:states:us-east-1:1:execution:m:run-1"
    assert store.locks.holding("c1") is None
    run = store.locks.acquire("c1", "run-1", day, run_arn=arn)
    held = store.locks.holding("c1")
    assert (held.acquired, held.holder, held.acquired_at, held.run_arn) == (False, "run-1", run.acquired_at, arn)
    # A command's lease never takes over a run whose follow-up is still to start.
    store.locks.request_followup("c1", "run-1", "a node failed", machine="arn:sm", lease=day)
    refused = store.locks.acquire("c1", "cli-1", ten, replace="run-1", by="arn:aws:iam::1:user/ann")
    assert (refused.acquired, refused.holder, refused.followup, refused.followup_machine,
            refused.followup_lease_seconds) == (False, "run-1", "a node failed", "arn:sm", 86400)

    lease = store.locks.acquire("c2", "cli-1", ten, by="arn:aws:iam::1:user/ann")
    assert (lease.acquired, lease.by) == (True, "arn:aws:iam::1:user/ann")
    assert lease.expires_at is not None
    assert abs((lease.expires_at - (clock.t + ten)).total_seconds()) < 1
    clock.t += timedelta(minutes=9)
    assert store.locks.renew("c2", "cli-1", ten)  # good for ten more minutes from now
    clock.t += timedelta(minutes=9)
    assert not store.locks.acquire("c2", "run-2", day).acquired
    assert not store.locks.renew("c2", "someone-else", ten)
    assert store.locks.release("c2", "cli-1") is None  # nobody waited: gone
    assert store.locks.holding("c2") is None
    assert store.locks.release("c2", "cli-1") is None  # twice is harmless

    store.locks.acquire("c3", "cli-2", ten, by="ann")
    assert store.locks.request_followup("c3", "cli-2", "a node failed", machine="arn:sm", lease=day)
    kept = store.locks.release("c3", "cli-2")  # a run waits: the lock stays for the hand-over
    assert kept is not None
    assert (kept.holder, kept.followup) == ("cli-2", "a node failed")
    handed = store.locks.acquire("c3", "run-3", day, replace="cli-2", if_followup=True)
    assert handed.acquired
    clock.t += timedelta(minutes=30)
    store.locks.acquire("c4", "cli-3", ten, by="ann")
    clock.t += timedelta(minutes=11)
    assert store.locks.acquire("c4", "run-4", day).acquired  # the lease expired
    assert not store.locks.renew("c4", "cli-3", ten)
    assert store.locks.release("c4", "cli-3").holder == "run-4"  # ours had passed on


# --- versions ----------------------------------------------------------------------------------------------------
def test_the_versions_our_writes_left_are_the_latest_per_team_and_cluster(store: Any) -> None:
    assert store.versions.known("c1") == {}
    store.versions.record("c1", {"b": 3, "a": 7, "(cluster)": 2}, "run-1")
    store.versions.record("c1", {"a": 8}, "run-2")
    store.versions.record("c2", {"a": 1}, "run-2")
    store.versions.record("c1", {}, "run-3")
    assert store.versions.known("c1") == {"(cluster)": 2, "a": 8, "b": 3}
    assert store.versions.known("c2") == {"a": 1}


# --- sightings ---------------------------------------------------------------------------------------------------
def test_nodes_seen_unavailable_are_replaced_per_cluster_and_the_last_event_only_moves_forward(store: Any) -> None:
    assert store.sightings.unavailable("c1") == {}
    assert store.sightings.last_event("c1") is None
    store.sightings.record_unavailable("c1", {"i-2": ("SystemUpdating", T0), "i-1": ("labelled Unschedulable", T0)})
    store.sightings.record_unavailable("c2", {"i-9": ("DeepHealthCheckInProgress", T0)})
    store.sightings.record_unavailable("c1", {"i-1": ("labelled Unschedulable", T0)})
    assert store.sightings.unavailable("c1") == {"i-1": ("labelled Unschedulable", T0)}
    assert store.sightings.unavailable("c2") == {"i-9": ("DeepHealthCheckInProgress", T0)}
    store.sightings.saw_event("c1", T0 + timedelta(minutes=5))
    store.sightings.saw_event("c1", T0)  # delivered late
    assert store.sightings.last_event("c1") == T0 + timedelta(minutes=5)
    store.sightings.saw_event("c1", T0 + timedelta(minutes=50))
    assert store.sightings.last_event("c1") == T0 + timedelta(minutes=50)
    assert store.sightings.last_event("c2") is None


# --- durations ---------------------------------------------------------------------------------------------------
def test_the_run_history_is_replaced_per_cluster(store: Any) -> None:
    assert store.durations.history("c1") == RunHistory()
    seen = Seen(team="a", started=T0, last_seen=T0 + timedelta(minutes=15))
    store.durations.record("c1", RunHistory(running={"a/w@ml.p5.48xlarge": seen}, finished={"a": (60.0, 3600.5)}))
    store.durations.record("c2", RunHistory(finished={"b": (1.0,)}))
    store.durations.record("c1", RunHistory(finished={"a": (60.0, 3600.5, 7.25)}))
    assert store.durations.history("c1") == RunHistory(finished={"a": (60.0, 3600.5, 7.25)})
    assert store.durations.history("c2").finished == {"b": (1.0,)}


# --- metering ----------------------------------------------------------------------------------------------------
def test_metering_counts_each_interval_once_and_only_forward(store: Any) -> None:
    assert store.meter.record("c", reading(T0, 8), GAP).status == "first"
    recorded = store.meter.record("c", reading(T0 + timedelta(minutes=15), 8), GAP)
    assert (recorded.status, recorded.fact.start, recorded.fact.estimated) == ("recorded", T0, False)
    assert store.meter.record("c", reading(T0 + timedelta(minutes=15), 800), GAP).status == "stale"
    assert store.meter.record("c", reading(T0 + timedelta(minutes=10), 800), GAP).status == "stale"
    late = store.meter.record("c", reading(T0 + timedelta(hours=2), 8), GAP)
    assert (late.status, late.fact.estimated) == ("recorded", True)
    facts = store.meter.facts("c", T0, T0 + timedelta(hours=3))
    assert [(f.start, f.end) for f in facts] == [(T0, T0 + timedelta(minutes=15)),
                                                 (T0 + timedelta(minutes=15), T0 + timedelta(hours=2))]
    assert facts == [recorded.fact, late.fact]
    inner = store.meter.facts("c", T0 + timedelta(minutes=20), T0 + timedelta(minutes=30))
    assert [f.start for f in inner] == [T0 + timedelta(minutes=15)]  # overlapping the window
    assert store.meter.facts("c", T0 + timedelta(hours=2), T0 + timedelta(hours=3)) == []
    assert store.meter.facts("c", T0 - timedelta(hours=1), T0) == []
    assert store.meter.facts("other", T0, T0 + timedelta(hours=3)) == []


def test_a_budget_announcement_is_claimed_by_one_run_per_cluster(store: Any) -> None:
    assert store.meter.claim("c", "research#2026-11#80", "run-1")
    assert store.meter.claim("c", "research#2026-11#80", "run-1")  # the same run again: a retried step
    assert not store.meter.claim("c", "research#2026-11#80", "run-2")
    assert store.meter.claim("c", "research#2026-11#100", "run-2")
    assert store.meter.claim("d", "research#2026-11#80", "run-2")


# --- samples -----------------------------------------------------------------------------------------------------
def test_samples_come_back_oldest_first_from_since_and_a_retry_overwrites_its_own(store: Any) -> None:
    for minutes in (10, 0, 5):
        store.samples.put(sample_of(snapshot({P5: 4}, taken_at=T0 + timedelta(minutes=minutes))))
    store.samples.put(sample_of(snapshot({P5: 2}, taken_at=T0 + timedelta(minutes=5))))
    got = list(store.samples.since("test"))
    assert [s.at for s in got] == [T0 + timedelta(minutes=m) for m in (0, 5, 10)]
    assert got[1] == sample_of(snapshot({P5: 2}, taken_at=T0 + timedelta(minutes=5)))
    assert [s.at for s in store.samples.since("test", T0 + timedelta(minutes=5))] == [
        T0 + timedelta(minutes=5), T0 + timedelta(minutes=10)]
    assert list(store.samples.since("other")) == []


# --- the same script on both -------------------------------------------------------------------------------------
Script = Callable[[Any, TickingClock], Any]


def _audit_script(store: Any, clock: TickingClock) -> Any:
    store.audit.append("c1", "run-1", "trigger", outcome="started", detail={"kind": "schedule", "at": T0})
    store.audit.append("c1", "run-1", "plan", outcome="apply", who=None, before={"a": {"p5": 8.0}},
                       after={"a": {"p5": 16}}, detail={"changes": [{"team": "a"}], "pair": (1, 2)})
    clock.t += timedelta(hours=1)
    store.audit.append("c1", "run-2", "apply", outcome="failed", who="arn:aws:iam::1:user/alice", detail={})
    return store.audit.records("c1")


def _lock_script(store: Any, clock: TickingClock) -> Any:
    out = [store.locks.acquire("c1", "run-1", timedelta(minutes=5)),
           store.locks.request_followup("c1", "run-1", "x"),
           store.locks.acquire("c1", "run-2", timedelta(minutes=5))]
    clock.t += timedelta(minutes=6)
    out += [store.locks.acquire("c1", "run-3", timedelta(minutes=5)),
            store.locks.acquire("c1", "run-4", timedelta(minutes=5), replace="run-3", if_followup=True)]
    return out


def _meter_script(store: Any, clock: TickingClock) -> Any:
    results = [store.meter.record("c", reading(T0 + timedelta(minutes=m), m), GAP) for m in (0, 15, 15, 30, 90, 60)]
    return results, store.meter.facts("c", T0 + timedelta(minutes=20), T0 + timedelta(minutes=80))


@pytest.mark.parametrize("script", [_audit_script, _lock_script, _meter_script])
def test_the_table_and_memory_give_the_same_answers(script: Script) -> None:
    memory_clock, table_clock = TickingClock(T0), TickingClock(T0)
    in_memory = script(MemoryStore(now=memory_clock), memory_clock)
    with mock_aws():
        in_table = script(_table(table_clock), table_clock)
    assert in_memory == in_table


# --- reservations ------------------------------------------------------------------------------------------------
def _reservation(rid: str, **extra: Any) -> Any:
    from rebalancer.domain.reservation import Reservation

    return Reservation.model_validate({
        "reservation_id": rid, "cluster": "c1", "team": "research", "pool": P5, "accelerators": 32,
        "start": T0, "until": T0 + timedelta(days=2), "reason": "launch", "status": "pending",
        "requested_by": "alice", "requested_at": T0, **extra})


def test_a_reservation_is_stored_once_decided_once_and_flagged_once(store: Any) -> None:
    from rebalancer.errors import ReservationNotPending, UnknownReservation

    assert store.reservations.put(_reservation("r-2"))
    assert store.reservations.put(_reservation("r-1", status="approved"))
    assert not store.reservations.put(_reservation("r-1"))
    assert store.reservations.put(_reservation("r-1").model_copy(update={"cluster": "c2"}))
    assert [r.reservation_id for r in store.reservations.of_cluster("c1")] == ["r-1", "r-2"]
    assert store.reservations.get("c1", "r-1") == _reservation("r-1", status="approved")
    assert store.reservations.get("c1", "r-9") is None
    decided = store.reservations.decide("c1", "r-2", "approved", "bob", ("pending",))
    assert (decided.status, decided.decided_by) == ("approved", "bob")
    with pytest.raises(ReservationNotPending, match="r-2 is approved"):
        store.reservations.decide("c1", "r-2", "approved", "bob", ("pending",))
    with pytest.raises(UnknownReservation):
        store.reservations.decide("c1", "r-9", "approved", "bob", ("pending",))
    assert store.reservations.mark("c1", "r-2", "started", T0)
    assert store.reservations.mark("c1", "r-2", "started", T0)  # the run that set it, again: a retried step
    assert not store.reservations.mark("c1", "r-2", "started", T0 + GAP)
    assert not store.reservations.mark("c1", "r-9", "started", T0)
    assert store.reservations.get("c1", "r-2").started_at == T0
    assert store.reservations.get("c1", "r-2").ended_at is None
    assert store.reservations.decide("c1", "r-2", "cancelled", "carol", ("pending", "approved")).status == "cancelled"
    assert store.reservations.get("c2", "r-1").status == "pending"


def test_a_reservation_is_stored_only_while_the_version_its_check_read_holds(store: Any) -> None:
    book = store.reservations.book("c1")
    assert (book.version, book.reservations) == (0, ())
    assert store.reservations.put(_reservation("r-1"), version=0)
    assert not store.reservations.put(_reservation("r-2"), version=0)  # another was stored since the reading
    assert [r.reservation_id for r in store.reservations.of_cluster("c1")] == ["r-1"]
    book = store.reservations.book("c1")
    assert (book.version, [r.reservation_id for r in book.reservations]) == (1, ["r-1"])
    assert store.reservations.put(_reservation("r-2"), version=1)
    assert not store.reservations.put(_reservation("r-2"), version=2)  # its id is taken
    assert store.reservations.put(_reservation("r-3"))  # no version given: stored, the version moves on
    assert store.reservations.book("c1").version == 3
    assert store.reservations.book("c2").version == 0  # one version per cluster


def test_a_recurring_reservation_round_trips_and_its_windows_are_cancelled_and_flagged_one_by_one(store: Any) -> None:
    from rebalancer.errors import ReservationNotPending

    rec = _reservation("r-1", status="approved", every="Mon-Fri 18:00-08:00", timezone="Europe/Berlin",
                       lead_minutes=30, until=T0 + timedelta(days=14))
    assert store.reservations.put(rec)
    assert store.reservations.get("c1", "r-1") == rec
    first, second = [w.key for w in rec.windows(T0, rec.until)][:2]
    skipped = store.reservations.skip("c1", "r-1", second, ("pending", "approved"))
    assert skipped.skipped == (second,)
    assert second not in [w.key for w in skipped.windows(T0, rec.until)]
    assert store.reservations.mark("c1", "r-1", "started", T0, occurrence=first)
    assert store.reservations.mark("c1", "r-1", "started", T0, occurrence=first)
    assert not store.reservations.mark("c1", "r-1", "started", T0 + GAP, occurrence=first)
    assert store.reservations.mark("c1", "r-1", "ended", T0 + GAP, occurrence=first)
    assert store.reservations.mark("c1", "r-1", "started", T0 + GAP, occurrence=second)
    got = store.reservations.get("c1", "r-1")
    assert got.announced == {f"{first}/started": T0, f"{first}/ended": T0 + GAP, f"{second}/started": T0 + GAP}
    assert (got.started_at, got.ended_at) == (None, None)
    store.reservations.decide("c1", "r-1", "cancelled", "bob", ("pending", "approved"))
    with pytest.raises(ReservationNotPending, match="r-1 is cancelled"):
        store.reservations.skip("c1", "r-1", first, ("pending", "approved"))
