"""Trailing usage: the accelerator-hours (own and borrowed together) each team received per instance type over a
sliding window that ends at the snapshot's time, from the same metering facts the budgets are summed from. What
time-based fair share (`fairness.window_hours`) reads. Pure; kept incrementally, so that a caller that meters every
few minutes (the simulator, the backtest) adds each fact once and drops it once it has left the window."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rebalancer.budgets.metering import Fact

# team → instance type → accelerator-hours
Hours = dict[str, dict[str, float]]


def _received(fact: Fact, since: datetime, until: datetime) -> Hours:
    return {team: {t: own + borrowed for t, (own, borrowed) in by_type.items()}
            for team, by_type in fact.hours(since, until).items()}


def _add(total: Hours, part: Hours, sign: float) -> None:
    for team, by_type in part.items():
        into = total.setdefault(team, {})
        for itype, h in by_type.items():
            into[itype] = into.get(itype, 0.0) + sign * h


@dataclass(slots=True)
class TrailingUsage:
    """Per team and instance type, the accelerator-hours received within [at − window, at). Facts are added in the
    order they were metered; `hours(at)` is asked at times that never go backwards (each run's snapshot time), and
    a fact that ended before the window's start is forgotten for good."""

    window: timedelta
    _facts: deque[tuple[Fact, Hours]] = field(default_factory=deque, init=False)
    _total: Hours = field(default_factory=dict, init=False)  # the whole hours of every fact kept

    @classmethod
    def of(cls, facts: Iterable[Fact], window: timedelta) -> TrailingUsage:
        usage = cls(window)
        for fact in facts:
            usage.add(fact)
        return usage

    def add(self, fact: Fact) -> None:
        whole = _received(fact, fact.start, fact.end)
        self._facts.append((fact, whole))
        _add(self._total, whole, 1.0)

    def hours(self, at: datetime) -> Hours:
        """The hours received within the window that ends at `at`: the facts inside it whole, the ones across
        either edge in part (metering's straight line between readings)."""
        since = at - self.window
        while self._facts and self._facts[0][0].end <= since:
            _add(self._total, self._facts.popleft()[1], -1.0)
        out: Hours = {team: dict(by_type) for team, by_type in self._total.items()}
        edges = {id(f): (f, w) for f, w in self._head(since)} | {id(f): (f, w) for f, w in self._tail(at)}
        for fact, whole in edges.values():
            _add(out, whole, -1.0)
            _add(out, _received(fact, since, at), 1.0)
        return {team: {t: max(h, 0.0) for t, h in sorted(by_type.items()) if h > 1e-9}
                for team, by_type in sorted(out.items()) if any(h > 1e-9 for h in by_type.values())}

    def _head(self, since: datetime) -> list[tuple[Fact, Hours]]:
        """The oldest facts, those that started before the window (facts come in time order)."""
        out = []
        for entry in self._facts:
            if entry[0].start >= since:
                break
            out.append(entry)
        return out

    def _tail(self, at: datetime) -> list[tuple[Fact, Hours]]:
        """The newest facts, those that end after `at`."""
        out = []
        for entry in reversed(self._facts):
            if entry[0].end <= at:
                break
            out.append(entry)
        return out
