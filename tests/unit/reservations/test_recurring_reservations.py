"""Windows that come back: `--every "Mon-Fri 18:00-08:00" --tz Europe/Berlin` opens at 18:00 local each weekday
whatever the UTC offset, each window is held from its lead, checked at creation over every window, and each window's
start and end announced once; one window can be cancelled and the others stay. The issue's goal as a property: with
a run every `run_interval_minutes` at any phase, the plan made by a run inside the lead of any window (DST changes
included) already raises the team's quota to what it reserves, so the quota is in place when the window opens."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from support.clusters import policy, snapshot
from support.props import properties
from support.reservation_news import Told

from rebalancer.app import reservations
from rebalancer.domain.reservation import Reservation, occurrence_key, parse_every
from rebalancer.errors import ReservationRefused
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan
from rebalancer.planning.reservations import SETTLE_MINUTES, default_lead_minutes, refuse_if_unfit
from rebalancer_tools.fakes.memory_store import MemoryStore
from rebalancer_tools.fakes.ticking_clock import TickingClock

P5 = "ml.p5.48xlarge"
BERLIN = "Europe/Berlin"
FRI_BEFORE_FALL_BACK = datetime(2026, 10, 23, 12, tzinfo=UTC)  # Berlin leaves summer time on Sun 25 Oct 2026
POLICY = policy({"nightly": {}, "research": {}, "inference": {"guarantee": {P5: 16}}},
                approval={"moved_accelerators": 1000})


def nightly(n: int = 32, *, start: datetime = FRI_BEFORE_FALL_BACK, days: int = 14, every: str = "Mon-Fri 18:00-08:00",
            zone: str = BERLIN, lead: int = 30, **extra: object) -> Reservation:
    return Reservation.model_validate({
        "reservation_id": "r-nightly", "cluster": "test", "team": "nightly", "pool": P5, "accelerators": n,
        "start": start, "until": start + timedelta(days=days), "reason": "evaluation", "status": "approved",
        "requested_by": "alice", "requested_at": start, "every": every, "timezone": zone, "lead_minutes": lead,
        **extra})


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def test_windows_open_at_local_time_across_the_dst_change() -> None:
    four_days = FRI_BEFORE_FALL_BACK + timedelta(days=4)
    opens = [(w.start, w.end) for w in nightly().windows(FRI_BEFORE_FALL_BACK, four_days)]
    assert opens == [
        (utc("2026-10-23T18:00+02:00"), utc("2026-10-24T08:00+02:00")),  # Fri night: summer time, 14 h
        (utc("2026-10-26T18:00+01:00"), utc("2026-10-27T08:00+01:00")),  # Mon night: winter time
    ]
    assert opens[0][0].hour == 16
    assert opens[1][0].hour == 17


def test_a_start_the_clock_skips_opens_an_hour_later_and_one_it_passes_twice_at_the_first() -> None:
    spring = nightly(every="Sun 02:30-04:00", start=datetime(2026, 3, 28, tzinfo=UTC), days=2)
    [w] = spring.windows(spring.start, spring.until)
    assert (w.start, w.end) == (utc("2026-03-29T03:30+02:00"), utc("2026-03-29T04:00+02:00"))
    autumn = nightly(every="Sun 02:30-04:00", start=datetime(2026, 10, 24, tzinfo=UTC), days=2)
    [w] = autumn.windows(autumn.start, autumn.until)
    assert w.start == utc("2026-10-25T02:30+02:00")  # the first 02:30 (summer time)
    assert w.end == utc("2026-10-25T04:00+01:00")  # two and a half hours of wall clock, three of time


@pytest.mark.parametrize(("text", "canonical"), [("Mon-Fri 18:00-08:00", "Mon-Fri 18:00-08:00"),
                                                 ("weekdays 18:00-08:00", "Mon-Fri 18:00-08:00"),
                                                 ("fri-mon 20:00-06:00", "Mon,Fri-Sun 20:00-06:00"),
                                                 ("Sat,Sun 00:00-24:00", "Sat-Sun 00:00-24:00"),
                                                 ("daily 09:00-17:00", "Mon-Sun 09:00-17:00")])
def test_every_is_read_and_written_one_way(text: str, canonical: str) -> None:
    assert parse_every(text).text == canonical
    assert parse_every(canonical) == parse_every(text)


def test_holds_of_one_reservation_that_meet_are_one() -> None:
    """Whole days back to back: each window's lead falls inside the one before; counted once, not twice."""
    r = nightly(every="daily 00:00-24:00", zone="UTC", days=3, start=datetime(2026, 10, 23, tzinfo=UTC))
    assert list(r.holds(r.start - r.lead, r.until)) == [(r.start - r.lead, r.until)]


def test_the_check_counts_every_window_and_the_lead() -> None:
    snap = snapshot({P5: 8}, taken_at=FRI_BEFORE_FALL_BACK)
    series = nightly(32)
    # A one-off 32 for research on the Monday evening, after the clocks changed: 16 + 32 + 32 > 64.
    clash = Reservation.model_validate({**series.model_dump(), "reservation_id": "r-one", "team": "research",
                                        "every": None, "start": utc("2026-10-26T19:00+01:00"),
                                        "until": utc("2026-10-26T21:00+01:00"), "lead_minutes": 0})
    with pytest.raises(ReservationRefused, match=r"from 2026-10-26T18:00:00\+00:00 reservations and guarantees"):
        refuse_if_unfit(clash, POLICY, snap, [series], FRI_BEFORE_FALL_BACK)
    # Ending when the Monday window's lead begins (16:30 UTC) it fits; a minute into the lead it does not.
    before_lead = clash.model_copy(update={"start": utc("2026-10-26T15:00+00:00"), "until": utc("2026-10-26T16:30Z")})
    refuse_if_unfit(before_lead, POLICY, snap, [series], FRI_BEFORE_FALL_BACK)
    into_lead = before_lead.model_copy(update={"until": utc("2026-10-26T16:31Z")})
    with pytest.raises(ReservationRefused, match=r"from 2026-10-26T16:30:00\+00:00"):
        refuse_if_unfit(into_lead, POLICY, snap, [series], FRI_BEFORE_FALL_BACK)
    # The weekend between is free.
    weekend = clash.model_copy(update={"start": utc("2026-10-24T12:00Z"), "until": utc("2026-10-25T12:00Z")})
    refuse_if_unfit(weekend, POLICY, snap, [series], FRI_BEFORE_FALL_BACK)
    # Cancelled windows are free too.
    monday = occurrence_key(series, datetime(2026, 10, 26).date())
    assert monday is not None
    refuse_if_unfit(clash, POLICY, snap, [series.model_copy(update={"skipped": (monday,)})], FRI_BEFORE_FALL_BACK)


def test_a_series_above_the_teams_cap_at_once_is_refused() -> None:
    capped = policy({"nightly": {"cap": {P5: 40}}})
    snap = snapshot({P5: 8}, taken_at=FRI_BEFORE_FALL_BACK)
    other = nightly(24).model_copy(update={"reservation_id": "r-other", "every": "Mon 20:00-22:00"})
    with pytest.raises(ReservationRefused) as e:
        refuse_if_unfit(nightly(24), capped, snap, [other], FRI_BEFORE_FALL_BACK)
    says = "team nightly's reservations on ml.p5.48xlarge would be 48, above its cap.ml.p5.48xlarge = 40"
    assert says in str(e.value)


# --- announced once each --------------------------------------------------------------------------------------


def made(store: MemoryStore) -> Reservation:
    request = reservations.Request("test", "nightly", P5, 32, FRI_BEFORE_FALL_BACK,
                                   FRI_BEFORE_FALL_BACK + timedelta(days=7), "evaluation", every="Mon-Fri 18:00-08:00",
                                   timezone=BERLIN)
    return reservations.reserve(store.reservations, store.audit, request, policy=POLICY,
                                snapshot=snapshot({P5: 8}, taken_at=FRI_BEFORE_FALL_BACK), now=FRI_BEFORE_FALL_BACK,
                                new_id=lambda: "r-n", who="alice")


def test_each_windows_start_and_end_is_announced_once_every_fifteen_minutes() -> None:
    store, told = MemoryStore(now=TickingClock(FRI_BEFORE_FALL_BACK)), Told()
    rec = made(store)
    assert rec.lead_minutes == default_lead_minutes(POLICY) == 15 + SETTLE_MINUTES
    said: list[tuple[datetime, str]] = []
    at = FRI_BEFORE_FALL_BACK
    while at < FRI_BEFORE_FALL_BACK + timedelta(days=4, hours=1):
        said += [(at, line) for line in told.news(store, at)]
        at += timedelta(minutes=15)
    assert [(t, line.split(": ")[1].split(";")[0]) for t, line in said] == [
        (utc("2026-10-23T15:30Z"), "began"), (utc("2026-10-24T06:00Z"), "ended"),  # Fri 18:00-08:00 CEST, lead 30
        (utc("2026-10-26T16:30Z"), "began"), (utc("2026-10-27T07:00Z"), "ended"),  # Mon 18:00-08:00 CET
    ]
    assert "window of Fri 23 Oct 18:00" in said[0][1]
    assert "until Sat 24 Oct 06:00 UTC (the window opens at 16:00 UTC)" in said[0][1]
    assert [k for k, _ in told.sent] == ["reservation_started", "reservation_ended"] * 2
    steps = [r["outcome"] for r in store.audit.records("test") if r["kind"] == "reservation"]
    assert steps == ["requested:approved", "started:approved", "ended:approved", "started:approved", "ended:approved"]


def test_a_window_cancelled_while_held_ends_as_cancelled_and_the_next_one_still_comes() -> None:
    store, told = MemoryStore(now=TickingClock(FRI_BEFORE_FALL_BACK)), Told()
    made(store)
    assert told.news(store, utc("2026-10-23T17:00Z"))
    reservations.cancel_occurrence(store.reservations, store.audit, "test", "r-n", datetime(2026, 10, 23).date(), "bob")
    [line] = told.news(store, utc("2026-10-23T17:15Z"))
    assert "window of Fri 23 Oct 18:00: cancelled; nightly's quota" in line
    [line] = told.news(store, utc("2026-10-26T16:30Z"))
    assert "window of Mon 26 Oct 18:00: began" in line
    at = utc("2026-10-23T17:30Z")
    assert planning_context(snapshot({P5: 8}, taken_at=at), POLICY,
                            reservations=store.reservations.of_cluster("test")).reservations == ()


def test_a_retried_run_says_its_windows_again_and_another_run_does_not() -> None:
    store = MemoryStore(now=TickingClock(FRI_BEFORE_FALL_BACK))
    made(store)
    for at in (utc("2026-10-23T17:00Z"), utc("2026-10-24T07:00Z")):  # the window begun, then over
        said = reservations.news(store.reservations, store.audit, "test", at)
        assert said != ([], [])
        assert reservations.news(store.reservations, store.audit, "test", at) == said
        assert reservations.news(store.reservations, store.audit, "test", at + timedelta(minutes=15)) == ([], [])
    steps = [r["outcome"] for r in store.audit.records("test") if r["kind"] == "reservation"]
    assert steps == ["requested:approved", "started:approved", "ended:approved"]


def test_a_cancelled_series_ends_its_held_window_and_holds_no_more() -> None:
    store, told = MemoryStore(now=TickingClock(FRI_BEFORE_FALL_BACK)), Told()
    made(store)
    told.news(store, utc("2026-10-23T17:00Z"))
    reservations.decide(store.reservations, store.audit, "test", "r-n", "cancel", "bob")
    [line] = told.news(store, utc("2026-10-23T17:15Z"))
    assert ": cancelled;" in line
    assert told.news(store, utc("2026-10-26T17:00Z")) == []


# --- the goal: the quota is in place when the window opens ------------------------------------------------------
ZONES = st.sampled_from(["Europe/Berlin", "America/New_York", "Australia/Sydney", "Australia/Lord_Howe", "UTC",
                         "Asia/Kolkata"])  # Lord Howe moves by half an hour


@properties(60)
@given(zone=ZONES, days=st.sets(st.integers(0, 6), min_size=1), begins=st.integers(0, 47),
       hours=st.integers(1, 23), start_day=st.integers(0, 364), interval=st.sampled_from([5, 10, 15, 30, 60]),
       phase=st.floats(0, 1), n=st.integers(1, 48))
def test_a_run_inside_the_lead_raises_the_quota_before_any_window_opens(zone: str, days: set[int], begins: int,
                                                                        hours: int, start_day: int, interval: int,
                                                                        phase: float, n: int) -> None:
    """Runs every `interval` minutes at any phase (the schedule); for every window of three weeks from any day of
    the year (so across DST changes): some run falls in [open - lead, open - SETTLE_MINUTES], and the plan it makes
    gives the team at least what it reserves. The run then has SETTLE_MINUTES to apply and verify before the window
    opens."""
    text = f"{','.join(('Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun')[d] for d in sorted(days))} " \
           f"{begins // 2:02d}:{30 * (begins % 2):02d}-{(begins // 2 + hours) % 24:02d}:{30 * (begins % 2):02d}"
    pol = POLICY.model_copy(update={"capacity": POLICY.capacity.model_copy(update={"run_interval_minutes": interval})})
    lead = default_lead_minutes(pol)
    first = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=start_day)
    rec = nightly(n, start=first, days=21, every=text, zone=zone, lead=lead)
    windows = list(rec.windows(rec.start, rec.until))
    assume(windows)
    step = timedelta(minutes=interval)
    origin = first - timedelta(days=1) + phase * step
    for w in windows[:6]:
        if w.start - rec.lead < rec.start:
            continue  # the first window may open before the reservation was made with its lead
        k = -((origin - (w.start - rec.lead)) // step)  # the first run at or after the lead begins
        run = origin + k * step
        assert w.start - rec.lead <= run <= w.start - timedelta(minutes=SETTLE_MINUTES)
        snap = snapshot({P5: 8}, quotas={"research": {P5: 48}}, pending={"research": {P5: 64}},
                        in_use={"research": {P5: 48}}, taken_at=run)
        plan = make_plan(snap, pol, run, context=planning_context(snap, pol, reservations=[rec]))
        got = sum(p.get("accelerators", 0.0) for p in plan.allocations.get("nightly", {}).values())
        assert got >= n, (w, run)
