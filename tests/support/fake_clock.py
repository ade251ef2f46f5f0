"""Injected time for tests: a clock that sleeping advances, and a stand-in for botocore's retry back-off sleep."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FakeClock:
    """Call it for the time; `sleep` records the wait and advances the clock."""

    now: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@dataclass
class FakeTime:
    """Replaces the `time` module inside botocore.endpoint (monkeypatch it onto `botocore.endpoint.time`): retry
    back-offs are recorded, not slept."""

    slept: list[float] = field(default_factory=list)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
