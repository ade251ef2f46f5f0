"""Whether a plan can still be written as it was made, and whether a plan made again stays within what was
approved. Pure: two bases (rebalancer.domain.basis), the plans, a time.

A plan is stale when it is older than `approval.max_plan_age_minutes`, when the healthy capacity of a pool (or the
autoscaler's reach) fell, when a quota or the scheduler config moved (another version, a quota new or gone), or when
an increase no longer fits: the pool's quotas after the plan would hold more than the pool has now, or the team's
demand fell below what the plan raises it to. A stale plan is made again on the cluster as it is; the new plan
may be written on the old approval only when it is within it: every change in the same direction as an approved
one and none larger, and no change, setting or new quota that was not approved."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from rebalancer.domain.basis import PlanBasis
from rebalancer.domain.plan import CLUSTER, Change, FieldChange, Plan
from rebalancer.domain.pools import PoolKey

EPS = 1e-6


def _n(x: float) -> str:
    return f"{x:g}"


def stale_reasons(then: PlanBasis, now: PlanBasis, plan: Plan, at: datetime, max_age: timedelta) -> tuple[str, ...]:
    """Why the plan made on `then` cannot be written on the cluster read as `now` at `at`, one line each (empty:
    it still holds)."""
    out: list[str] = []
    age = at - then.taken_at
    if age > max_age:
        out.append(f"the plan is {age.total_seconds() / 60:.0f} min old, more than approval.max_plan_age_minutes "
                   f"({max_age.total_seconds() / 60:.0f})")
    for pool, was in sorted(then.capacity.items()):
        is_now = now.capacity.get(pool, 0.0)
        if is_now < was - EPS:
            out.append(f"the healthy capacity of {pool} fell from {_n(was)} to {_n(is_now)}")
    for t, was in sorted(then.ceilings.items()):
        is_now = max(now.ceilings.get(t, 0.0), now.capacity.get(t, 0.0))
        if is_now < was - EPS:
            out.append(f"what the autoscaler may reach on {t} fell from {_n(was)} to {_n(is_now)}")
    out += _moved(then, now)
    out += _increases_that_no_longer_fit(then, now, plan.changes)
    return tuple(out)


def _moved(then: PlanBasis, now: PlanBasis) -> list[str]:
    out = []
    for team in sorted({*then.quota_versions, *now.quota_versions}):
        was, is_now = then.quota_versions.get(team), now.quota_versions.get(team)
        if was == is_now:
            continue
        if was is None:
            out.append(f"team {team} has a quota now (version {is_now}) that the plan did not see")
        elif is_now is None:
            out.append(f"the quota of team {team} is gone")
        else:
            out.append(f"the quota of team {team} moved (version {was} → {is_now})")
    if then.scheduler_version != now.scheduler_version:
        out.append(f"the scheduler config moved (version {then.scheduler_version} → {now.scheduler_version})")
    return out


def _unit(pool: str) -> str | None:
    """A pool's unit (its primary resource), None for a pool the catalog does not know."""
    try:
        return PoolKey.parse(pool).resource
    except ValueError:
        return None


def _increases_that_no_longer_fit(then: PlanBasis, now: PlanBasis, changes: Iterable[Change]) -> list[str]:
    out = []
    raised: dict[str, float] = {}
    net: dict[str, float] = {}
    units: dict[str, str | None] = {}
    for c in changes:
        pool = c.pool
        if pool not in units:
            units[pool] = _unit(pool)
        if c.resource != units[pool]:  # explicit vCPU or memory beside a pool's accelerators
            continue
        net[c.pool] = net.get(c.pool, 0.0) + c.delta
        if c.delta > EPS:
            raised[c.pool] = raised.get(c.pool, 0.0) + c.delta
            wanted = now.demand.get(c.team, {}).get(c.pool, 0.0)
            if wanted < c.after - EPS and wanted < then.demand.get(c.team, {}).get(c.pool, 0.0) - EPS:
                out.append(f"{c.team} on {c.pool}: its demand fell from "
                           f"{_n(then.demand.get(c.team, {}).get(c.pool, 0.0))} to {_n(wanted)}, below the "
                           f"{_n(c.after)} the plan raises it to")
    for pool in sorted(raised):
        after = then.held.get(pool, 0.0) + net[pool]
        room = max(now.capacity.get(pool, 0.0), now.ceilings.get(pool, 0.0))
        if after > room + EPS:
            out.append(f"the increases on {pool} no longer fit: its quotas would hold {_n(after)}, it has "
                       f"{_n(room)} healthy")
    return out


def beyond_approval(approved: Plan, new: Plan) -> tuple[str, ...]:
    """What `new` does that `approved` did not approve, one line each (empty: within the approval)."""
    out: list[str] = []
    was = {(c.team, c.pool, c.resource): c for c in approved.changes}
    for c in new.changes:
        a = was.get((c.team, c.pool, c.resource))
        what = f"{c.team} {c.pool} {c.resource} {_n(c.before)}→{_n(c.after)}"
        if a is None:
            out.append(f"{what}: not in the approved plan")
        elif a.delta * c.delta < 0:
            out.append(f"{what}: the other way from the approved {_n(a.before)}→{_n(a.after)}")
        elif abs(c.delta) > abs(a.delta) + EPS:
            out.append(f"{what}: larger than the approved {_n(a.before)}→{_n(a.after)}")
    settings = {_setting(f) for f in approved.field_changes}
    out += [f"{f.team} {f.field} → {f.after!r}: a setting not in the approved plan"
            + (" (it replaces a console edit)" if f.console_edit else "")
            for f in new.field_changes if _setting(f) not in settings]
    creates = {r.team for r in approved.requests if r.operation == "CreateComputeQuota"}
    out += [f"a new quota for team {r.team}: not in the approved plan" for r in new.requests
            if r.operation == "CreateComputeQuota" and r.team not in creates]
    if new.scheduler_requests and not approved.scheduler_requests:
        out.append(f"{CLUSTER} the scheduler config: not in the approved plan")
    return tuple(out)


def _setting(f: FieldChange) -> tuple[str, str, str, str, bool]:
    return f.team, f.field, repr(f.before), repr(f.after), f.console_edit
