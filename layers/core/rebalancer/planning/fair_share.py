"""Time-based fair share (`fairness.window_hours`): a team's weight in a pool is scaled by how much of the pool's
accelerator-hours it received over the trailing window against its weighted share of them, so that a team served
less than its share for days is served ahead of the others until the window evens out, and one served more yields.
The form is Slurm's and KAI's (a usage factor on the weight), not a carried deficit: the metering facts record what
each team received, not what it was entitled to, and a deficit would need every past run's entitlement.

Among the pool's teams that count (a weight above 0, and demand now or use in the window), with s its share of
their weights and u its share of their received hours, the factor is 2 ** (STRENGTH × (1 − u / s)), bounded to
[1 / BOUND, BOUND]: 1 for a team at its share, above 1 below it. Pure: the use comes from the planning context
(`PlanningContext.trailing_usage`). Guarantees and caps are the claim's and stay as they are: only weights change."""

from __future__ import annotations

from collections.abc import Sequence

STRENGTH = 1.0
BOUND = 8.0


def windowed_weights(weights: Sequence[float], demand: Sequence[float], received: Sequence[float],
                     window_hours: float) -> tuple[tuple[float, ...], tuple[str | None, ...]]:
    """Per team, its weight scaled by its use of the pool over the window (`received`: accelerator-hours), and the
    note that explains it (None when unchanged). Nothing changes while nobody that counts used the pool."""
    counts = [w > 0 and (d > 0 or r > 0) for w, d, r in zip(weights, demand, received, strict=True)]
    total_w = sum(w for w, c in zip(weights, counts, strict=True) if c)
    total_r = sum(r for r, c in zip(received, counts, strict=True) if c)
    if total_r <= 0 or total_w <= 0:
        return tuple(weights), (None,) * len(weights)
    out: list[float] = []
    notes: list[str | None] = []
    for w, r, c in zip(weights, received, counts, strict=True):
        if not c:
            out.append(w)
            notes.append(None)
            continue
        share, used = w / total_w, r / total_r
        factor = min(BOUND, max(1 / BOUND, 2 ** (STRENGTH * (1 - used / share))))
        out.append(w * factor)
        notes.append(f"weight {w:g} × {factor:.2f}: received {used:.0%} of this pool's accelerator-hours over the "
                     f"last {window_hours:g} h against a {share:.0%} share" if abs(factor - 1) >= 0.005 else None)
    return tuple(out), tuple(notes)
