"""Budgets: accelerator-hours (or money) per team per period, and what the planner does as a team uses them up.

A budget covers all of a team's accelerators, one instance family or one instance type (`scope`), per calendar month
or ISO week in a time zone. Use is metered by `rebalancer.budgets.metering` and reaches the planner as period-to-date
figures in the planning context (`rebalancer.planning.context`), so planning stays pure: this module only lowers a
team's ceiling or its sharing and says why.

`on_exhausted` at 100 %: `guarantee_only` caps the team's quota at its guarantee in the budget's scope,
`no_borrowing` sets its sharing to `Lend` (it still lends idle capacity, it borrows none), `notify` changes nothing.
Each threshold of `notify_at` is announced once per period.

Limits (so that every figure derived from a budget stays finite and prints as a number): `accelerator_hours` from
0.01 to 10^9, `money` from 0.01 to 10^12, use in `BudgetUsage` from 0 to 10^15 (the loader's limit); periods exist
for the years 2 to 9998, so that a period and its neighbours are dates in every time zone; a time zone is a name of
the tz database, not one of its folders (`America`).
"""

from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal
from zoneinfo import ZoneInfo

from pydantic import Field, field_validator, model_validator

from rebalancer.catalog import specs as catalog
from rebalancer.domain.clock import time_zone
from rebalancer.domain.frozen import Frozen, Written
from rebalancer.errors import UnknownInstanceType

MAX_HOURS = 1e9  # a million accelerators for a thousand hours
MAX_MONEY = 1e12
MAX_USE = 1e15  # the loader's MAX_NUMBER
FIRST_YEAR, LAST_YEAR = 2, 9998  # datetime holds years 1 to 9999; a zone's offset may step over either end
Hours = Annotated[float, Field(ge=0.01, le=MAX_HOURS, allow_inf_nan=False)]
Money = Annotated[float, Field(ge=0.01, le=MAX_MONEY, allow_inf_nan=False)]
Use = Annotated[float, Field(ge=0, le=MAX_USE, allow_inf_nan=False)]
Period = Literal["month", "week"]
OnExhausted = Literal["guarantee_only", "no_borrowing", "notify"]
ALL = "all"


class Budget(Written):

    accelerator_hours: Hours | None = None
    money: Money | None = None  # in the currency of `prices` (per instance-hour)
    period: Period = "month"
    timezone: str = "UTC"
    scope: str = ALL  # "all", an instance family (ml.p5) or an instance type (ml.p5.48xlarge)
    on_exhausted: OnExhausted = "notify"
    notify_at: Annotated[tuple[Annotated[int, Field(ge=1, le=1000, strict=True)], ...], Field(strict=False)] = \
        (50, 80, 100)

    @field_validator("timezone")
    @classmethod
    def _zone(cls, name: str) -> str:
        time_zone(name)
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
    def _some_limit(self) -> "Budget":
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

    def window(self, at: datetime) -> "PeriodWindow":
        return period_window(at, self.period, self.timezone)


class PeriodWindow(Frozen):
    """One budget period: [start, end) in UTC, and its label (`2026-11`, `2026-W48`)."""

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
    check_year(at)
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


def check_year(at: datetime) -> datetime:
    """`at` when its year (in UTC) is one a period can be computed for in every time zone; ValueError otherwise."""
    year = at.astimezone(UTC).year if at.year not in (1, 9999) else at.year
    if not FIRST_YEAR <= year <= LAST_YEAR:
        raise ValueError(f"{at.isoformat()} is outside the years {FIRST_YEAR} to {LAST_YEAR} that budget periods "
                         "cover")
    return at


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


class BudgetUsage(Frozen):
    """A team's period-to-date use against its budget, as the plan step computed it from the metered facts."""

    period: str = Field(max_length=16)
    accelerator_hours: Use = 0.0
    borrowed_hours: Use = 0.0  # part of accelerator_hours that ran on borrowed capacity
    cost: Use = 0.0
    estimated: bool = False  # some of it was filled in across a gap between readings
    unpriced: tuple[Annotated[str, Field(max_length=64)], ...] = Field(default=(), max_length=1000)  # types used
    # in scope with no price (money budgets)

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
