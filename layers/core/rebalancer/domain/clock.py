"""The time of day, as every layer takes it: a Clock is anything called with no argument that returns an aware
datetime (UTC). The Lambdas get `system_clock` through rebalancer.app.wiring; the demo, the local stack and the tests
give their own (rebalancer_tools.fakes.ticking_clock). The engine reads no clock: the time comes in with its inputs.

Deadlines that measure elapsed seconds (the pollers' bounds, token lifetimes) use `time.monotonic`, which does not
jump with the wall time; they are stopwatches, not this clock."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


class Clock(Protocol):
    def __call__(self) -> datetime: ...


def system_clock() -> datetime:
    return datetime.now(UTC)


def time_zone(name: str) -> ZoneInfo:
    """The IANA time zone `name` (UTC, Europe/Berlin); ValueError naming it otherwise."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a folder of the tz database, e.g. America
        raise ValueError(f"{name!r} is not a time zone name (e.g. UTC, Europe/Berlin, America/New_York)") from None
