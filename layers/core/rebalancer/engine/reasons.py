"""A change's reason, built in one place: "wants W because …; gets A because …", then the facts its pool and team
bring (capacity notes, family caps, gang steps, aging, budgets, reservations).

Every figure the two clauses state is the row's own: W the amount the policy wants (after rounding, before the
holds), A what the plan gives, the demand (what runs plus what waits, rounded up) and what runs, the continuous
share and the weights, guarantee, cap and capacity it was computed from, and the hold's own parameters
(tests/unit/planning/test_reason_figures.py checks each against the plan). Pure: numbers in, words out.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from rebalancer.domain.plan import Hold
from rebalancer.engine.rounding import EPS

INF = float("inf")


@functools.lru_cache(maxsize=4096)  # a 1,000-team plan states ~12k figures, a few hundred distinct ones
def figure(x: float) -> str:
    """An amount as reasons state it: whole numbers without a point, others to one decimal (`9.6`)."""
    if x == INF:
        return "∞"
    rounded = round(x, 1)
    return str(int(rounded)) if rounded == int(rounded) else f"{rounded:.1f}"


def _load(demand: float, running: float) -> str:
    return f"demand {figure(demand)}, {figure(running)} running" if demand or running else "no demand"


def wants(wanted: float, *, share: float, demand: float, running: float, weight: float, weight_total: float,
          guarantee: float, factor: float, cap: float, capacity: float, spread: bool, guaranteed: float = 0.0) -> str:
    """Why the policy wants `wanted`: the bound its continuous `share` sits at (steps 1-3 of the engine,
    rebalancer.engine.allocation): its demand, its cap, its guarantee (scaled by `factor` when guarantees exceed
    the pool), the pool's guarantees taking all of it (`guaranteed`: their sum, scaled), its weighted share of the
    pool's `capacity`, or the surplus spread by weight."""
    floor = guarantee * factor
    ceiling = max(floor, min(demand, cap)) if weight > 0 else floor
    load = _load(demand, running)
    pledged = f"guarantee {figure(guarantee)}" + (f" scaled to {figure(floor)}" if factor < 1 - EPS else "")
    weighted = f"weight {figure(weight)} of {figure(weight_total)}"
    if weight <= 0:
        basis = f"{pledged} at weight 0 ({load})" if guarantee else f"weight 0 ({load})"
    elif spread and share > ceiling + EPS:
        basis = f"surplus spread by {weighted}: share {figure(share)} ({load})"
    elif abs(share - ceiling) <= EPS:
        if floor > 0 and abs(ceiling - floor) <= EPS and floor >= min(demand, cap) - EPS:
            basis = f"{pledged} ({load})"
        elif cap < demand - EPS:
            basis = f"cap {figure(cap)} ({load})"
        else:
            basis = f"demand {figure(demand)} ({figure(running)} running)" if demand or running else "no demand"
    elif abs(share - floor) <= EPS and guaranteed >= capacity - EPS:
        full = f"guarantees take {figure(guaranteed)} of {figure(capacity)}"
        basis = f"{pledged}: {full} ({load})" if floor > 0 else f"{full} ({load})"
    elif floor > 0 and abs(share - floor) <= EPS:
        basis = f"{pledged}: its share by {weighted} is less ({load})"
    else:
        basis = f"share {figure(share)} of {figure(capacity)} by {weighted} ({load})"
    return f"wants {figure(wanted)} because {basis}"


def gets(after: float, hold: Hold | None) -> str:
    """What the plan gives instead, and the hold that keeps it there."""
    return f"gets {figure(after)} because {hold.text}" if hold is not None else f"gets {figure(after)}"


def reason(wanted_clause: str, after: float, wanted: float, hold: Hold | None, facts: Iterable[str] = ()) -> str:
    """The whole reason: the wants clause, the gets clause when the plan gives other than what is wanted, then
    the facts (a change that reclaims running work says so whether or not it gets what it wants)."""
    parts = [wanted_clause]
    if hold is not None and abs(after - wanted) > EPS:
        parts.append(gets(after, hold))
    elif abs(after - wanted) > EPS:
        parts.append(gets(after, None))
    elif hold is not None and hold.rule == "reclaim":
        parts.append(hold.text)
    parts.extend(f for f in facts if f)
    return "; ".join(parts)
