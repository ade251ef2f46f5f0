"""Budgets in the workflow: meter each reading, give the planning context the use metered so far, and say what is
news at a run: a team that passed a threshold (once per period) and how each period ended (once). The run that
claims a line in the meter's announcement records is the one whose Notify step sends it
(rebalancer.app.workflow.news)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol

from rebalancer.budgets.metering import EXPECTED_GAP, Fact, Ledger, MeterResult, Reading, budgets_of, reading_of
from rebalancer.budgets.trailing import TrailingUsage
from rebalancer.domain.budget import Budget, BudgetUsage, describe, reached_thresholds
from rebalancer.domain.snapshot import Snapshot

if TYPE_CHECKING:
    from rebalancer.domain.policy import Policy  # metering (Collect, Observe) runs without the policy model


class MeterRecords(Protocol):
    """The metered readings and facts, and which run announces what: rebalancer.adapters.dynamodb.metering;
    rebalancer_tools.fakes.memory_store.MemoryMeter."""

    def record(self, cluster_name: str, reading: Reading, expected_gap: timedelta) -> MeterResult: ...
    def facts(self, cluster_name: str, since: datetime, until: datetime) -> list[Fact]: ...
    def claim(self, cluster_name: str, key: str, run: str) -> bool: ...


def meter(store: MeterRecords, snapshot: Snapshot, expected_gap: timedelta = EXPECTED_GAP) -> MeterResult:
    return store.record(snapshot.cluster.ClusterName, reading_of(snapshot), expected_gap)


def metered(store: MeterRecords, cluster: str, policy: Policy, at: datetime) -> Ledger | None:
    """The use metered so far in the periods that hold `at`, per team with a budget (None: no team has one)."""
    budgets = budgets_of(policy)
    if not budgets:
        return None
    facts = store.facts(cluster, min(b.window(at).start for b in budgets.values()), at)
    return Ledger.of(facts, budgets, at)


def trailing(store: MeterRecords, cluster: str, policy: Policy, at: datetime) -> TrailingUsage | None:
    """What each team received over the fair-share window that ends at `at` (None: the policy has none)."""
    hours = policy.fairness.window_hours
    if hours is None:
        return None
    window = timedelta(hours=hours)
    return TrailingUsage.of(store.facts(cluster, at - window, at), window)


def received(store: MeterRecords, cluster: str, hours: float, at: datetime) -> dict[str, dict[str, float]]:
    """Per team and instance type, the accelerator-hours received over the `hours` that end at `at`."""
    window = timedelta(hours=hours)
    return TrailingUsage.of(store.facts(cluster, at - window, at), window).hours(at)


def period_to_date(store: MeterRecords, cluster: str, policy: Policy, at: datetime) -> dict[str, BudgetUsage]:
    """Per team with a budget: use from its period's start until `at`, from the metered facts."""
    ledger = metered(store, cluster, policy, at)
    return ledger.usage(at, policy.prices) if ledger else {}


def figures(policy: Policy, usage: Mapping[str, BudgetUsage]) -> dict[str, tuple[float, float]]:
    """Per team with a budget: % used and accelerator-hours (`usage`: what the plan read, its context's), the
    figures published as metrics at every run."""
    budgets = budgets_of(policy)
    return {team: (u.fraction(budgets[team]) * 100, u.accelerator_hours) for team, u in usage.items()
            if team in budgets}


def news(store: MeterRecords, policy: Policy, snapshot: Snapshot, usage: Mapping[str, BudgetUsage],
         run: str) -> tuple[list[str], list[str]]:
    """(thresholds newly reached this period, summaries of the periods that ended), each line claimed for `run`:
    once per cluster whatever the number of runs, and the same lines again for the same run (a retried step)."""
    cluster = snapshot.cluster.ClusterName
    budgets = budgets_of(policy)
    crossed = []
    for team, budget in budgets.items():
        used = usage.get(team)
        if used is None:
            continue
        new = [pct for pct in reached_thresholds(budget, used)
               if store.claim(cluster, f"{team}#{used.period}#{pct}", run)]
        if new:
            crossed.append(f"{team}: {describe(budget, used)}; passed {', '.join(f'{p} %' for p in new)}")
    return crossed, _ended_periods(store, cluster, policy, budgets, snapshot.taken_at, run)


def _ended_periods(store: MeterRecords, cluster: str, policy: Policy, budgets: dict[str, Budget],
                   at: datetime, run: str) -> list[str]:
    """One line per team whose previous period has not been summarised yet: checked once per kind of period
    (month or week, time zone) at the first run of a new one; a period with no metered use is not summarised."""
    previous = {team: b.window(b.window(at).start - timedelta(microseconds=1)) for team, b in budgets.items()}
    kinds = {(b.period, b.timezone, previous[t].label) for t, b in budgets.items()}
    fresh = {k for k in sorted(kinds) if store.claim(cluster, f"summary#{k[0]}#{k[1]}#{k[2]}", run)}
    due = {t: w for t, w in previous.items() if (budgets[t].period, budgets[t].timezone, w.label) in fresh}
    if not due:
        return []
    facts = store.facts(cluster, min(w.start for w in due.values()), max(w.end for w in due.values()))
    if not facts:
        return []
    ledger = Ledger.of(facts, {t: budgets[t] for t in due}, max(w.end for w in due.values()))
    usage = ledger.usage_in(due, policy.prices)
    return [f"{team}: {describe(budgets[team], usage[team])}" for team in sorted(due)]
