"""Time-aware fairness: a team's weight in a pool grows with how long its oldest pending work there has waited
(`fairness.age_doubling_hours` in the policy). Pure: the age comes from the planning context
(`PlanningContext.pending_since`: the creation time of the oldest pending Kueue workload, which collect reads into
`Demand.oldest_pending`), measured at the snapshot's time."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime


def aged_weights(weights: Sequence[float], pending_since: Sequence[datetime | None], taken_at: datetime,
                 doubling_hours: float) -> tuple[tuple[float, ...], tuple[str | None, ...]]:
    """Per team, weight × (1 + age / doubling) in one pool, and the note that explains it (None when unchanged).
    `pending_since`: per team, when its oldest pending work there was created. A team with nothing pending there
    keeps its weight; an age below zero (clock skew) counts as zero."""
    out: list[float] = []
    notes: list[str | None] = []
    for w, since in zip(weights, pending_since, strict=True):
        hours = max(0.0, (taken_at - since).total_seconds() / 3600) if since is not None else 0.0
        factor = 1 + hours / doubling_hours
        out.append(w * factor)
        notes.append(f"weight {w:g} × {factor:.2f}: oldest pending work waited {hours:.1f} h "
                     f"(doubles every {doubling_hours:g} h)" if hours > 0 and w > 0 else None)
    return tuple(out), tuple(notes)
