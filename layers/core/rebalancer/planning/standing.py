"""Where a team stands over the fair-share window (the policy's `fairness.window_hours`, else a week): per instance
type the accelerator-hours it received (own and borrowed, from the metering facts) against those it was entitled
to, its weighted share of what the teams that count received there, the figure KAI's and Run:ai's time-based
fair share act on and the one `fairness.window_hours` scales weights by (rebalancer.planning.fair_share: the same
teams count, by the same rule); and its budget. Pure: the hours come from the caller (the plan step reads them
from the table)."""

from __future__ import annotations

from collections.abc import Mapping

from rebalancer.catalog import specs as catalog
from rebalancer.domain.budget import BudgetUsage, describe
from rebalancer.domain.outlook import PoolStanding, Standing
from rebalancer.domain.policy import Policy
from rebalancer.domain.pools import holdings
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import UnknownInstanceType
from rebalancer.planning.fair_share import window_shares

WEEK_HOURS = 168.0  # without a window in the policy: a week, KAI's and Run:ai's default


def window_hours(policy: Policy) -> float:
    return policy.fairness.window_hours or WEEK_HOURS


def _accelerated(pool: str) -> bool:
    try:
        return bool(catalog.spec(pool).accelerators)
    except UnknownInstanceType:
        return False


def standings(snapshot: Snapshot, policy: Policy, received: Mapping[str, Mapping[str, float]],
              budget_usage: Mapping[str, BudgetUsage]) -> dict[str, Standing]:
    """Per team with a quota, demand, use in the window or a budget. `received`: team → instance type →
    accelerator-hours over the window that ends at the snapshot's time."""
    held: dict[str, dict[str, float]] = {}
    for q in snapshot.quotas:
        try:
            held[q.team] = holdings(q)
        except UnknownInstanceType:
            held[q.team] = {}
    teams = sorted(set(policy.teams) | set(held) | set(snapshot.demand) | set(received))
    pools = sorted({p for t in teams for p in (*held.get(t, {}), *snapshot.demand.get(t, {}), *received.get(t, {}))
                    if _accelerated(p)})
    lines: dict[str, list[PoolStanding]] = {t: [] for t in teams}
    for pool in pools:
        weights = [policy.teams[t].weight if t in policy.teams and not policy.teams[t].remove else 0.0 for t in teams]
        demand = [snapshot.demand_of(t, pool).total("accelerators") for t in teams]
        got = [received.get(t, {}).get(pool, 0.0) for t in teams]
        shares = window_shares(weights, demand, got)
        total = sum(r for r, x in zip(got, shares, strict=True) if x is not None)
        nobody = all(x is None for x in shares)
        for t, w, r, d, x in zip(teams, weights, got, demand, shares, strict=True):
            if r or d or held.get(t, {}).get(pool):
                why = None if x is not None else "weight" if w <= 0 else "unused" if nobody else "idle"
                lines[t].append(PoolStanding(pool=pool, received_hours=round(r, 1),
                                             entitled_hours=None if x is None else round(x[0] * total, 1),
                                             uncounted=why))
    hours = window_hours(policy)
    out: dict[str, Standing] = {}
    for t in teams:
        tp = policy.teams.get(t)
        budget = tp.budget if tp is not None else None
        used = budget_usage.get(t)
        text = describe(budget, used) if budget is not None and used is not None else None
        if lines[t] or text:
            out[t] = Standing(window_hours=hours, pools=tuple(lines[t]), budget=text)
    return out
