"""When a caller's forecasts must stop: the plan step's Lambda timeout, less what the step does after them. A
module of its own so that the handler can set it without loading the forecast."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class Deadline:
    """Passed once `clock()` (seconds) is past `at`, and from then on. `reached`: whether it has passed (a
    forecast it stopped says so)."""

    at: float
    clock: Callable[[], float] = time.monotonic
    reached: bool = False

    def passed(self) -> bool:
        if not self.reached and self.clock() > self.at:
            self.reached = True
        return self.reached

    @classmethod
    def within(cls, seconds: float, clock: Callable[[], float] = time.monotonic) -> Deadline:
        return cls(clock() + seconds, clock)
