"""The tests' time line: one fixed start, and the functions' ticking clock (rebalancer_tools.fakes.ticking_clock) on it.
Give the same clock to the emulator (`in_process_emulator(clock=...)`) and to the stack (`LocalStack(now=...)`)."""

from __future__ import annotations

from datetime import UTC, datetime

from rebalancer_tools.fakes.ticking_clock import TickingClock

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def ticking() -> TickingClock:
    """A fresh clock at T0: a millisecond per reading, `advance(hours=, minutes=)` to jump."""
    return TickingClock(T0)
