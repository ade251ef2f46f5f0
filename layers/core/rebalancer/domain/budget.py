"""Budgets: accelerator-hours (or money) per team per period, and what the planner does as a team uses them up.

A budget covers all of a team's accelerators, one instance family or one instance type (`scope`), per calendar month
or ISO week in a time zone. Use is metered by `rebalancer.budgets.metering` and reaches the planner as period-to-date
figures in the snapshot (`Snapshot.budget_usage`), so planning stays pure: this module only lowers a team's ceiling or
its
sharing and says why.

`on_exhausted` at 100 %: `guarantee_only` caps the team's quota at its guarantee in the budget's scope,
`no_borrowing` sets its sharing to `Lend` (it still lends idle capacity, it borrows none), `notify` changes nothing.
Each threshold of `notify_at` is announced once per period.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, field_validator, model_validator

from rebalancer.catalog import specs as catalog
from rebalancer.errors import UnknownInstanceType

Period = Literal["month", "week"]
OnExhausted = Literal["guarantee_only", "no_borrowing", "notify"]
ALL = "all"


class Budget(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)  # as the policy's models

    accelerator_hours: PositiveFloat | None = None
    money: PositiveFloat | None = None  # in the currency of `prices` (per instance-hour)
    period: Period = "month"
    timezone: str = "UTC"
    scope: str = ALL  # "all", an instance family (ml.p5) or an instance type (ml.p5.48xlarge)
    on_exhausted: OnExhausted = "notify"
    notify_at: Annotated[tuple[Annotated[int, Field(ge=1, le=1000, strict=True)], ...], Field(strict=False)] = \
        (50, 80, 100)

    @field_validator("timezone")
    @classmethod
    def _zone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{name!r} is not a time zone name (e.g. UTC, Europe/Berlin, America/New_York)") from None
        return name

    @field_validator("scope")
    @classmethod
    def _scope(cls, scope: str) -> str:
        types = (scope,) if scope in catalog.known_types() else catalog.types_in_family(scope)
        if scope == ALL or any(catalog.spec(t).accelerators for t in types):
            return scope
        raise ValueError(f"scope {scope!r}: give 'all', an accelerator instance family (ml.p5) or type "
                         "(ml.p5.48xlarge)")

    @field_validator("notify_at")
    @classmethod
    def _thresholds(cls, values: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(sorted(set(values)))

    @model_validator(mode="after")
    def _some_limit(self) -> Budget:
        if self.accelerator_hours is None and self.money is None:
            raise ValueError("a budget needs accelerator_hours, money, or both")
        return self

    def covers(self, instance_type: str) -> bool:
        """Whether use on `instance_type` counts against this budget."""
        try:
            spec = catalog.spec(instance_type)
        except UnknownInstanceType:
            return False
        if not spec.accelerators:
            return False
        if self.scope == ALL:
            return True
        return instance_type == self.scope or instance_type in catalog.types_in_family(self.scope)

    def window(self, at: datetime) -> PeriodWindow:
        return period_window(at, self.period, self.timezone)


class PeriodWindow(BaseModel):
    """One budget period: [start, end) in UTC, and its label (`2026-11`, `2026-W48`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str
    start: datetime
    end: datetime

    def fraction_elapsed(self, at: datetime) -> float:
        total = (self.end - self.start).total_seconds()
        return min(max((at - self.start).total_seconds() / total, 0.0), 1.0)


def period_window(at: datetime, period: Period, timezone: str = "UTC") -> PeriodWindow:
    """The period holding instant `at` (aware), with its bounds converted to UTC. Months and weeks start at local
    midnight, so a DST change inside a period makes it an hour longer or shorter, as a wall calendar does."""
    if at.tzinfo is None:
        raise ValueError(f"instant {at.isoformat()} has no time zone")
    zone = ZoneInfo(timezone)
    local = at.astimezone(zone)
    if period == "month":
        start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        end = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
        label = f"{start.year:04d}-{start.month:02d}"
    else:
        day = local.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=local.weekday())
        start, end = day, day + timedelta(days=7)
        year, week, _ = start.isocalendar()
        label = f"{year:04d}-W{week:02d}"
    # Re-attach the zone after date arithmetic so that the UTC offset is the one in force at each bound.
    start = start.replace(tzinfo=None).replace(tzinfo=zone)
    end = end.replace(tzinfo=None).replace(tzinfo=zone)
    return PeriodWindow(label=label, start=start.astimezone(UTC), end=end.astimezone(UTC))


def parse_period_label(label: str, period: Period, timezone: str = "UTC") -> PeriodWindow:
    """`2026-11` (month) or `2026-W48` (week) → its window; ValueError naming the label otherwise."""
    try:
        if period == "month":
            at = datetime.strptime(label + "-15", "%Y-%m-%d")
        else:
            at = datetime.strptime(label + "-4", "%G-W%V-%u")
    except ValueError:
        example = "2026-11" if period == "month" else "2026-W48"
        raise ValueError(f"period {label!r} is not a {period} like {example}") from None
    return period_window(at.replace(tzinfo=ZoneInfo(timezone)), period, timezone)


class BudgetUsage(BaseModel):
    """A team's period-to-date use against its budget, as the plan step computed it from the metered facts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    period: str
    accelerator_hours: float = 0.0
    borrowed_hours: float = 0.0  # part of accelerator_hours that ran on borrowed capacity
    cost: float = 0.0
    estimated: bool = False  # some of it was filled in across a gap between readings
    unpriced: tuple[str, ...] = ()  # instance types used in scope with no price (money budgets)

    def fraction(self, budget: Budget) -> float:
        """Used ÷ budget, the larger of the hours and the money fraction."""
        parts = []
        if budget.accelerator_hours:
            parts.append(self.accelerator_hours / budget.accelerator_hours)
        if budget.money:
            parts.append(self.cost / budget.money)
        return max(parts, default=0.0)


def reached_thresholds(budget: Budget, usage: BudgetUsage) -> tuple[int, ...]:
    pct = usage.fraction(budget) * 100
    return tuple(t for t in budget.notify_at if pct + 1e-9 >= t)


def describe(budget: Budget, usage: BudgetUsage) -> str:
    """`budget 92 % used (4,600 of 5,000 accelerator-hours, 2026-11)` — the words reasons and messages use."""
    parts = []
    if budget.accelerator_hours:
        parts.append(f"{usage.accelerator_hours:,.0f} of {budget.accelerator_hours:,.0f} accelerator-hours")
    if budget.money:
        parts.append(f"{usage.cost:,.0f} of {budget.money:,.0f} spent")
    est = ", estimated" if usage.estimated else ""
    return f"budget {usage.fraction(budget) * 100:.0f} % used ({'; '.join(parts)}, {usage.period}{est})"
