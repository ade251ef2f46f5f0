"""Weighted max-min fairness by progressive filling, each step a linear program solved by HiGHS, through its own
bindings (highspy: 0.2 s to import on the dev box, where numpy + scipy.optimize's linprog took 0.75 s).

An independent reference for the allocation engine's steps 1-3: it shares no code with it, only the definition.
Round by round, maximise the common level t with a_i ≥ t·w_i for every team not yet frozen; then freeze each team
whose allocation cannot rise above max(f_i, t·w_i) without pulling another below the level (one more LP per team).
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _solve(cost: Sequence[float], a_ub: Sequence[Sequence[float]], b_ub: Sequence[float],
             bounds: Sequence[tuple[float, float | None]]) -> tuple[list[float], float]:
    """Minimise cost·x subject to a_ub·x ≤ b_ub and the bounds: an optimal x and cost·x (as linprog(method="highs"))."""
    import highspy
    import numpy as np

    inf = highspy.kHighsInf
    a = np.asarray(a_ub, dtype=float)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(cost), len(b_ub)
    lp.col_cost_ = np.asarray(cost, dtype=float)
    lp.col_lower_ = np.array([lo for lo, _ in bounds], dtype=float)
    lp.col_upper_ = np.array([inf if hi is None else hi for _, hi in bounds], dtype=float)
    lp.row_lower_ = np.full(len(b_ub), -inf)
    lp.row_upper_ = np.asarray(b_ub, dtype=float)
    rows, cols = np.nonzero(a)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = np.searchsorted(rows, np.arange(len(b_ub) + 1)).astype(np.int32)
    lp.a_matrix_.index_ = cols.astype(np.int32)
    lp.a_matrix_.value_ = a[rows, cols]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    assert status == highspy.HighsModelStatus.kOptimal, h.modelStatusToString(status)
    return list(h.getSolution().col_value), h.getInfo().objective_function_value


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
        x, _ = _solve(cost, a_ub, b_ub, [*_bounds(n, floors, ceilings, frozen), (0, None)])
        level = float(x[n])
        newly = {}
        for i in live:
            need = max(floors[i], level * weights[i])
            cost_i = [0.0] * (n + 1)
            cost_i[i] = -1.0
            bounds = [*_bounds(n, floors, ceilings, frozen), (level, level)]
            _, fun = _solve(cost_i, a_ub, b_ub, bounds)
            if -fun <= need + 1e-7:
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


# ---------------------------------------------------------------- several pools and family caps


def progressive_fill_rows(weights: Sequence[float], floors: Sequence[float], ceilings: Sequence[float],
                          rows: Sequence[tuple[Sequence[int], float]]) -> list[float]:
    """Progressive filling over variables a_v with rows Σ_{v∈row} a_v ≤ bound (pool capacities, family caps),
    each a_v between its floor and ceiling; a weight-0 variable keeps its floor. The single-pool progressive_fill
    is the case of one row over every variable."""
    import numpy as np

    n = len(weights)
    a_ub = np.zeros((len(rows), n + 1))
    b_ub = []
    for r, (members, bound) in enumerate(rows):
        a_ub[r, list(members)] = 1.0
        # A row whose floors exceed it (a team's guarantees above its family cap) binds at the floors.
        b_ub.append(max(bound, sum(floors[v] for v in members)))
    frozen = {v: floors[v] for v in range(n) if weights[v] == 0}
    while len(frozen) < n:
        live = [v for v in range(n) if v not in frozen]
        level_rows = np.zeros((len(live), n + 1))
        for k, v in enumerate(live):
            level_rows[k, v], level_rows[k, n] = -1.0, weights[v]
        a_all = np.vstack([a_ub, level_rows])
        b_all = [*b_ub, *([0.0] * len(live))]
        cost = np.zeros(n + 1)
        cost[n] = -1.0
        bounds = [*_bounds(n, floors, ceilings, frozen), (0, None)]
        x, _ = _solve(cost, a_all, b_all, bounds)  # every variable lies in a pool's row: bounded
        level = float(x[n])
        newly = {}
        for v in live:
            need = max(floors[v], level * weights[v])
            cost_v = np.zeros(n + 1)
            cost_v[v] = -1.0
            _, fun = _solve(cost_v, a_all, b_all, [*bounds[:n], (level, level)])
            if -fun <= need + 1e-7:
                newly[v] = min(need, ceilings[v])
        if not newly:
            newly = {v: min(max(floors[v], level * weights[v]), ceilings[v]) for v in live}
        frozen.update(newly)
    return [frozen[v] for v in range(n)]


def reference_coupled(pools: Sequence[tuple[float, Sequence[float], Sequence[float], Sequence[float],
                                            Sequence[float]]],
                      families: Sequence[tuple[float, Sequence[tuple[int, int]]]], surplus: str) -> list[list[float]]:
    """Steps 1-3 over several pools with family caps, from the definition. `pools`: (capacity, weights, guarantees,
    demands, caps) per pool; `families`: (cap, [(pool, team index)]) each. A team's weight is that of its claim."""
    var: list[tuple[int, int]] = [(p, i) for p, pool in enumerate(pools) for i in range(len(pool[1]))]
    at = {pi: v for v, pi in enumerate(var)}
    weights, floors, ceilings, caps = [], [], [], []
    rows: list[tuple[list[int], float]] = []
    for p, (capacity, ws, gs, ds, cs) in enumerate(pools):
        total = sum(gs)
        fl = [g * capacity / total for g in gs] if total > capacity else list(gs)
        for w, f, d, c in zip(ws, fl, ds, cs, strict=True):
            weights.append(w)
            floors.append(f)
            ceilings.append(max(f, min(d, c)) if w > 0 else f)
            caps.append(c)
        rows.append(([at[p, i] for i in range(len(ws))], capacity))
    rows += [([at[pair] for pair in pairs], cap) for cap, pairs in families]
    shares = progressive_fill_rows(weights, floors, ceilings, rows)
    if surplus == "spread":
        shares = progressive_fill_rows(weights, shares, [max(s, c) for s, c in zip(shares, caps, strict=True)], rows)
    return [[shares[at[p, i]] for i in range(len(pool[1]))] for p, pool in enumerate(pools)]
