"""Time-based fair share (`fairness.window_hours`): a team's weight in a pool is scaled by how much of the pool's
accelerator-hours it received over the trailing window against its weighted share of them, so that a team served
less than its share for days is served ahead of the others until the window evens out, and one served more yields.
The form is Slurm's and KAI's (a usage factor on the weight), not a carried deficit: the metering facts record what
each team received, not what it was entitled to, and a deficit would need every past run's entitlement.

Among the pool's teams that count (a weight above 0, and demand now or use in the window), with s its share of
their weights and u its share of their received hours, the factor is, by `fairness.window_form`:
- "exponential" (the default): 2 ** (STRENGTH × (1 − u / s)): 1 for a team at its share, at most 2 for one that
  received nothing;
- "kai": KAI's time-aware fair share, P = max(s + k·(s − U), 0) normalised so that the P of the teams that count
  sum to 1, with U the hours the team received ÷ the pool's accelerator-hours over the window (its capacity × the
  window: a team is not penalised for using capacity nobody else wanted) and k `fairness.window_k`; the factor is
  P ÷ s, 1 + k for a team that received nothing while the others took the pool.
Both are bounded to [1 / BOUND, BOUND], so that no past use shuts a team out of a pool. Pure: the use comes from
the planning context (`PlanningContext.trailing_usage`). Guarantees and caps are the claim's and stay as they are:
only weights change."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

STRENGTH = 1.0
BOUND = 8.0
Form = Literal["exponential", "kai"]


def window_shares(weights: Sequence[float], demand: Sequence[float],
                  received: Sequence[float]) -> list[tuple[float, float] | None]:
    """Per team, (s, u): its share of the weights and of the hours received among the teams that count (None for
    one that does not count, or for every team while nobody that counts used the pool)."""
    counts = [w > 0 and (d > 0 or r > 0) for w, d, r in zip(weights, demand, received, strict=True)]
    total_w = sum(w for w, c in zip(weights, counts, strict=True) if c)
    total_r = sum(r for r, c in zip(received, counts, strict=True) if c)
    if total_r <= 0 or total_w <= 0:
        return [None] * len(weights)
    return [(w / total_w, r / total_r) if c else None for w, r, c in zip(weights, received, counts, strict=True)]


def _factors(shares: Sequence[tuple[float, float] | None], received: Sequence[float], form: Form, k: float,
             pool_hours: float) -> list[float | None]:
    if form == "exponential":
        return [None if x is None else 2 ** (STRENGTH * (1 - x[1] / x[0])) for x in shares]
    if pool_hours <= 0:
        return [None] * len(shares)
    portions = [None if x is None else max(x[0] + k * (x[0] - r / pool_hours), 0.0)
                for x, r in zip(shares, received, strict=True)]
    total = sum(p for p in portions if p is not None)
    if total <= 0:
        return [None] * len(shares)
    return [None if p is None or x is None else p / total / x[0] for p, x in zip(portions, shares, strict=True)]


def windowed_weights(weights: Sequence[float], demand: Sequence[float], received: Sequence[float],
                     window_hours: float, *, form: Form = "exponential", k: float = 1.0,
                     capacity: float = 0.0) -> tuple[tuple[float, ...], tuple[str | None, ...]]:
    """Per team, its weight scaled by its use of the pool over the window (`received`: accelerator-hours), and the
    note that explains it (None when unchanged). Nothing changes while nobody that counts used the pool.
    `capacity`: the pool's accelerators, whose hours over the window the "kai" form normalises use by."""
    shares = window_shares(weights, demand, received)
    factors = _factors(shares, received, form, k, capacity * window_hours)
    out: list[float] = []
    notes: list[str | None] = []
    for w, x, f in zip(weights, shares, factors, strict=True):
        if x is None or f is None:
            out.append(w)
            notes.append(None)
            continue
        factor = min(BOUND, max(1 / BOUND, f))
        out.append(w * factor)
        notes.append(f"weight {w:g} × {factor:.2f}: received {x[1]:.0%} of this pool's accelerator-hours over the "
                     f"last {window_hours:g} h against a {x[0]:.0%} share" if abs(factor - 1) >= 0.005 else None)
    return tuple(out), tuple(notes)
