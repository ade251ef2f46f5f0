"""Step 4 of the allocation, integers, and the proportional cuts the stability rules make with the same rounding.

Accelerators, vCPUs and MIG partitions are whole units: a continuous allocation becomes integers by largest
remainder, deterministically (ties: larger weight first, then the name that sorts first), never above a team's
upper bound, each within one unit of its continuous value. Like every quota method, largest remainder can show the
Alabama paradox: one more unit of capacity may move a single unit between two teams with equal claims.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

EPS = 1e-9  # amounts closer than this are equal: what the water-fill's floating point leaves over


def largest_remainder(values: Sequence[float], total: int, uppers: Sequence[float], weights: Sequence[float],
                      names: Sequence[str]) -> list[int]:
    """Integers within one unit of `values`, summing to at most `total`, never above `uppers`.

    Each value is rounded down, then the units left go to the largest fractional parts; ties go to the larger
    weight, then to the name that sorts first, so the result never depends on input order.
    """
    floor = math.floor
    base = [floor(v + EPS) for v in values]
    left = total - sum(base)
    if left <= 0:
        return base
    # Sort keys as tuples built in one pass (no key function per element); the index last keeps equal keys in
    # input order, as a stable sort on (fraction, weight, name) would.
    order = sorted([(b - v, -weights[i], names[i], i) for i, (v, b) in enumerate(zip(values, base, strict=True))
                    if v - b > EPS and b + 1 <= uppers[i] + EPS])
    for row in order[:left]:
        base[row[3]] += 1
    return base


def cut(values: list[int], room: Sequence[int], amount: int, weights: Sequence[float], names: Sequence[str]) -> int:
    """Take up to `amount` units from `values`, from each at most `room[i]`, proportionally to room. Returns the
    amount taken. Deterministic: the proportional part rounds down, the rest goes by largest room, then name."""
    total_room = sum(room)
    if amount <= 0 or total_room <= 0:
        return 0
    amount = min(amount, total_room)
    shares = [r * amount / total_room for r in room]
    takes = largest_remainder(shares, amount, room, weights, names)
    for i, t in enumerate(takes):
        values[i] -= t
    return sum(takes)
