"""What the planner reads beyond the collected snapshot, as one value built by one function (`planning_context`)
that every caller uses: the plan step and `rebalancer apply` (through `app.workflow.run_plan`), `rebalancer plan`,
the simulator and the backtest. Each caller brings its own sources (the audit log and the metering table; the
simulator's and the backtest's own records), none patches the snapshot. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from rebalancer.budgets.metering import Ledger
from rebalancer.budgets.trailing import TrailingUsage
from rebalancer.domain.context import PlanningContext, RecentChange
from rebalancer.domain.policy import Policy
from rebalancer.domain.reservation import Reservation, current, ended
from rebalancer.domain.snapshot import Snapshot
from rebalancer.planning.capacity import unavailable_for_now


def planning_context(snapshot: Snapshot, policy: Policy, *, known_versions: Mapping[str, int] | None = None,
                     metered: Ledger | None = None, changes: Iterable[RecentChange] = (),
                     reservations: Iterable[Reservation] = (),
                     unavailable_seen: Mapping[str, tuple[str, datetime]] | None = None,
                     trailing: TrailingUsage | None = None) -> PlanningContext:
    """The planner's inputs for `snapshot` under `policy`. `known_versions`: taken as given (the plan step and
    `apply` pass `run_plan.known_versions_for` of the audit log's record). `metered`: the use metered so far, read
    at the snapshot's time (nothing when None). `changes`: writes the caller recorded, beside what the snapshot's
    quotas say of their last modification. `reservations`: the cluster's stored reservations; the window of each
    approved one held at the snapshot's time is kept (a pending, cancelled or past one is not honoured).
    `unavailable_seen`: the previous run's `unavailable_since` (what the store kept; nothing when None): a node still
    in the same state keeps its first-seen time. `trailing`: what each team received over the fair-share window,
    read at the snapshot's time (only for a policy with `fairness.window_hours`)."""
    mine = [r for r in reservations if r.cluster == snapshot.cluster.ClusterName]
    modified = {q.team: q.LastModifiedTime for q in snapshot.quotas}  # one quota per team: the last one listed
    recent = [RecentChange(team, at) for team, at in modified.items() if at is not None]
    last = {c.team: c.at for c in recent}
    for c in changes:
        recent.append(c)
        if c.team not in last or c.at > last[c.team]:
            last[c.team] = c.at
    return PlanningContext(
        known_versions=None if known_versions is None else dict(known_versions),
        budget_usage=metered.usage(snapshot.taken_at, policy.prices) if metered is not None else {},
        recent_changes=tuple(recent), last_changed=last,
        pending_since=_pending_since(snapshot) if policy.fairness.age_doubling_hours is not None else {},
        reservations=tuple(sorted(current(mine, snapshot.taken_at), key=lambda r: r.reservation_id)),
        ended=ended(mine, snapshot.taken_at),
        unavailable_since=_unavailable_since(snapshot, unavailable_seen or {}),
        trailing_usage=trailing.hours(snapshot.taken_at)
        if trailing is not None and policy.fairness.window_hours is not None else {})


def _pending_since(snapshot: Snapshot) -> dict[str, dict[str, datetime]]:
    out: dict[str, dict[str, datetime]] = {}
    for team, pools in snapshot.demand.items():
        since = {pool: d.oldest_pending for pool, d in pools.items() if d.oldest_pending is not None}
        if since:
            out[team] = since
    return out


def _unavailable_since(snapshot: Snapshot, seen: Mapping[str, tuple[str, datetime]]) -> dict[str, tuple[str, datetime]]:
    """First-seen times are kept by the store rather than read from ListClusterEvents: an event's state is free
    text (Description), and the store's record needs no permission beyond the table. A node whose state changed
    starts again; a time after the snapshot's (a clock that went back) is not trusted."""
    out: dict[str, tuple[str, datetime]] = {}
    for node, state in unavailable_for_now(snapshot).items():
        before = seen.get(node)
        kept = before is not None and before[0] == state and before[1] <= snapshot.taken_at
        out[node] = (state, before[1] if before is not None and kept else snapshot.taken_at)
    return out
