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
from dataclasses import dataclass, replace

from rebalancer.engine.rounding import EPS


@dataclass(frozen=True, slots=True)
class Step:
    """A team moved off its share: `amount`, its levels (`ladder`) and its ceiling, and the next pending workload's
    size at its share (`gang`) for the reason."""

    amount: float
    share: float
    upper: float | None  # the level above its share, None when above its ceiling
    gang: float
    ladder: tuple[float, ...]
    ceiling: float

    def next_level(self) -> float | None:
        """The level above its amount when within its ceiling."""
        above = next((level for level in self.ladder if level > self.amount + EPS), None)
        return above if above is not None and above <= self.ceiling + EPS else None

    def at_level(self) -> bool:
        return any(abs(level - self.amount) <= EPS for level in self.ladder)


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
    ladders: dict[int, tuple[float, ...]] = {}
    for i, (share, used, pending) in enumerate(zip(shares, in_use, gangs, strict=True)):
        if pending and i not in taken:
            ladder = tuple(levels(used, pending))
            found = _bracket(share, ladder)
            if found is not None:
                stepped[i], ladders[i] = found, ladder
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
        out[i] = Step(amount[i], shares[i], above if reachable else None, gang, ladders[i], ceilings[i])
    return out


def take_leftover(stepped: dict[int, Step], leftover: float, teams: Sequence[str]) -> dict[int, Step]:
    """What the others could not use goes to the stepped teams: a level at a time to the team furthest below its
    share whose next level fits (ties by name), then, when no level fits, towards their ceilings in that order."""
    out = dict(stepped)
    while leftover > EPS:
        best: tuple[tuple[float, str], int, float] | None = None
        for i, s in out.items():
            above = s.next_level()
            if above is not None and above - s.amount <= leftover + EPS:
                key = (s.amount - s.share, teams[i])
                if best is None or key < best[0]:
                    best = (key, i, above)
        if best is None:
            break
        _, i, above = best
        leftover -= above - out[i].amount
        out[i] = replace(out[i], amount=above)
    for i in sorted(out, key=lambda i: (out[i].amount - out[i].share, teams[i])):
        if leftover <= EPS:
            break
        raised = min(out[i].ceiling, out[i].amount + leftover)
        if raised > out[i].amount + EPS:
            leftover -= raised - out[i].amount
            out[i] = replace(out[i], amount=raised)
    return out


def note(step: Step) -> str:
    """The reason's fact about a stepped team."""
    share, amount = f"{step.share:.1f}", f"{step.amount:g}"
    if not step.at_level():
        return f"gang steps: share {share} → {amount}, what the others could not use"
    if step.amount > step.share:
        return f"gang steps: share {share} raised to {amount}: what it runs plus whole pending workloads"
    return f"gang steps: share {share} is short of its next pending workload ({step.gang:g} beyond {amount}); " \
           "the rest left with the others this run"
