"""Metering: how many accelerator-hours each team used, on its own quota and borrowed, from the readings that
collect and observe take. Pure: the store keeps the readings and facts, this module turns them into hours.

A *reading* is what a team runs at one instant, per instance type: accelerators in use within its quota (own) and
above it (borrowed, lent by another team). A *fact* is the interval between two consecutive readings with both
ends' rates; use in between is the straight line from one to the other, so any part of an interval — a period
that starts or ends inside it — is integrated exactly, and the parts of an interval always add up to the whole.
A fact whose interval is longer than the expected gap between runs is marked estimated: it was filled in across
missed readings.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from rebalancer.catalog import specs as catalog
from rebalancer.domain.budget import Budget, BudgetUsage, PeriodWindow
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import UnknownInstanceType

if TYPE_CHECKING:  # handlers that load metering without a policy (tests/infra/test_fresh_interpreter_imports.py)
    from rebalancer.domain.policy import Policy

# team → instance type → (own, borrowed) accelerators in use
Rates = dict[str, dict[str, tuple[float, float]]]
EXPECTED_GAP = timedelta(minutes=35)  # two schedule periods (15 min) and some slack: longer means missed runs


class Reading(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    at: datetime
    rates: Rates


class Fact(BaseModel):
    """Use between two consecutive readings (start < end)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    start: datetime
    end: datetime
    at_start: Rates
    at_end: Rates
    estimated: bool = False

    def hours(self, since: datetime, until: datetime) -> dict[str, dict[str, tuple[float, float]]]:
        """Accelerator-hours (own, borrowed) per team and type within [since, until) ∩ [start, end)."""
        a, b = max(since, self.start), min(until, self.end)
        out: dict[str, dict[str, tuple[float, float]]] = {}
        if b <= a:
            return out
        span = (self.end - self.start).total_seconds()
        fa = (a - self.start).total_seconds() / span
        fb = (b - self.start).total_seconds() / span
        hours = (b - a).total_seconds() / 3600
        for team in sorted(set(self.at_start) | set(self.at_end)):
            s, e = self.at_start.get(team, {}), self.at_end.get(team, {})
            for itype in sorted(set(s) | set(e)):
                (o0, b0), (o1, b1) = s.get(itype, (0.0, 0.0)), e.get(itype, (0.0, 0.0))
                own = hours * (_lerp(o0, o1, fa) + _lerp(o0, o1, fb)) / 2
                borrowed = hours * (_lerp(b0, b1, fa) + _lerp(b0, b1, fb)) / 2
                if own or borrowed:
                    out.setdefault(team, {})[itype] = (own, borrowed)
        return out


def _lerp(x0: float, x1: float, f: float) -> float:
    return x0 + (x1 - x0) * f


def _held_accelerators(quota: ComputeQuota | None, instance_type: str, per_node: int) -> float:
    r = quota.resource(instance_type) if quota else None
    if r is None:
        return 0.0
    if r.Accelerators is not None:
        return float(r.Accelerators)
    return float((r.Count or 0) * per_node)


def reading_of(snapshot: Snapshot) -> Reading:
    """What each team runs now, per accelerator instance type: own = in use up to its quota, borrowed = the rest.
    MIG partitions are not metered (a partition is a fraction of a GPU that HyperPod does not bill apart)."""
    rates: Rates = {}
    quotas = {q.team: q for q in reversed(snapshot.quotas)}  # the first of a team's, as Snapshot.quota_of reads
    for team, pools in sorted(snapshot.demand.items()):
        for pool, demand in sorted(pools.items()):
            if ":" in pool or not demand.in_use.accelerators:
                continue
            try:
                per_node = catalog.spec(pool).accelerators
            except UnknownInstanceType:
                continue
            if not per_node:
                continue
            used = demand.in_use.accelerators
            own = min(used, _held_accelerators(quotas.get(team), pool, per_node))
            rates.setdefault(team, {})[pool] = (own, used - own)
    return Reading(at=snapshot.taken_at, rates=rates)


def fact_between(last: Reading, now: Reading, expected_gap: timedelta = EXPECTED_GAP) -> Fact | None:
    """The fact from the last reading to this one; None when this reading is not later (a retry or a clock that
    went backwards: nothing is counted twice or negative)."""
    if now.at <= last.at:
        return None
    return Fact(start=last.at, end=now.at, at_start=last.rates, at_end=now.rates,
                estimated=now.at - last.at > expected_gap)


@dataclass(frozen=True, slots=True)
class MeterResult:
    """What metering one reading did: the first reading of a cluster, a fact recorded, a duplicate (a retried or
    concurrent run metered this interval already) or a stale reading (not after the last one)."""

    status: Literal["first", "recorded", "duplicate", "stale"]
    fact: Fact | None


@dataclass(slots=True)
class Used:
    """One team's accelerator-hours on one instance type over a window (added to as facts are read)."""

    own: float = 0.0
    borrowed: float = 0.0
    estimated: bool = False


def hours_in(facts: Iterable[Fact], since: datetime, until: datetime) -> dict[str, dict[str, Used]]:
    """Per team and instance type, the accelerator-hours used within [since, until)."""
    out: dict[str, dict[str, Used]] = defaultdict(lambda: defaultdict(Used))
    for fact in facts:
        for team, by_type in fact.hours(since, until).items():
            for itype, (own, lent) in by_type.items():
                used = out[team][itype]
                used.own += own
                used.borrowed += lent
                used.estimated = used.estimated or fact.estimated
    return out


def budget_usage(used: Mapping[str, Used], budget: Budget, period: str, prices: Mapping[str, float]) -> BudgetUsage:
    """A team's use (per instance type, from `hours_in`) against its budget's scope and prices."""
    hours = borrowed = cost = 0.0
    unpriced: set[str] = set()
    estimated = False
    for itype, u in sorted(used.items()):
        if not budget.covers(itype):
            continue
        hours += u.own + u.borrowed
        borrowed += u.borrowed
        estimated = estimated or u.estimated
        price = prices.get(itype)
        if price is None:
            unpriced.add(itype)
        else:
            cost += (u.own + u.borrowed) * price / catalog.spec(itype).accelerators
    return BudgetUsage(period=period, accelerator_hours=hours, borrowed_hours=borrowed, cost=cost,
                       estimated=estimated, unpriced=tuple(sorted(unpriced)) if budget.money else ())


def budgets_of(policy: "Policy") -> dict[str, Budget]:
    """Per team the policy keeps that has a budget, its budget, by team name."""
    return {name: t.budget for name, t in sorted(policy.teams.items()) if t.budget is not None and not t.remove}


@dataclass(slots=True)
class Ledger:
    """Period use per budgeted team: accelerator-hours per budget period and instance type, added up fact by fact
    in the order the facts were metered. The one way the planner's budget use is summed: the plan step builds one
    from the facts the store holds, the simulator and the backtest keep one and add each fact as it is metered
    (`rebalancer usage` reports over any period, budget or not, with `hours_in`)."""

    budgets: Mapping[str, Budget]
    # (team, period label) → instance type → hours
    used: dict[tuple[str, str], dict[str, Used]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.budgets = dict(sorted(self.budgets.items()))

    @classmethod
    def of(cls, facts: Iterable[Fact], budgets: Mapping[str, Budget], until: datetime) -> "Ledger":
        ledger = cls(budgets)
        for fact in facts:
            ledger.add(fact, until)
        return ledger

    def add(self, fact: Fact, until: datetime | None = None) -> None:
        """The fact's hours (up to `until`) in every period of every budgeted team that it overlaps."""
        end = fact.end if until is None else min(fact.end, until)
        hours: dict[tuple[datetime, datetime], dict[str, dict[str, tuple[float, float]]]] = {}
        for team, budget in self.budgets.items():
            w = budget.window(fact.start)
            while w.start < end:
                span = (w.start, w.end if until is None else min(w.end, until))
                if span not in hours:
                    hours[span] = fact.hours(*span)
                by_type = self.used.setdefault((team, w.label), {})
                for itype, (own, lent) in hours[span].get(team, {}).items():
                    used = by_type.get(itype)
                    if used is None:
                        used = by_type[itype] = Used()
                    used.own += own
                    used.borrowed += lent
                    used.estimated = used.estimated or fact.estimated
                w = budget.window(w.end)

    def usage(self, at: datetime, prices: Mapping[str, float]) -> dict[str, BudgetUsage]:
        """Per budgeted team, its use in the period that holds `at`."""
        return self.usage_in({team: b.window(at) for team, b in self.budgets.items()}, prices)

    def usage_in(self, windows: Mapping[str, PeriodWindow], prices: Mapping[str, float]) -> dict[str, BudgetUsage]:
        return {team: budget_usage(self.used.get((team, w.label), {}), self.budgets[team], w.label, prices)
                for team, w in windows.items()}
