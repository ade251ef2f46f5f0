"""Each pending workload's estimated start (what `rebalancer why` and `/rebalancer why` answer "when will it
start?" with): a forecast (rebalancer.forecast) of the cluster the snapshot shows, under the policy. Kueue as the
quotas configure it (nominal quota, BorrowLimit, lending, FairShareWeight, PreemptTeamTasks; the scheduler
config's fair sharing and idle-resource sharing), the run's plan applied two minutes on when it applies by itself
(not while it waits for approval; after its notice when it preempts), the controller's own planner re-planning in
the forecast every REPLAN_EVERY_S for REPLANS runs. How long things run comes only from what the controller knows:
how long each admitted workload has run (Snapshot.running_workloads) and the run durations of the team's workloads
seen to finish between runs (`RunHistory`, kept by the plan step); never how long a workload will really run.
Pure."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime

from rebalancer.domain.context import PlanningContext
from rebalancer.domain.outlook import (
    DURATIONS_KEPT,
    OUTCOMES_KEPT,
    TOLD_KEPT,
    Outcome,
    RunHistory,
    Seen,
    Told,
    TrackRecord,
    WorkloadEta,
    workload_key,
)
from rebalancer.domain.plan import Plan
from rebalancer.domain.policy import Policy
from rebalancer.domain.pools import holdings
from rebalancer.domain.quotas import ComputeQuota, ComputeQuotaResource
from rebalancer.domain.snapshot import NO_DEMAND, PendingWorkload, Resources, Snapshot
from rebalancer.forecast import model as fc
from rebalancer.forecast.deadline import Deadline
from rebalancer.forecast.durations import History
from rebalancer.forecast.engine import Controller, Quotas
from rebalancer.forecast.estimate import HORIZON_S, Estimate, estimate
from rebalancer.planning.forecast_cluster import cluster_of

# Runs of the controller's planner in one forecast: the first hour of 15-minute runs, as the plan step runs on the
# template's reconcile schedule; after them the quotas stay as the last plan left them.
REPLANS = 4
REPLAN_EVERY_S = 900.0
APPLY_DELAY_S = 120.0  # a plan that applies by itself is in place within the run's apply and verify steps
# How good the estimates are, on a cluster (the track record) as in `rebalancer simulate`: the workloads measured are
# those that waited at least WAITED_S before they first started; an estimate counts when the wait it gives is
# within a factor WITHIN of the actual one.
WAITED_S = 3600.0
WITHIN = 2.0
# The likely range told with each estimate is meant to hold the actual start of LIKELY of the workloads that wait
# WAITED_S or more: the span of the forecast's draws (what the history's durations can do), widened by the
# track record's observed error (what they cannot: a waiting workload's own run time, work that arrives later).
# Once RECORD_MIN outcomes are known, the wait the estimate gives is stretched by quantiles of actual ÷ estimated
# wait; before that, by 1/WITHIN and WITHIN, the band within which this project calls an estimate good.
LIKELY = 0.8
RECORD_MIN = 20
# The levels those quantiles are taken at adapt (adaptive conformal inference, Gibbs & Candès 2021, one level per
# end): each outcome moves an end's level by GAMMA × (miss − SIDE_MISS), out when the start fell beyond that end,
# in when not, so that over any T outcomes each end misses SIDE_MISS of them to within (1 + GAMMA) / (GAMMA × T)
# however the errors drift (the errors of last hours are not those of the next: a fixed quantile falls short when
# the load changes). They start at the LIKELY band's, (1 ∓ LIKELY) / 2. GAMMA: an end missed by every start moves
# from its start to the extreme (0.9 → 1) in 0.1 / (0.9 × GAMMA) ≈ 22 outcomes, a tenth of the OUTCOMES_KEPT the
# band is read from, and a level wanders by about √GAMMA ≈ 0.07 around where it settles.
SIDE_MISS = (1 - LIKELY) / 2
GAMMA = 0.005
LEVELS = (SIDE_MISS, 1 - SIDE_MISS)
# An end's level stays between the quartile (narrower, the range would claim more than the middle half of the
# errors) and 2 (past 1, the extreme raised to the level: at most the square of the largest error seen; `latest`
# None stays for a draw that did not start the workload at all).
NARROWEST = (0.25, 0.75)
WIDEST = (-1.0, 2.0)


def _t(at: datetime) -> float:
    return at.timestamp()


def _at(t: float) -> datetime:
    return datetime.fromtimestamp(t, tz=UTC)


# --- what the plan step carries between runs ---
def history_after(previous: RunHistory, snapshot: Snapshot) -> RunHistory:
    """The run history once `snapshot` is seen: a workload seen running before and neither running nor pending now
    has finished, after running from its start to about halfway between the run that last saw it and this one; one
    pending again was preempted (not a run that finished). Each team keeps its newest DURATIONS_KEPT, and of those
    that declared a run time, what they ran over what they declared. A workload told an estimate and running now
    has started: if it waited an hour or more, its wait against that estimate is an outcome (the newest
    OUTCOMES_KEPT are kept); one neither running nor pending is forgotten."""
    now = snapshot.taken_at
    running: dict[str, Seen] = {}
    for w in snapshot.running_workloads:
        key = workload_key(w.team, w.name, w.pool)
        before = previous.running.get(key)
        started = w.started or (before.started if before else now)
        running[key] = Seen(team=w.team, started=started, last_seen=now, declared_s=w.declared_s)
    waiting = {workload_key(w.team, w.name, w.pool) for w in snapshot.pending_workloads}
    told = {k: t for k, t in previous.told.items() if k in waiting}
    outcomes = list(previous.outcomes)
    levels = previous.levels
    for key, t in sorted(previous.told.items(), key=lambda kv: kv[1].queued):
        seen = running.get(key)
        if seen is None:
            continue
        waited = (seen.started - t.queued).total_seconds()
        if waited < WAITED_S:
            continue
        in_range = None
        if t.earliest is not None:
            span = (_t(t.earliest), None if t.latest is None else _t(t.latest))
            in_range = inside(_t(seen.started), span)
            levels = adapted(levels or LEVELS, _t(seen.started), span)
        outcomes.append(Outcome(waited_s=waited, estimated_s=None if t.start is None else
                                (t.start - t.queued).total_seconds(), in_range=in_range))
    finished = {t: list(d) for t, d in previous.finished.items()}
    declared = {t: list(d) for t, d in previous.declared.items()}
    for key, seen in sorted(previous.running.items(), key=lambda kv: kv[1].last_seen):
        if key in running or key in waiting or seen.last_seen >= now:
            continue
        ended = seen.last_seen + (now - seen.last_seen) / 2
        ran = float(round(max(0.0, (ended - seen.started).total_seconds())))  # to the second: a smaller item
        finished.setdefault(seen.team, []).append(ran)
        if seen.declared_s is not None:
            declared.setdefault(seen.team, []).append(float(f"{ran / seen.declared_s:.3g}"))
    return RunHistory(running=running, finished=_newest(finished), declared=_newest(declared), told=told,
                      outcomes=tuple(outcomes[-OUTCOMES_KEPT:]), levels=levels)


def _newest(by_team: dict[str, list[float]]) -> dict[str, tuple[float, ...]]:
    return {t: tuple(d[-DURATIONS_KEPT:]) for t, d in sorted(by_team.items())}


def told_after(history: RunHistory, estimates: Sequence[WorkloadEta], snapshot: Snapshot) -> RunHistory:
    """The history with what this run tells the pending workloads it sees for the first time; of all the workloads
    told and waiting, the TOLD_KEPT whose names hash lowest are kept (a sample that does not depend on who waits
    longest or asks most)."""
    given = {(e.team, e.name, e.pool): e for e in estimates}
    told = dict(history.told)
    for w in snapshot.pending_workloads:
        key = workload_key(w.team, w.name, w.pool)
        if key not in told:
            e = given.get((w.team, w.name, w.pool))
            told[key] = Told(queued=w.created or snapshot.taken_at, start=e.start if e else None,
                             earliest=e.earliest if e else None, latest=e.latest if e else None)
    kept = sorted(told, key=lambda k: hashlib.blake2b(k.encode(), digest_size=8).digest())[:TOLD_KEPT]
    return history.model_copy(update={"told": {k: told[k] for k in sorted(kept)}})


def track_record(history: RunHistory) -> TrackRecord | None:
    """How the first estimates of the latest workloads that waited an hour or more turned out (None: none yet)."""
    if not history.outcomes:
        return None
    within = sum(o.estimated_s is not None and o.waited_s / WITHIN <= o.estimated_s <= o.waited_s * WITHIN
                 for o in history.outcomes)
    return TrackRecord(workloads=len(history.outcomes), within_2x=within / len(history.outcomes))


def wait_ratios(outcomes: Iterable[Outcome], waiting: Iterable[tuple[float, float]] = ()) -> list[float]:
    """Actual ÷ estimated wait of each outcome given an estimate, and of each workload told one that still waits
    (`waiting`: its wait so far and the wait it was told) once it has waited WAITED_S: its wait so far is a lower
    bound of its ratio, and leaving it out would leave out the longest waits, which the outcomes learn of last."""
    done = [o.waited_s / o.estimated_s for o in outcomes if o.estimated_s is not None and o.estimated_s > 0]
    return done + [so_far / told for so_far, told in waiting if so_far >= WAITED_S and told > 0]


def error_band(ratios: Sequence[float], levels: tuple[float, float] = LEVELS) -> tuple[float, float]:
    """The factors (low ≤ 1 ≤ high) by which waits have differed from their estimates (`ratios`: wait_ratios): their
    quantiles at `levels` (adapted), once RECORD_MIN are known; (1/WITHIN, WITHIN) before that. A level past 0 or 1
    raises the extreme to 1 − level or to level."""
    if len(ratios) < RECORD_MIN:
        return 1 / WITHIN, WITHIN
    ordered = sorted(ratios)
    at_low, at_high = levels
    low = ordered[0] ** (1 - at_low) if at_low < 0 else ordered[int(at_low * (len(ordered) - 1))]
    high = ordered[-1] ** at_high if at_high > 1 else ordered[math.ceil(at_high * (len(ordered) - 1))]
    return min(low, 1.0), max(high, 1.0)


def inside(start: float, span: tuple[float, float | None]) -> bool:
    """Whether `start` fell in a likely range (likely_range: `latest` None, no later bound)."""
    return span[0] <= start and (span[1] is None or start <= span[1])


def adapted(levels: tuple[float, float], start: float, span: tuple[float, float | None]) -> tuple[float, float]:
    """The levels of error_band once a workload told the likely range `span` started at `start` (having waited
    WAITED_S or more): each end's moved by GAMMA × (miss − SIDE_MISS), outward when the start fell beyond it, inward
    a little when not, within NARROWEST and WIDEST. The plan step (history_after) and the simulator both call it."""
    early = start < span[0]
    late = span[1] is not None and start > span[1]
    low = levels[0] - GAMMA * (early - SIDE_MISS)
    high = levels[1] + GAMMA * (late - SIDE_MISS)
    return min(max(low, WIDEST[0]), NARROWEST[0]), min(max(high, NARROWEST[1]), WIDEST[1])


def likely_range(e: Estimate, now: float, band: tuple[float, float]) -> tuple[float, float | None]:
    """The range told with the estimate `e` made at `now`: the span of its draws, widened so that the wait still
    to come is stretched by `band` (error_band) either way. Only a start due now is a point."""
    assert e.start is not None
    wait = max(0.0, e.start - now)
    earliest = e.earliest if e.earliest is not None else e.start
    low = now + min(earliest - now, wait * band[0])
    return max(now, low), None if e.latest is None else now + max(e.latest - now, wait * band[1])


# --- the controller in the forecast ---
def _with_accelerators(quota: ComputeQuota, amounts: Mapping[str, float]) -> ComputeQuota:
    entries = list(quota.ComputeQuotaConfig.ComputeQuotaResources)
    for pool, amount in amounts.items():
        at = next((i for i, r in enumerate(entries) if r.InstanceType == pool and r.AcceleratorPartition is None),
                  None)
        entry = ComputeQuotaResource(InstanceType=pool, Accelerators=round(amount))
        if at is None:
            entries.append(entry)
        else:
            entries[at] = entries[at].model_copy(update={"Accelerators": round(amount), "Count": None})
    config = quota.ComputeQuotaConfig.model_copy(update={"ComputeQuotaResources": tuple(entries)})
    return quota.model_copy(update={"ComputeQuotaConfig": config})


def snapshot_at(snapshot: Snapshot, cluster: fc.Cluster) -> Snapshot:
    """The snapshot as the forecast has the cluster: its time, each team's quotas, in use and pending on the
    forecast's pools, and the workloads waiting there. What did not change is the snapshot's own (a re-plan at
    1,000 teams rewrites only the teams the forecast moved)."""
    listed = {workload_key(w.team, w.name, w.pool): w for w in snapshot.pending_workloads}
    names = {workload_key(w.team, w.name, w.pool): w.name for w in snapshot.running_workloads}
    demand = {t: dict(by_pool) for t, by_pool in snapshot.demand.items()}
    changed_quota: dict[str, dict[str, float]] = {}
    holding = {q.team: holdings(q) for q in snapshot.quotas}  # once per quota, not once per quota and pool
    for p in cluster.pools:
        use: dict[str, list[float]] = {}
        oldest: dict[str, float] = {}
        for r in p.running:
            use.setdefault(r.team, [0.0, 0.0])[0] += r.accelerators
        for w in p.waiting:
            use.setdefault(w.team, [0.0, 0.0])[1] += w.accelerators
            oldest[w.team] = min(w.queued, oldest.get(w.team, w.queued))
        for q in p.queues:
            held = holding.get(q.team)
            if held is not None and held.get(p.name, 0.0) != q.nominal:
                changed_quota.setdefault(q.team, {})[p.name] = q.nominal
            u, pend = use.get(q.team, [0.0, 0.0])
            old = demand.get(q.team, {}).get(p.name, NO_DEMAND)
            since = _at(oldest[q.team]) if q.team in oldest else None
            if (old.in_use.accelerators, old.pending.accelerators, old.oldest_pending) == (u, pend, since):
                continue
            demand.setdefault(q.team, {})[p.name] = old.model_copy(update={
                "in_use": old.in_use.model_copy(update={"accelerators": u}),
                "pending": old.pending.model_copy(update={"accelerators": pend}) if pend or old.pending
                else Resources(), "oldest_pending": since})
    waiting = []
    for p in cluster.pools:
        for w in p.waiting:
            before = listed.get(w.job)
            if before is None:
                waiting.append(PendingWorkload(name=names.get(w.job, w.job), team=w.team, pool=p.name,
                                               accelerators=w.accelerators, pods=1, created=_at(w.queued)))
            elif before.created is not None and _t(before.created) == w.queued:
                waiting.append(before)
            else:
                waiting.append(before.model_copy(update={"created": _at(w.queued)}))
    quotas = tuple(_with_accelerators(q, changed_quota[q.team]) if q.team in changed_quota else q
                   for q in snapshot.quotas)
    return snapshot.model_copy(update={"taken_at": _at(cluster.at), "demand": demand, "quotas": quotas,
                                       "pending_workloads": tuple(waiting)})


def planned_quotas(plan: Plan, pools: tuple[str, ...]) -> Quotas:
    """What the plan sets on the forecast's pools: team → pool → accelerators."""
    return {team: {p: a["accelerators"] for p, a in by_pool.items() if p in pools and "accelerators" in a}
            for team, by_pool in plan.allocations.items()}


def controller(snapshot: Snapshot, policy: Policy | None, plan: Plan | None, applies: bool,
               context: PlanningContext | None, replans: int = REPLANS) -> Controller | None:
    """The controller in the forecast: the run's plan staged when it applies by itself, then the planner on the
    forecast's cluster (with the run's planning context: budget use and use over the window as they are now), each
    of its plans applied only when it would apply by itself (not in a dry run, not one waiting for approval)."""
    if policy is None or policy.mode == "dry-run":
        return None
    from rebalancer.planning.planner import make_plan  # the planner: only where a forecast re-plans

    pools = tuple(sorted({w.pool for w in snapshot.pending_workloads} | {w.pool for w in snapshot.running_workloads}))

    def replan(cluster: fc.Cluster) -> Quotas | None:
        later = snapshot_at(snapshot, cluster)
        # the same policy against the same teams as the run's plan: their names were checked there; the quotas are all
        # a re-plan needs (and its snapshot does not list what runs in the forecast): no preemptions named
        planned = make_plan(later, policy, later.taken_at, context=context, check_names=False,
                            preemptions_named=False)
        return planned_quotas(planned, pools) if planned.applies and not planned.requires_approval else None

    # a plan that preempts is written once its teams had their notice (app.workflow.notice)
    notice = policy.reclaim.notice_minutes * 60 if plan and (plan.preemptions or plan.preemptions_unlisted) else 0.0
    staged = ((_t(snapshot.taken_at) + notice + APPLY_DELAY_S, planned_quotas(plan, pools)) if plan and applies
              else None)
    return Controller(replan, REPLAN_EVERY_S, APPLY_DELAY_S, replans, staged)


# --- the answers ---
UNKNOWN = {
    "larger_than_pool": "it asks for more accelerators than its instance type has healthy in all",
    "never_admitted": "its quota and borrow limit cannot hold it as they stand, and as the controller plans them",
    "beyond_horizon": f"it does not start within {HORIZON_S / 86_400:g} days of the snapshot",
    "beyond_work": "so much waits ahead of it that the forecast stopped before it started (the bound that keeps the "
                   "plan step within its time)",
    "out_of_time": "the plan step's time ran out before the forecast reached its start (this cluster is larger than "
                   "the forecast's bounds were set for)",
    "no_history": "no workload of this cluster has been seen to finish yet: there is no duration to estimate from",
}


def estimates(snapshot: Snapshot, policy: Policy | None, plan: Plan | None, *, applies: bool,
              context: PlanningContext | None, history: RunHistory, replans: int = REPLANS,
              deadline: Deadline | None = None) -> tuple[WorkloadEta, ...]:
    """Every pending workload's estimate (a workload waiting on several types, one per type). Without a policy
    the quotas stay as they are in the forecast. `deadline`: when the forecasts must stop (the plan step's)."""
    if not snapshot.pending_workloads:
        return ()
    cluster = cluster_of(snapshot)
    got = estimate(cluster, History(dict(history.finished), dict(history.declared)),
                   controller=controller(snapshot, policy, plan, applies, context, replans), deadline=deadline)
    spent = _budgets_spent(snapshot, policy, context)
    now = _t(snapshot.taken_at)
    band = error_band(wait_ratios(history.outcomes, [
        (now - _t(t.queued), _t(t.start) - _t(t.queued)) for t in history.told.values() if t.start is not None]),
        history.levels or LEVELS)
    out = []
    for w in snapshot.pending_workloads:
        e = got.get(workload_key(w.team, w.name, w.pool), Estimate(None, unknown="never_admitted"))
        until = spent.get(w.team)
        if until is not None and (e.start is None or _at(e.start) >= until):
            out.append(WorkloadEta(name=w.name, team=w.team, pool=w.pool,
                                   unknown=f"its team's budget is spent until {until:%Y-%m-%d %H:%M} UTC"))
        elif e.start is None:
            out.append(WorkloadEta(name=w.name, team=w.team, pool=w.pool, unknown=UNKNOWN[e.unknown or
                                                                                          "never_admitted"]))
        else:
            earliest, latest = likely_range(e, now, band)
            out.append(WorkloadEta(name=w.name, team=w.team, pool=w.pool, start=_at(e.start), earliest=_at(earliest),
                                   latest=None if latest is None else _at(latest)))
    return tuple(out)


def _budgets_spent(snapshot: Snapshot, policy: Policy | None,
                   context: PlanningContext | None) -> dict[str, datetime]:
    """Per team whose budget is used up (and whose policy then holds it back): when its period ends."""
    out: dict[str, datetime] = {}
    for team, tp in (policy.teams.items() if policy is not None else ()):
        used = context.budget_usage.get(team) if context is not None else None
        if (tp.budget is not None and tp.budget.on_exhausted != "notify" and used is not None
                and used.fraction(tp.budget) >= 1):
            out[team] = tp.budget.window(snapshot.taken_at).end.astimezone(UTC)
    return out
