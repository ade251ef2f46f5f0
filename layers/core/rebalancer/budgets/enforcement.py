"""Budgets in the plan: a team that has used up its budget plans with a lower ceiling (`guarantee_only`) or without
borrowing (`no_borrowing`), and every change of a team past its first notification threshold says how much of
the budget is used. Pure: the period-to-date use comes in the planning context
(`rebalancer.domain.context.PlanningContext.budget_usage`). The plan applies it as the first of its holds
(rebalancer.engine.stability, "budget caps"), which also puts the notes on the changes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from rebalancer.catalog import specs as catalog
from rebalancer.domain.budget import Budget, BudgetUsage, describe
from rebalancer.domain.policy import Amount, Policy, Sharing, TeamPolicy, family_types
from rebalancer.domain.pools import PoolKey
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import UnknownInstanceType

LEND_ONLY = Sharing(strategy="Lend")


@dataclass(frozen=True, slots=True)
class Enforced:
    policy: Policy
    notes: Mapping[str, str] = field(default_factory=dict)  # team → "budget 92 % used (…)"
    warnings: tuple[str, ...] = ()
    # team held at its guarantee → when its period ends
    held_until: Mapping[str, datetime] = field(default_factory=dict)


def _in_scope(budget: Budget, key: str) -> bool:
    """Whether a guarantee/cap key (type, family or MIG pool) lies in the budget's scope."""
    members = family_types(key)
    if members:
        return any(budget.covers(t) for t in members)
    return budget.covers(PoolKey.parse(key).instance_type)


def _guarantee_only(team: TeamPolicy, budget: Budget, snapshot: Snapshot) -> TeamPolicy:
    """Caps at the guarantee on every key in scope; every other accelerator type in scope capped at 0."""
    cap = dict(team.cap)
    zero = Amount(value=0)
    for key in {*team.guarantee, *team.cap}:
        if _in_scope(budget, key):
            cap[key] = team.guarantee.get(key, zero)
    named = {PoolKey.parse(k).instance_type for k in cap if not family_types(k)}
    named |= {t for k in cap for t in family_types(k)}
    for itype in snapshot.instance_types():
        try:
            accelerated = bool(catalog.spec(itype).accelerators)
        except UnknownInstanceType:
            continue
        if accelerated and budget.covers(itype) and itype not in named:
            cap[itype] = zero
    return team.model_copy(update={"cap": cap})


def enforce(policy: Policy, snapshot: Snapshot, usage: Mapping[str, BudgetUsage]) -> Enforced:
    """`usage`: per team with a budget, its use so far in the period."""
    teams = dict(policy.teams)
    notes: dict[str, str] = {}
    warnings: list[str] = []
    held_until: dict[str, datetime] = {}
    for name, team in sorted(policy.teams.items()):
        budget, used = team.budget, usage.get(name)
        if budget is None or used is None or team.remove:
            continue
        if used.unpriced:
            warnings.append(f"{name}: budget in money, but no price for {', '.join(used.unpriced)} "
                            "(add them to the policy's prices); that use is not costed")
        fraction = used.fraction(budget)
        if budget.notify_at and fraction * 100 + 1e-9 >= budget.notify_at[0]:
            notes[name] = describe(budget, used)
        if fraction < 1:
            continue
        notes.setdefault(name, describe(budget, used))  # past 100 % it is said even with `notify_at: []`
        if budget.on_exhausted == "guarantee_only":
            teams[name] = _guarantee_only(team, budget, snapshot)
            notes[name] += ": quota held at its guarantee"
            held_until[name] = budget.window(snapshot.taken_at).end
        elif budget.on_exhausted == "no_borrowing":
            teams[name] = team.model_copy(update={"sharing": LEND_ONLY})
            notes[name] += ": no borrowing until the period ends"
        warnings.append(f"{name}: {notes[name]}")
    return Enforced(policy.model_copy(update={"teams": teams}), notes, tuple(warnings), held_until)


def usage_lines(policy: Policy, usage: dict[str, BudgetUsage]) -> list[str]:
    """One line per team with a budget: for the monthly summary and the CLI."""
    out = []
    for name, team in sorted(policy.teams.items()):
        if team.budget is not None and name in usage:
            out.append(f"{name}: {describe(team.budget, usage[name])}")
    return out
