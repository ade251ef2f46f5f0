"""The functions' clock in local runs (demo, tests): starts at the wall time or a given instant, ticks a millisecond
per reading so audit records keep their order, and jumps forward by hand ("hours later")."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


class Clock:
    def __init__(self, start: datetime | None = None) -> None:
        self.t = start or datetime.now(UTC)
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            self.t += timedelta(milliseconds=1)
            return self.t

    def advance(self, hours: float = 0.0, *, minutes: float = 0.0) -> None:
        with self._lock:
            self.t += timedelta(hours=hours, minutes=minutes)
