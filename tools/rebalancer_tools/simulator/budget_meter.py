"""Use metered in memory as production meters it, for the simulator and the backtest: each snapshot's reading
(what each team runs, own up to its quota, borrowed above it: `reading_of`, as the collect step takes it), one fact
per interval between readings, and what the plan step reads from the facts: the ledger of period-to-date budget use
(`rebalancer.budgets.metering.Ledger`) and the use over the fair-share window
(`rebalancer.budgets.trailing.TrailingUsage`), both given to `planning_context`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from rebalancer.budgets.metering import Ledger, Reading, budget_usage, budgets_of, fact_between, reading_of
from rebalancer.budgets.trailing import TrailingUsage
from rebalancer.domain.budget import BudgetUsage
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot


class BudgetMeter:
    def __init__(self, policy: Policy) -> None:
        self.prices = policy.prices
        self.budgets = budgets_of(policy)
        self.ledger = Ledger(self.budgets)
        window = policy.fairness.window_hours
        self.trailing = TrailingUsage(timedelta(hours=window)) if window is not None else None
        self._last: Reading | None = None

    @property
    def active(self) -> bool:
        """Whether the plans read anything metered: a budget, or fair share over a window."""
        return bool(self.budgets) or self.trailing is not None

    def meter(self, snapshot: Snapshot) -> Ledger:
        """The ledger (and the trailing use) with the interval since the previous snapshot added (nothing for the
        first, or for one that is not later)."""
        reading = reading_of(snapshot)
        fact = fact_between(self._last, reading) if self._last is not None else None
        self._last = reading
        if fact is not None:
            self.ledger.add(fact)
            if self.trailing is not None:
                self.trailing.add(fact)
        return self.ledger

    def exhausted(self, usage: Mapping[str, BudgetUsage]) -> frozenset[str]:
        """The teams that have used up their budget: the only way budget use changes what a plan writes."""
        return frozenset(t for t, u in usage.items() if t in self.budgets and u.fraction(self.budgets[t]) >= 1)

    def report(self) -> dict[str, dict[str, dict[str, float]]]:
        """team → period → accelerator-hours used and % of the budget."""
        out: dict[str, dict[str, dict[str, float]]] = {}
        for (team, label), by_type in sorted(self.ledger.used.items()):
            u = budget_usage(by_type, self.budgets[team], label, self.prices)
            out.setdefault(team, {})[label] = {"hours": round(u.accelerator_hours, 1),
                                               "percent": round(u.fraction(self.budgets[team]) * 100, 1)}
        return out
