"""`rebalancer usage`: per team, accelerator-hours used in a period (own quota vs borrowed), the budget, the cost and
a forecast to the period's end, from the metered facts; and a plot of cumulative use against the budget."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from rebalancer.budgets.metering import Fact, Used, budget_usage, hours_in
from rebalancer.domain.budget import MAX_HOURS, Budget, Period, PeriodWindow, parse_period_label, period_window
from rebalancer.domain.policy import Policy


@dataclass(frozen=True)
class UsageRow:
    team: str
    period: str
    used_hours: float
    own_hours: float
    borrowed_hours: float
    budget_hours: float | None
    budget_money: float | None
    cost: float | None  # None: nothing used was priced
    used_percent: float | None  # of the budget (the larger of hours and money)
    forecast_hours: float  # at the period's end, at the pace so far
    estimated: bool
    unpriced: tuple[str, ...] = ()  # types used in scope that a money budget has no price for


def window_for(budget: Budget | None, at: datetime, period: str | None) -> PeriodWindow:
    """The budget's own period holding `at`; with `period`, that label's month or week (`2026-11`, `2026-W48`), in
    the budget's time zone when the budget runs over that kind of period, else in UTC."""
    if period is None:
        return budget.window(at) if budget else period_window(at, "month")
    kind: Period = "week" if "-W" in period else "month"
    zone = budget.timezone if budget and budget.period == kind else "UTC"
    return parse_period_label(period, kind, zone)


def applies(budget: Budget | None, period: str | None) -> Budget | None:
    """The budget, when the report's period is of its kind (a monthly report shows no % of a weekly budget)."""
    if budget is None or period is None:
        return budget
    return budget if budget.period == ("week" if "-W" in period else "month") else None


def rows(facts: Sequence[Fact], policy: Policy, at: datetime, period: str | None) -> list[UsageRow]:
    """Every team that used accelerators in its period or has a budget. Teams without a budget are reported over
    calendar months in UTC."""
    hours_cache: dict[tuple[datetime, datetime], dict[str, dict[str, Used]]] = {}
    out = []
    teams = set(policy.teams) | {t for f in facts for t in (*f.at_start, *f.at_end)}
    for team in sorted(teams):
        own_budget = policy.teams[team].budget if team in policy.teams else None
        budget = applies(own_budget, period)
        w = window_for(own_budget, at, period)
        until = min(at, w.end)
        span = (w.start, until)
        if span not in hours_cache:
            hours_cache[span] = hours_in(facts, *span)
        used = hours_cache[span].get(team, {})
        scope = budget or Budget(accelerator_hours=MAX_HOURS)
        u = budget_usage(used, scope, w.label, policy.prices)
        if not u.accelerator_hours and budget is None:
            continue
        elapsed = w.fraction_elapsed(until)
        priced = any(t in policy.prices for t in used)
        out.append(UsageRow(team=team, period=w.label, used_hours=u.accelerator_hours,
                            own_hours=u.accelerator_hours - u.borrowed_hours, borrowed_hours=u.borrowed_hours,
                            budget_hours=budget.accelerator_hours if budget else None,
                            budget_money=budget.money if budget else None, cost=u.cost if priced else None,
                            used_percent=u.fraction(budget) * 100 if budget else None,
                            forecast_hours=u.accelerator_hours / elapsed if elapsed > 0 else 0.0,
                            estimated=u.estimated, unpriced=u.unpriced))
    return out


def render(report: list[UsageRow], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([asdict(r) for r in report], indent=2, sort_keys=True, allow_nan=False)
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(UsageRow.__dataclass_fields__))
        writer.writeheader()
        for r in report:
            writer.writerow({**asdict(r), "unpriced": " ".join(r.unpriced)})
        return buf.getvalue()
    header = f"{'team':<20} {'period':<9} {'used':>9} {'own':>9} {'borrowed':>9} {'budget':>9} {'%':>6} " \
             f"{'cost':>10} {'forecast':>9}"
    lines = [header]
    for r in report:
        budget = f"{r.budget_hours:,.0f}" if r.budget_hours else (f"${r.budget_money:,.0f}" if r.budget_money else "-")
        pct = f"{r.used_percent:.0f}" if r.used_percent is not None else "-"
        cost = f"{r.cost:,.0f}" if r.cost is not None else "-"
        lines.append(f"{r.team:<20} {r.period:<9} {r.used_hours:>9,.1f} {r.own_hours:>9,.1f} "
                     f"{r.borrowed_hours:>9,.1f} {budget:>9} {pct:>6} {cost:>10} {r.forecast_hours:>9,.0f}"
                     + (" (estimated)" if r.estimated else ""))
    lines += [f"{r.team}: no price for {', '.join(r.unpriced)} (add them to the policy's prices); that use is not "
              "costed" for r in report if r.unpriced]
    return "\n".join(lines)


def plot(facts: Sequence[Fact], policy: Policy, at: datetime, period: str | None, path: Path | IO[bytes]) -> None:
    """Cumulative accelerator-hours per team with a budget, against its budget line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    for team, tp in sorted(policy.teams.items()):
        if tp.budget is None:
            continue
        if applies(tp.budget, period) is None:
            continue
        w = window_for(tp.budget, at, period)
        xs: list[Any] = [w.start]
        ys, total = [0.0], 0.0
        for fact in facts:
            if fact.end <= w.start or fact.start >= min(at, w.end):
                continue
            part = hours_in([fact], w.start, min(at, w.end)).get(team, {})
            total += sum(u.own + u.borrowed for t, u in part.items() if tp.budget.covers(t))
            xs.append(min(fact.end, at, w.end))
            ys.append(total)
        line = ax.plot(xs, ys, label=team)[0]
        if tp.budget.accelerator_hours:
            start: Any = w.start  # matplotlib takes datetimes; its stubs say numbers
            end: Any = w.end
            ax.hlines(tp.budget.accelerator_hours, start, end, colors=line.get_color(), linestyles="dashed")
    ax.xaxis_date()
    ax.set_ylabel("accelerator-hours (dashed: budget)")
    ax.set_title("cumulative use against budget")
    ax.legend(loc="upper left")
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)
