"""The functions' clock in local runs (demo, tests): a rebalancer.domain.clock.Clock that starts at the wall time or
a given instant, ticks a millisecond per reading so audit records keep their order, and jumps forward by hand
("hours later"). The one fake clock: the local stack, the emulator and every test take this one."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

from rebalancer.domain.clock import system_clock


class TickingClock:
    def __init__(self, start: datetime | None = None) -> None:
        self.t = start or system_clock()
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            self.t += timedelta(milliseconds=1)
            return self.t

    def advance(self, hours: float = 0.0, *, minutes: float = 0.0) -> None:
        with self._lock:
            self.t += timedelta(hours=hours, minutes=minutes)
