"""What the planner reads beyond the collected snapshot, as one value: the versions our writes left, budget use so
far in the period, the writes to the teams' quotas, how long work has waited. `rebalancer.planning.context` builds it
(one function, every caller); the engine's stability rules and the planner read it. Pure data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from rebalancer.domain.budget import BudgetUsage
from rebalancer.domain.reservation import Reservation


@dataclass(frozen=True, slots=True)
class RecentChange:
    """A write to a team's quota: in one pool, by how much (`before` → `after`), when a caller recorded it; or the
    quota as a whole (`pool` None, amounts unknown), as its LastModifiedTime tells."""

    team: str
    at: datetime
    pool: str | None = None
    before: float | None = None
    after: float | None = None


@dataclass(frozen=True, slots=True)
class PlanningContext:
    """`known_versions`: per team, the quota version our last applied write left (the key `(cluster)` for the
    scheduler config); None when nothing is recorded (every setting that differs from the policy may be a console
    edit). `budget_usage`: per team with a budget, its use so far in the period that holds the snapshot's time.
    `recent_changes`: the writes to the teams' quotas; `last_changed` the latest per team (what the cooldown
    reads). `pending_since`: per team and pool, when its oldest pending work was created (what aging reads; filled
    only for a policy that ages weights). `reservations`: the approved reservations active at the snapshot's time
    (each raises its team's guarantee in its pool to at least its amount). `unavailable_since`: by InstanceId, each
    node unavailable for now in the snapshot, its state and since when runs have seen it so (what the capacity grace
    expires on; the caller keeps it for the next run). `ended`: the reservations no longer held at the snapshot's
    time that were, each with `ended_at` its end (its until, or its cancellation, as the first run after it saw
    it): a quota that last changed while one was held goes back without the cooldown (engine.reservations)."""

    known_versions: Mapping[str, int] | None = None
    budget_usage: Mapping[str, BudgetUsage] = field(default_factory=dict)
    recent_changes: tuple[RecentChange, ...] = ()
    last_changed: Mapping[str, datetime] = field(default_factory=dict)
    pending_since: Mapping[str, Mapping[str, datetime]] = field(default_factory=dict)
    reservations: tuple[Reservation, ...] = ()
    ended: tuple[Reservation, ...] = ()
    unavailable_since: Mapping[str, tuple[str, datetime]] = field(default_factory=dict)
    # per team and instance type, accelerator-hours received over the trailing fair-share window (own and
    # borrowed); filled only for a policy with `fairness.window_hours`
    trailing_usage: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
