"""Quota in gang-sized steps (`fairness.gang_steps`). Kueue admits a workload whole or not at all, so quota between
two of a team's useful amounts — what it runs, plus its pending workloads one after the other in admission order —
starts nothing: the team waits for a whole gang's worth while the others borrow the difference. Given the
continuous allocation of steps 1-3, each team whose share lies strictly between two such amounts (its *levels*) is
moved to one of them: up to the next level, so that the next gang can start, when that is the nearer one and the
others can give the difference above their floors; down to the level below (never below its guarantee) otherwise,
the rest of its share left with the others this run. The engine (rebalancer.engine.allocation) water-fills what
the stepped teams leave among the others, by the same definition as step 2. Pure.

Guarantees and caps stay exact: a stepped amount is at least the team's floor and at most its ceiling
(min(demand, cap)); a level above the ceiling is never chosen."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rebalancer.engine.rounding import EPS


@dataclass(frozen=True, slots=True)
class Step:
    """A team moved to one of its levels: `amount`, the level above (`upper`, None when it cannot be reached) and
    the next pending workload's size, for the reason."""

    amount: float
    share: float
    upper: float | None
    gang: float


def levels(in_use: float, gangs: Sequence[float]) -> list[float]:
    """What the team runs, then that plus each pending workload in turn (the amounts at which one more starts)."""
    out = [in_use]
    for g in gangs:
        if g > EPS:
            out.append(out[-1] + g)
    return out


def _bracket(share: float, ladder: Sequence[float]) -> tuple[float, float, float] | None:
    """(level below, level above, the gang between) when `share` lies strictly between two levels, else None."""
    for below, above in itertools.pairwise(ladder):
        if below + EPS < share < above - EPS:
            return below, above, above - below
    return None


def steps(capacity: float, shares: Sequence[float], floors: Sequence[float], ceilings: Sequence[float],
          in_use: Sequence[float], gangs: Sequence[Sequence[float]], teams: Sequence[str],
          taken: Mapping[int, float] | None = None) -> dict[int, Step]:
    """The teams (by index) whose amounts move to a level, and where (`taken`: teams already stepped, with their
    amounts). Every other team keeps at least its floor: raising a team to its next level takes only what the
    others hold above their floors, nearest levels first (ties by team name)."""
    taken = taken or {}
    stepped: dict[int, tuple[float, float, float]] = {}
    for i, (share, used, pending) in enumerate(zip(shares, in_use, gangs, strict=True)):
        if pending and i not in taken:
            found = _bracket(share, levels(used, pending))
            if found is not None:
                stepped[i] = found
    if not stepped:
        return {}
    amount = {i: max(below, floors[i]) for i, (below, _, _) in stepped.items()}
    slack = (capacity - sum(amount.values()) - sum(taken.values())
             - sum(f for i, f in enumerate(floors) if i not in stepped and i not in taken))
    out: dict[int, Step] = {}
    nearest = sorted(stepped, key=lambda i: (stepped[i][1] - shares[i], teams[i]))
    for i in nearest:
        _, above, gang = stepped[i]
        reachable = above <= ceilings[i] + EPS
        if reachable and above - shares[i] <= shares[i] - amount[i] + EPS and above - amount[i] <= slack + EPS:
            slack -= above - amount[i]
            amount[i] = above
        out[i] = Step(amount[i], shares[i], above if reachable else None, gang)
    return out


def take_leftover(stepped: dict[int, Step], leftover: float, teams: Sequence[str]) -> dict[int, Step]:
    """What the others could not use goes back to the teams stepped down, nearest levels first: up to the next
    level when it fits, else back towards their share (nobody else wants it this run)."""
    out = dict(stepped)
    for i in sorted(out, key=lambda i: ((out[i].upper or 0.0) - out[i].share, teams[i])):
        if leftover <= EPS:
            break
        s = out[i]
        if s.amount >= s.share - EPS:
            continue
        target = s.upper if s.upper is not None and s.upper - s.amount <= leftover + EPS else s.share
        raised = min(target, s.amount + leftover)
        leftover -= raised - s.amount
        out[i] = Step(raised, s.share, s.upper, s.gang)
    return out


def note(step: Step) -> str:
    """The reason's fact about a stepped team."""
    gang = f"{step.gang:g}"
    if step.amount >= step.share - EPS:
        return f"gang steps: share {step.share:.1f} raised to {step.amount:g} so that its next pending workload " \
               f"({gang}) can start"
    return f"gang steps: share {step.share:.1f} is short of its next pending workload ({gang} beyond " \
           f"{step.amount:g}); the rest left with the others this run"
