"""Weighted max-min fairness by progressive filling, each step a linear program solved by HiGHS.

An independent reference for the allocation engine's steps 1-3: it shares no code with it, only the definition.
Round by round, maximise the common level t with a_i ≥ t·w_i for every team not yet frozen; then freeze each team
whose allocation cannot rise above max(f_i, t·w_i) without pulling another below the level (one more LP per team).
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _bounds(n: int, floors: Sequence[float], ceilings: Sequence[float],
            frozen: dict[int, float]) -> list[tuple[float, float | None]]:
    out: list[tuple[float, float | None]] = []
    for i in range(n):
        if i in frozen:
            out.append((frozen[i], frozen[i]))
        else:
            out.append((floors[i], None if math.isinf(ceilings[i]) else ceilings[i]))
    return out


def progressive_fill(capacity: float, weights: Sequence[float], floors: Sequence[float],
                     ceilings: Sequence[float]) -> list[float]:
    # scipy takes ~0.6 s to import: paid by the test that solves, not by every pytest worker's collection
    import numpy as np
    from scipy.optimize import linprog

    n = len(weights)
    frozen = {i: floors[i] for i in range(n) if weights[i] == 0}
    while len(frozen) < n:
        live = [i for i in range(n) if i not in frozen]
        # Variables a_0..a_{n-1}, t. Maximise t.
        a_ub = [[1.0] * n + [0.0]]
        b_ub = [capacity]
        for i in live:
            row = [0.0] * (n + 1)
            row[i], row[n] = -1.0, weights[i]
            a_ub.append(row)
            b_ub.append(0.0)
        cost = [0.0] * n + [-1.0]
        res = linprog(cost, A_ub=np.array(a_ub), b_ub=b_ub, bounds=[*_bounds(n, floors, ceilings, frozen),
                                                                    (0, None)], method="highs")
        assert res.status == 0, res.message
        level = float(res.x[n])
        newly = {}
        for i in live:
            need = max(floors[i], level * weights[i])
            cost_i = [0.0] * (n + 1)
            cost_i[i] = -1.0
            bounds = [*_bounds(n, floors, ceilings, frozen), (level, level)]
            r = linprog(cost_i, A_ub=np.array(a_ub), b_ub=b_ub, bounds=bounds, method="highs")
            assert r.status == 0, r.message
            if -r.fun <= need + 1e-7:
                newly[i] = min(need, ceilings[i])
        if not newly:  # numerical stalemate: everyone is at the level
            newly = {i: min(max(floors[i], level * weights[i]), ceilings[i]) for i in live}
        frozen.update(newly)
    return [frozen[i] for i in range(n)]


def reference_shares(capacity: float, weights: Sequence[float], guarantees: Sequence[float],
                     demands: Sequence[float], caps: Sequence[float], surplus: str) -> list[float]:
    """DESIGN.md steps 1-3 from their definition."""
    total = sum(guarantees)
    floors = [g * capacity / total for g in guarantees] if total > capacity else list(guarantees)
    ceilings = [max(f, min(d, c)) for f, d, c in zip(floors, demands, caps, strict=True)]
    if sum(ceilings) <= capacity:
        shares = [c if w > 0 else f for c, f, w in zip(ceilings, floors, weights, strict=True)]
    else:
        shares = progressive_fill(capacity, weights, floors, ceilings)
    if surplus == "spread" and sum(shares) < capacity - 1e-9:
        shares = progressive_fill(capacity, weights, shares, [max(s, c) for s, c in zip(shares, caps, strict=True)])
    return shares
