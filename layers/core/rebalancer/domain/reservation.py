"""A reservation: a time-bounded guarantee of accelerators of one instance type for one team ("a hero job for the
launch, until Friday"), or a window that comes back ("Mon-Fri 18:00-08:00" in a time zone, until a date). Stored in
the table (rebalancer.adapters.dynamodb.reservations), made and decided by rebalancer.app.reservations, checked when
made (rebalancer.planning.reservations) and honoured by the planner inside its windows only and only once approved
(rebalancer.engine.reservations). Pure data and calendar arithmetic.

A window is held from `lead_minutes` before it opens until it closes (its hold): the runs in the lead raise the
team's quota, so it is in place when the window opens. Where two holds of one reservation meet, they are one.
A recurring window is local wall-clock time in `timezone`: across a DST change it opens at 18:00 local all the same
(so 16:00 or 17:00 UTC in Berlin), and may be an hour shorter or longer. A local start the clock skips (02:30 on
the spring-forward night) opens at that instant an hour later; one it passes twice opens at the first."""

import re
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import Literal

from pydantic import AwareDatetime, Field, field_validator

from rebalancer.domain.clock import time_zone
from rebalancer.domain.frozen import Frozen

ReservationStatus = Literal["pending", "approved", "cancelled"]
Flag = Literal["started", "ended"]

RESERVATION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")  # what `reserve` makes: r-1a2b3c4d
LEAD_MAX_MINUTES = 24 * 60
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_ALIASES = {"daily": "Mon-Sun", "weekdays": "Mon-Fri", "weekends": "Sat-Sun"}
_CLOCK = re.compile(r"([01]\d|2[0-4]):([0-5]\d)")


# Values, as the domain's other values are (pydantic Frozen): a stdlib dataclass would compile its methods in every
# handler's init (tests/infra/test_fresh_interpreter_imports.py).
class Window(Frozen):
    """One occurrence: open in [start, end) (UTC), clipped to the reservation's own [start, until). `key` is the
    occurrence's unclipped start, UTC ISO: what cancels one occurrence and flags its announcements."""

    start: AwareDatetime
    end: AwareDatetime
    key: str


class Rule(Frozen):
    """A parsed `every`: the weekdays (0 = Monday) whose local `begins` opens a window that closes at `ends` the
    same day, or the next day when `overnight`."""

    days: frozenset[int]
    begins: time
    ends: time
    overnight: bool

    @property
    def text(self) -> str:
        """The canonical spelling: runs of consecutive days as ranges (`Mon-Fri`, `Mon,Wed,Fri`)."""
        runs: list[list[int]] = []
        for d in sorted(self.days):
            if runs and runs[-1][-1] == d - 1:
                runs[-1].append(d)
            else:
                runs.append([d])
        days = ",".join(DAYS[r[0]] if len(r) == 1 else f"{DAYS[r[0]]}-{DAYS[r[-1]]}" for r in runs)
        ends = "24:00" if self.overnight and self.ends == time(0) and self.begins == time(0) else f"{self.ends:%H:%M}"
        return f"{days} {self.begins:%H:%M}-{ends}"


@lru_cache(maxsize=256)
def parse_every(text: str) -> Rule:
    """`Mon-Fri 18:00-08:00`, `Sat,Sun 00:00-24:00`, `daily 09:00-17:00`, `Fri-Mon 20:00-06:00` (days wrap). A
    window closing at or before its opening time closes the next day; ValueError, one line, otherwise."""
    parts = text.split()
    if len(parts) != 2:
        raise ValueError(f"{text!r} is not DAYS HH:MM-HH:MM (e.g. 'Mon-Fri 18:00-08:00')")
    days_text, hours = _ALIASES.get(parts[0].lower(), parts[0]), parts[1]
    days: set[int] = set()
    for item in days_text.split(","):
        first, _, last = item.partition("-")
        a, b = _day(first, text), _day(last or first, text)
        days.update((a + i) % 7 for i in range((b - a) % 7 + 1))
    begins_text, _, ends_text = hours.partition("-")
    begins, ends = _clock(begins_text, text), _clock(ends_text, text)
    if begins == ends:
        raise ValueError(f"{text!r}: a window opening and closing at {hours.split('-')[0]} is empty or a whole day: "
                         "write 00:00-24:00 for whole days")
    if begins == 24 * 60:
        raise ValueError(f"{text!r}: a window opens at 00:00 to 23:59, not 24:00")
    overnight = ends <= begins
    if ends == 24 * 60:
        ends, overnight = 0, True
    return Rule(days=frozenset(days), begins=time(begins // 60, begins % 60), ends=time(ends // 60, ends % 60),
                overnight=overnight)


def _day(name: str, text: str) -> int:
    try:
        return [d.lower() for d in DAYS].index(name.lower())
    except ValueError:
        raise ValueError(f"{text!r}: {name!r} is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun; or daily, weekdays, "
                         "weekends)") from None


def _clock(value: str, text: str) -> int:
    """Minutes since midnight of HH:MM (24:00 allowed)."""
    m = _CLOCK.fullmatch(value)
    if m is None or (m.group(1) == "24" and m.group(2) != "00"):
        raise ValueError(f"{text!r}: {value!r} is not a time HH:MM from 00:00 to 24:00")
    return int(m.group(1)) * 60 + int(m.group(2))


class Reservation(Frozen):
    """`status`: pending (its size needs an admin's approval), approved (honoured inside its windows), cancelled.
    `every` / `timezone`: a recurring reservation's windows (None: the one window [start, until)).
    `lead_minutes`: how long before each window its quota is raised. `skipped`: occurrences cancelled one by one
    (their keys). `started_at` / `ended_at` (one window) and `announced` (`<key>/started`, `<key>/ended` of a
    recurring one): set once by the plan run that first saw the window held / over (what announces it once)."""

    reservation_id: str
    cluster: str
    team: str
    pool: str  # an accelerator instance type
    accelerators: int = Field(gt=0)
    start: AwareDatetime
    until: AwareDatetime
    reason: str
    status: ReservationStatus
    requested_by: str
    requested_at: AwareDatetime
    decided_by: str | None = None
    started_at: AwareDatetime | None = None
    ended_at: AwareDatetime | None = None
    lead_minutes: int = Field(default=0, ge=0, le=LEAD_MAX_MINUTES)
    every: str | None = None
    timezone: str = "UTC"
    skipped: tuple[str, ...] = ()
    announced: dict[str, AwareDatetime] = Field(default_factory=dict)

    @field_validator("every")
    @classmethod
    def _every(cls, every: str | None) -> str | None:
        return None if every is None else parse_every(every).text

    @field_validator("timezone")
    @classmethod
    def _zone(cls, name: str) -> str:
        time_zone(name)
        return name

    # --- windows ---------------------------------------------------------------------------------------------------
    @property
    def lead(self) -> timedelta:
        return timedelta(minutes=self.lead_minutes)

    @property
    def recurring(self) -> bool:
        return self.every is not None

    def windows(self, since: datetime, before: datetime) -> Iterator[Window]:
        """Its windows (skipped occurrences left out) that close after `since` and open before `before`, in order."""
        for start, end, key in self._occurrences(since, before):
            yield Window(start=start, end=end, key=key)

    def _occurrences(self, since: datetime, before: datetime,
                     keyed: bool = True) -> Iterator[tuple[datetime, datetime, str]]:
        """windows() as (start, end, key) (key "" unless `keyed`): what the checks sweep over, thousands at once."""
        if self.every is None:
            if self.start < before and since < self.until:
                yield self.start, self.until, _key(self.start) if keyed else ""
            return
        lo, hi = max(since, self.start), min(before, self.until)
        if lo >= hi:
            return
        rule, zone = parse_every(self.every), time_zone(self.timezone)
        skipped = set(self.skipped)
        day: date = lo.astimezone(zone).date() - timedelta(days=1)  # the day before may hold a window still open
        last = hi.astimezone(zone).date()
        one_day, closes_later = timedelta(days=1), timedelta(days=rule.overnight)
        while day <= last:
            if day.weekday() in rule.days:
                opens = datetime.combine(day, rule.begins, zone).astimezone(UTC)
                start = max(opens, self.start)
                if start < before:
                    end = min(datetime.combine(day + closes_later, rule.ends, zone).astimezone(UTC), self.until)
                    key = _key(opens) if keyed or skipped else ""
                    if start < end and end > since and not (skipped and key in skipped):
                        yield start, end, key
            day += one_day

    def holds(self, since: datetime, before: datetime) -> Iterator[tuple[datetime, datetime]]:
        """When its quota is held, [window start − lead, window end), for the windows whose hold meets
        [since, before): holds that meet or overlap are one (never counted twice)."""
        current: tuple[datetime, datetime] | None = None
        for start, end, _ in self._occurrences(since, before + self.lead, keyed=False):
            begin = start - self.lead
            if begin >= before or end <= since:
                continue
            if current is not None and begin <= current[1]:
                current = (current[0], max(current[1], end))
                continue
            if current is not None:
                yield current
            current = (begin, end)
        if current is not None:
            yield current

    def window_at(self, at: datetime) -> Window | None:
        """The window whose hold holds `at` (the earliest, where two holds meet), whatever the status."""
        return next((w for w in self.windows(at, at + self.lead + timedelta(microseconds=1))
                     if w.start - self.lead <= at < w.end), None)

    def next_window(self, at: datetime) -> Window | None:
        """The window open at `at`, or else the next one to open."""
        return next(self.windows(at, self.until), None)

    def active_at(self, at: datetime) -> bool:
        """Honoured at `at`: approved and inside the hold of one of its windows."""
        return self.status == "approved" and self.window_at(at) is not None

    def occurrence_at(self, at: datetime) -> "Reservation | None":
        """The window held at `at` as a reservation of its own ([start, until) that window), for the planner: what
        it honours, names in reasons ("… until Tue 08:00 UTC") and counts the cooldown from. None when none is."""
        w = self.window_at(at) if self.status == "approved" else None
        if w is None:
            return None
        if self.every is None:
            return self
        return self.model_copy(update={"start": w.start, "until": w.end, "every": None, "skipped": (),
                                       "announced": {}})

    @property
    def held_from(self) -> datetime:
        """When the planner began or begins to honour it: its start less the lead, never before it was asked for
        (what the cooldown counts from: engine.reservations.began_since)."""
        return max(self.start - self.lead, self.requested_at)

    @property
    def label(self) -> str:
        """How reasons and messages name it: `reservation r-1a2b for launch until Fri 04 Dec 18:00 UTC`."""
        until = self.until.astimezone(UTC)
        return f"reservation {self.reservation_id} for {self.reason} until {until:%a %d %b %H:%M} UTC"

    @property
    def schedule(self) -> str:
        """Its windows in words: `from 2026-12-01 08:00 until 2026-12-04 18:00 UTC` or `Mon-Fri 18:00-08:00
        Europe/Berlin from 2026-12-01 00:00 until 2027-03-31 00:00`."""
        if self.every is None:
            start, until = self.start.astimezone(UTC), self.until.astimezone(UTC)
            return f"from {start:%Y-%m-%d %H:%M} until {until:%Y-%m-%d %H:%M} UTC"
        zone = time_zone(self.timezone)
        return (f"{self.every} {self.timezone} from {self.start.astimezone(zone):%Y-%m-%d %H:%M} until "
                f"{self.until.astimezone(zone):%Y-%m-%d %H:%M}")


class Book(Frozen):
    """A cluster's reservations as read for a check, and the version they were read at: a new reservation is
    stored only while the version is still this one (rebalancer.app.reservations.reserve)."""

    version: int = Field(ge=0)
    reservations: tuple[Reservation, ...]


def _key(t: datetime) -> str:
    return t.astimezone(UTC).isoformat()


def occurrence_key(rec: Reservation, local_day: date) -> str | None:
    """The key of `rec`'s occurrence opening on `local_day` (a date in its time zone), if it has one."""
    if rec.every is None:
        return None
    zone = time_zone(rec.timezone)
    day_start = datetime.combine(local_day, time(0), zone)
    found = next((w for w in rec.windows(day_start - timedelta(days=1), day_start + timedelta(days=1))
                  if datetime.fromisoformat(w.key).astimezone(zone).date() == local_day), None)
    return None if found is None else found.key


def ended(reservations: Sequence[Reservation], at: datetime) -> tuple[Reservation, ...]:
    """The one-window reservations held once and no longer at `at`, each with `ended_at` its end: its until, or, once
    cancelled after it began, the time a run first saw that (`at` itself until one has). A recurring one's windows
    are not told apart here: their ends stay under the cooldown."""
    out = []
    for r in reservations:
        if r.recurring or r.held_from > at or r.active_at(at):
            continue
        if r.status == "approved" and at >= r.until:
            out.append(r.model_copy(update={"ended_at": r.until}))
        elif r.status == "cancelled" and r.started_at is not None:
            out.append(r.model_copy(update={"ended_at": min(r.until, r.ended_at or at)}))
    return tuple(sorted(out, key=lambda r: r.reservation_id))


def current(reservations: Sequence[Reservation], at: datetime) -> tuple[Reservation, ...]:
    """The windows held at `at` of the approved reservations, each as a reservation of its own (occurrence_at)."""
    return tuple(o for o in (r.occurrence_at(at) for r in reservations) if o is not None)
