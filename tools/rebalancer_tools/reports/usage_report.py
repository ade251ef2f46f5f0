"""`rebalancer usage`: per team, accelerator-hours used in a period (own quota vs borrowed), the budget, the cost and
a forecast to the period's end, from the metered facts; and a plot of cumulative use against the budget."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rebalancer.budgets.metering import Fact, Used, budget_usage, hours_in
from rebalancer.domain.budget import MAX_HOURS, Budget, Period, PeriodWindow, parse_period_label, period_window
from rebalancer.domain.policy import Policy
from rebalancer_tools.reports.tables import Column, Listing, Record

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True, slots=True)
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
    """JSON or CSV of the rows (the table is `table(report)`, printed through a console)."""
    if fmt == "json":
        return json.dumps([asdict(r) for r in report], indent=2, sort_keys=True, allow_nan=False)
    if fmt != "csv":
        raise ValueError(fmt)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(UsageRow.__dataclass_fields__))
    writer.writeheader()
    for r in report:
        writer.writerow({**asdict(r), "unpriced": " ".join(r.unpriced)})
    return buf.getvalue()


def _budget(r: Record) -> str:
    if r["budget_hours"]:
        return f"{r['budget_hours']:,.0f}"
    return f"${r['budget_money']:,.0f}" if r["budget_money"] else "-"


def table(report: list[UsageRow]) -> Listing:
    """Per team: accelerator-hours used (own, borrowed), the budget, % of it, cost and the forecast."""
    def hours(key: str, digits: int = 1) -> Column:
        return Column(key.split("_")[0], cell=lambda r: f"{r[key]:,.{digits}f}", numeric=True)

    notes = tuple(f"{r.team}: no price for {', '.join(r.unpriced)} (add them to the policy's prices); that use is "
                  "not costed" for r in report if r.unpriced)
    return Listing(
        title="accelerator-hours per team",
        columns=(Column("team", wrap=False), Column("period", wrap=False), hours("used_hours"),
                 hours("own_hours"), hours("borrowed_hours"), Column("budget", cell=_budget, numeric=True),
                 Column("%", cell=lambda r: "-" if r["used_percent"] is None else f"{r['used_percent']:.0f}",
                        numeric=True),
                 Column("cost", cell=lambda r: "-" if r["cost"] is None else f"{r['cost']:,.0f}", numeric=True),
                 Column("forecast", cell=lambda r: f"{r['forecast_hours']:,.0f}"
                        + (" (estimated)" if r["estimated"] else ""), wrap=False)),
        records=tuple(asdict(r) for r in report), footer=notes)


def usage_figure(facts: Sequence[Fact], policy: Policy, at: datetime, period: str | None) -> Figure | None:
    """Cumulative accelerator-hours per team that used any in its period, over the period's time, with its budget as
    a dashed line of the same colour; None when no team used any (nothing to draw)."""
    from rebalancer_tools.reports import figures

    lines: list[tuple[str, list[Any], list[float], float | None]] = []
    teams = sorted(set(policy.teams) | {t for f in facts for t in (*f.at_start, *f.at_end)})
    for team in teams:
        tp = policy.teams.get(team)
        budget = applies(tp.budget if tp else None, period)
        w = window_for(tp.budget if tp else None, at, period)
        until = min(at, w.end)
        xs: list[Any] = [w.start]
        ys, total = [0.0], 0.0
        for fact in facts:
            if fact.end <= w.start or fact.start >= until:
                continue
            part = hours_in([fact], w.start, until).get(team, {})
            total += sum(u.own + u.borrowed for t, u in part.items() if budget is None or budget.covers(t))
            xs.append(min(fact.end, until))
            ys.append(total)
        if total > 0:
            lines.append((team, xs, ys, budget.accelerator_hours if budget else None))
    if not lines:
        return None
    fig, [ax] = figures.new_figure(1, width=9, row_height=4.4)
    for team, xs, ys, budget_hours in lines:
        line = ax.plot(xs, ys, label=team)[0]
        if budget_hours:
            ax.hlines(budget_hours, xs[0], xs[-1], colors=line.get_color(), linestyles="dashed",
                      label=f"{team}: budget")
    ax.set_ylabel("accelerator-hours")
    ax.set_title("cumulative use against budget (dashed)", loc="left")
    figures.time_axis(ax)
    figures.legend_outside(fig, [ax])
    return fig
