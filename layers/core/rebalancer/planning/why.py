"""Why a team's work waits: from a snapshot (quotas, demand, pending workloads, capacity, node health), the plan made
from it and the last change of each of the team's quotas, an answer a team lead can read. Pure: the callers
(rebalancer.app.why for the CLI and Slack) load the stored documents.

Kueue admits a workload when the team's nominal quota covers it (reclaiming what other teams borrow), or when it may
borrow that much (its borrow limit) and that much is idle in the pool. So for each pending workload the reasons are
read against those two paths: over quota, borrow limit reached, a gang larger than what is free (or than the whole
pool), a topology level asked for, the team's budget spent, another team's reservation holding the idle capacity.
With the run's outlook (rebalancer.domain.outlook: what the plan step forecast), each workload also has its
estimated start, and the team its standing over the fair-share window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import AwareDatetime, NonNegativeFloat, NonNegativeInt, PositiveFloat

from rebalancer.catalog import specs as catalog
from rebalancer.domain.frozen import Frozen
from rebalancer.domain.outlook import Outlook, Standing, TrackRecord, WorkloadEta
from rebalancer.domain.plan import Plan, Preemption, preemption_line, preemption_summary
from rebalancer.domain.pools import held, holdings
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.domain.reservation import Reservation, current
from rebalancer.domain.snapshot import HEALTHY_NODE_STATUS, PendingWorkload, Snapshot
from rebalancer.errors import UnknownInstanceType

if TYPE_CHECKING:  # the policy only when a caller has one (`why --live --policy`)
    from rebalancer.domain.policy import Policy

WaitKind = Literal["over_quota", "borrow_limit", "gang_larger_than_free", "larger_than_pool", "topology",
                   "budget_cut", "reservation"]
DEFAULT_BORROW_LIMIT = 50  # percent: what HyperPod applies to LendAndBorrow without a BorrowLimit


class LastChange(Frozen):
    """The last change of one of the team's quotas: when, by which run, from and to, and why."""

    pool: str
    at: AwareDatetime
    execution: str
    before: float
    after: float
    reason: str
    # "applied", "rolled back", "left" (a rollback left the quota as it was: `after` is what it holds), or the
    # plan's decision when it was never applied
    outcome: str


class QuotaLine(Frozen):
    pool: str
    quota: float  # what the team's compute quota holds now, in accelerators
    in_use: float
    planned: float | None = None  # the latest plan's allocation, when it has one
    last_change: LastChange | None = None


class WaitReason(Frozen):
    kind: WaitKind
    text: str


class Waiting(Frozen):
    """One pending workload (or, `name` None, the pool's pending demand when no workload was read)."""

    name: str | None
    pool: str
    accelerators: NonNegativeFloat
    pods: NonNegativeInt | None = None
    created: AwareDatetime | None = None
    topology: str | None = None
    declared_s: PositiveFloat | None = None  # the run time it declares (kueue.x-k8s.io/estimated-duration)
    reasons: tuple[WaitReason, ...] = ()
    would_start: str = ""
    eta: WorkloadEta | None = None  # its estimated start (None: no outlook stored with the run)


class RunningLine(Frozen):
    """One workload the team runs: its size, when Kueue admitted it (None: not known) and how long it has run at the
    snapshot's time: what Kueue reclaims first is the newest admitted (DESIGN.md), so the youngest work is the first
    at risk when the team's quota comes down."""

    name: str
    pool: str
    accelerators: NonNegativeFloat
    admitted: AwareDatetime | None = None
    ran_s: NonNegativeFloat | None = None


RUNNING_SHOWN = 10  # running workloads an answer lists, the newest admitted first; the rest counted


class Explanation(Frozen):
    cluster: str
    team: str
    snapshot_at: AwareDatetime
    execution: str | None = None
    quotas: tuple[QuotaLine, ...] = ()
    waiting: tuple[Waiting, ...] = ()
    notes: tuple[str, ...] = ()  # the plan's warnings naming the team (its budget, a raise that may not help)
    standing: Standing | None = None  # over the fair-share window (None: no outlook stored with the run)
    # with work waiting: how the estimates here turned out lately (None: nothing measured yet, or nothing waits)
    track_record: TrackRecord | None = None
    estimates_rest_on: tuple[str, ...] = ()  # the outlook's notes: the runs the durations come from, what it assumes
    # The team's running workloads the latest plan's writes would make Kueue preempt (of those the plan lists)
    preempted: tuple[Preemption, ...] = ()
    # what the team runs, the newest admitted first (at most RUNNING_SHOWN), and how many more
    running: tuple[RunningLine, ...] = ()
    running_unlisted: NonNegativeInt = 0

    def lines(self) -> list[str]:
        """The answer as plain lines (the CLI's text; Slack's blocks say the same)."""
        out = [f"{self.team} on {self.cluster} (snapshot {self.snapshot_at:%Y-%m-%d %H:%M} UTC)"]
        for q in self.quotas:
            out.append(f"  {quota_line(q)}")
        if not self.quotas:
            out.append("  no quota on any pool")
        out += [f"  note: {n}" for n in self.notes]
        if self.preempted:
            out.append(f"  {preempted_title(self.preempted)}:")
            out += [f"    - {preemption_line(p)}" for p in self.preempted]
        out += [f"  {running_text(r)}" for r in self.running]
        if self.running_unlisted:
            out.append(f"  … and {self.running_unlisted} more running")
        if self.standing is not None:
            out += [f"  {line}" for line in standing_lines(self.standing)]
        if not self.waiting:
            out.append("nothing pending")
        for w in self.waiting:
            out.append(waiting_title(w))
            out += [f"  - {r.text}" for r in w.reasons]
            if w.would_start:
                out.append(f"  would start with: {w.would_start}")
            if w.eta is not None:
                out.append(f"  {eta_text(w.eta)}")
        if self.track_record is not None:
            out.append(track_record_text(self.track_record))
        out += [f"the estimates: {n}" for n in self.estimates_rest_on]
        return out


def preempted_title(preempted: Sequence[Preemption]) -> str:
    """`the latest plan would preempt 2 running workloads, 12.0 GPU-hours of work at risk`."""
    return f"the latest plan would preempt {preemption_summary(preempted, 0, sum(p.gpu_hours for p in preempted))}"


def quota_line(q: QuotaLine) -> str:
    text = f"{q.pool}: quota {q.quota:g}, {q.in_use:g} in use"
    if q.planned is not None and q.planned != q.quota:
        text += f"; the latest plan makes it {q.planned:g}"
    c = q.last_change
    if c is not None and c.outcome == "left":
        text += f"; left at {c.after:g} by the rollback of run {c.execution} on {c.at:%Y-%m-%d %H:%M}: {c.reason}"
    elif c is not None:
        text += f"; last changed {c.before:g}→{c.after:g} on {c.at:%Y-%m-%d %H:%M} ({c.outcome}): {c.reason}"
    return text


def running_text(r: RunningLine) -> str:
    """`running workload pretrain on ml.p5.48xlarge: 32 accelerators, admitted 2026-11-30 08:30, running 3.5 h`."""
    since = (f", admitted {r.admitted:%Y-%m-%d %H:%M}, running {run_time_text(r.ran_s or 0.0)}"
             if r.admitted is not None else ", admitted at a time not known")
    return f"running workload {r.name} on {r.pool}: {r.accelerators:g} accelerators{since}"


def _running(snapshot: Snapshot, team: str) -> tuple[tuple[RunningLine, ...], int]:
    """The team's running workloads, the newest admitted first (those of unknown admission time last)."""
    mine = sorted((w for w in snapshot.running_workloads if w.team == team),
                  key=lambda w: (w.started is None, -(w.started.timestamp() if w.started else 0.0), w.name, w.pool))
    lines = tuple(RunningLine(name=w.name, pool=w.pool, accelerators=w.accelerators, admitted=w.started,
                              ran_s=None if w.started is None
                              else max(0.0, (snapshot.taken_at - w.started).total_seconds()))
                  for w in mine[:RUNNING_SHOWN])
    return lines, max(0, len(mine) - RUNNING_SHOWN)


def eta_text(e: WorkloadEta) -> str:
    """`estimated start 2026-12-02 14:00 UTC (likely 12:30 to 18:00)`, or why there is none."""
    if e.start is None:
        return f"no estimated start: {e.unknown}"
    early = e.earliest or e.start
    same_day = e.latest is not None and e.latest.date() == early.date() == e.start.date()
    fmt = "%H:%M" if same_day else "%Y-%m-%d %H:%M"
    late = f"{e.latest:{fmt}}" if e.latest is not None else "later than the forecast reaches"
    return f"estimated start {e.start:%Y-%m-%d %H:%M} UTC (likely {early:{fmt}} to {late})"


def track_record_text(r: TrackRecord) -> str:
    """`estimates here lately: 64 % of the last 200 workloads that waited an hour or more started within 2× of the
    wait first estimated`."""
    return (f"estimates here lately: {r.within_2x * 100:.0f} % of the last {r.workloads:,} workloads that waited an "
            "hour or more started within 2× of the wait first estimated")


UNCOUNTED = {
    "weight": "no share counted: weight 0 or not in the policy",
    "idle": "no share counted: neither demand now nor use in the window",
    "unused": "no share yet: no use of this pool recorded over the window, each run records it",
}


def _hours(hours: float) -> tuple[float, str]:
    """Accelerator-hours as shown beside a percentage (a tenth of an hour under 100, whole hours from there) and the
    figure shown, so that the percentage is the quotient of the figures a reader sees."""
    shown = round(hours, 1) if hours < 100 else float(round(hours))
    return shown, f"{shown:,.1f}" if shown < 100 else f"{shown:,.0f}"


def standing_lines(s: Standing) -> list[str]:
    """Received against entitled accelerator-hours per instance type over the window, and the budget."""
    out = [f"over the last {s.window_hours:g} h:"]
    for p in s.pools:
        got, got_text = _hours(p.received_hours)
        if p.entitled_hours is None:
            out.append(f"  {p.pool}: received {got_text} accelerator-hours ({UNCOUNTED[p.uncounted or 'idle']})")
            continue
        due, due_text = _hours(p.entitled_hours)
        ratio = f" ({got / due:.0%})" if due else ""
        out.append(f"  {p.pool}: received {got_text} of the {due_text} accelerator-hours it was entitled to{ratio}")
    if not s.pools:
        out.append("  no use and no share on any pool")
    if s.budget:
        out.append(f"  {s.budget}")
    return out


def waiting_title(w: Waiting) -> str:
    what = f"workload {w.name}" if w.name is not None else "pending demand"
    size = f"{w.accelerators:g} accelerators" + (f" in {w.pods} pod{'s' if w.pods > 1 else ''}" if w.pods else "")
    since = f", waiting since {w.created:%Y-%m-%d %H:%M}" if w.created else ""
    declared = f", declared run {run_time_text(w.declared_s)}" if w.declared_s is not None else ""
    return f"{what} on {w.pool}: {size}{since}{declared}"


def run_time_text(seconds: float) -> str:
    """`30 s`, `45 min`, `1.5 h`, `4 h`, `1,200 h`."""
    hours = seconds / 3600
    if seconds < 60:
        return f"{seconds:.0f} s"
    if hours < 1.5:
        return f"{seconds / 60:.0f} min"
    return f"{hours:.1f}".removesuffix(".0") + " h" if hours < 10 else f"{hours:,.0f} h"


# --- the pool as the snapshot saw it --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Pool:
    """Capacity, use and quotas of one pool, in accelerators."""

    pool: str
    capacity: float
    in_use: dict[str, float]  # per team
    quotas: dict[str, float]  # per team
    free: float

    @classmethod
    def of(cls, snapshot: Snapshot, pool: str) -> _Pool:
        total = capacity(snapshot, pool)
        in_use = {t: d[pool].in_use.accelerators for t, d in snapshot.demand.items() if pool in d}
        return cls(pool, total, in_use, {q.team: held(q, pool) for q in snapshot.quotas if _known(pool)},
                   max(0.0, total - sum(in_use.values())))

    def borrowed_by_others(self, team: str) -> float:
        """What other teams run beyond their own quota: capacity a team's nominal quota takes back (reclaim)."""
        return sum(max(0.0, used - self.quotas.get(t, 0.0)) for t, used in self.in_use.items() if t != team)


def _known(pool: str) -> bool:
    try:
        catalog.spec(pool.partition(":")[0])
    except UnknownInstanceType:
        return False
    return True


def capacity(snapshot: Snapshot, pool: str) -> float:
    """Accelerators of the pool's healthy nodes (Running, and not labelled unschedulable by HyperPod)."""
    if ":" in pool or not _known(pool):
        return 0.0
    per_node = catalog.spec(pool).accelerators
    nodes = [n for n in snapshot.nodes if n.InstanceType == pool and n.InstanceStatus.Status == HEALTHY_NODE_STATUS
             and not snapshot.node_health.get(n.InstanceId, "Schedulable").startswith("Unschedulable")]
    return float(len(nodes) * per_node)


def borrow_limit(quota: ComputeQuota | None, pool: str) -> float:
    """How much beyond its quota the team may borrow on the pool (absolute limit, else BorrowLimit percent)."""
    if quota is None:
        return 0.0
    sharing = quota.ComputeQuotaConfig.ResourceSharingConfig
    if sharing is None or sharing.Strategy != "LendAndBorrow":
        return 0.0 if sharing is not None else held(quota, pool) * DEFAULT_BORROW_LIMIT / 100
    for limit in sharing.AbsoluteBorrowLimits or ():
        if limit.InstanceType == pool and limit.Accelerators is not None:
            return float(limit.Accelerators)
    percent = sharing.BorrowLimit if sharing.BorrowLimit is not None else DEFAULT_BORROW_LIMIT
    return held(quota, pool) * percent / 100


# --- the answer -----------------------------------------------------------------------------------------------------
def explain(snapshot: Snapshot, plan: Plan | None, team: str, *, last_changes: Mapping[str, LastChange] | None = None,
            reservations: Sequence[Reservation] = (), execution: str | None = None,
            policy: Policy | None = None, outlook: Outlook | None = None) -> Explanation:
    """`last_changes`: pool → the last change of the team's quota there; `reservations`: the cluster's stored
    reservations (those approved and active at the snapshot's time hold capacity for their teams); `policy`, when
    known: the other teams' guarantees, which a guarantee advised here must leave room for; `outlook`: the estimated
    starts and standings computed from the same snapshot."""
    changes = last_changes or {}
    quota = snapshot.quota_of(team)
    notes = tuple(w.removeprefix(f"{team}: ") for w in (plan.warnings if plan else ()) if w.startswith(f"{team}: "))
    active = list(current(reservations, snapshot.taken_at))  # a recurring one as its window held now
    waiting = [_waiting(snapshot, quota, w, notes, active, policy) for w in _pending(snapshot, team)]
    standing = None
    if outlook is not None:
        etas = {(e.name, e.pool): e for e in outlook.estimates if e.team == team}
        waiting = [w.model_copy(update={"eta": etas.get((w.name or "", w.pool))}) for w in waiting]
        standing = outlook.standing.get(team)
    running, unlisted = _running(snapshot, team)
    return Explanation(cluster=snapshot.cluster.ClusterName, team=team, snapshot_at=snapshot.taken_at,
                       execution=execution, quotas=_quota_lines(snapshot, plan, team, changes, quota),
                       waiting=tuple(waiting), notes=notes, standing=standing, running=running,
                       running_unlisted=unlisted,
                       track_record=outlook.track_record if outlook is not None and waiting else None,
                       estimates_rest_on=_notes_for(team, outlook.notes, snapshot) if outlook is not None and
                       waiting else (),
                       preempted=tuple(p for p in plan.preemptions if p.team == team) if plan else ())


def _notes_for(team: str, notes: Sequence[str], snapshot: Snapshot) -> tuple[str, ...]:
    """The outlook's notes a team is told: those about the cluster and those about it (`team: …`), not another
    team's."""
    teams = {q.team for q in snapshot.quotas} | {w.team for w in snapshot.pending_workloads} | \
        {w.team for w in snapshot.running_workloads}
    return tuple(n for n in notes if n.partition(": ")[0] == team or n.partition(": ")[0] not in teams)


def _quota_lines(snapshot: Snapshot, plan: Plan | None, team: str, changes: Mapping[str, LastChange],
                 quota: ComputeQuota | None) -> tuple[QuotaLine, ...]:
    holds = _holdings(quota)
    planned = {p: r.get("accelerators") for p, r in (plan.allocations.get(team, {}) if plan else {}).items()}
    used = {p: d.in_use.accelerators for p, d in snapshot.demand.get(team, {}).items()}
    pools = sorted(set(holds) | {p for p, v in planned.items() if v is not None} | {p for p, v in used.items() if v}
                   | set(changes))
    return tuple(QuotaLine(pool=p, quota=holds.get(p, 0.0), in_use=used.get(p, 0.0), planned=planned.get(p),
                           last_change=changes.get(p)) for p in pools)


def _holdings(quota: ComputeQuota | None) -> dict[str, float]:
    if quota is None:
        return {}
    try:
        return holdings(quota)
    except UnknownInstanceType:
        return {}


def _pending(snapshot: Snapshot, team: str) -> list[PendingWorkload]:
    """The team's pending workloads, oldest first (Kueue's FIFO order within a queue); where collect read none on a
    pool with pending demand, that demand as one."""
    listed = sorted((w for w in snapshot.pending_workloads if w.team == team), key=lambda w: w.admission_order)
    pools = {w.pool for w in listed}
    for pool, demand in sorted(snapshot.demand.get(team, {}).items()):
        if demand.pending.accelerators and pool not in pools:
            listed.append(PendingWorkload(name="", team=team, pool=pool, accelerators=demand.pending.accelerators,
                                          pods=0, created=demand.oldest_pending))
    return listed


def _waiting(snapshot: Snapshot, quota: ComputeQuota | None, w: PendingWorkload, notes: Sequence[str],
             reservations: Sequence[Reservation], policy: Policy | None) -> Waiting:
    pool = _Pool.of(snapshot, w.pool)
    reasons = _reasons(pool, quota, w, notes, reservations)
    return Waiting(name=w.name or None, pool=w.pool, accelerators=w.accelerators, pods=w.pods or None,
                   created=w.created, topology=w.topology, declared_s=w.declared_s, reasons=tuple(reasons),
                   would_start=_would_start(pool, w, reasons, reservations, _guaranteed_to_others(pool, w.team,
                                                                                                   policy)))


def _reasons(pool: _Pool, quota: ComputeQuota | None, w: PendingWorkload, notes: Sequence[str],
             reservations: Sequence[Reservation]) -> list[WaitReason]:
    """What blocks each of Kueue's paths: within quota (reclaiming what others borrow), or borrowing from what is
    idle within the borrow limit. Over quota is a reason only when borrowing is blocked too."""
    a, team = w.accelerators, w.team
    own, used = pool.quotas.get(team, 0.0), pool.in_use.get(team, 0.0)
    out: list[WaitReason] = []
    if a > pool.capacity:
        out.append(WaitReason(kind="larger_than_pool", text=f"it asks for {a:g} accelerators; the pool has "
                              f"{pool.capacity:g} healthy in all"))
    if used + a <= own:
        if a > pool.free + pool.borrowed_by_others(team) and not out:
            out.append(_larger_than_free(pool, a))
    else:
        blocked = _borrowing_blocked(pool, quota, w, notes, reservations)
        if blocked:
            out.append(WaitReason(kind="over_quota", text=f"over quota: {used:g} in use + {a:g} asked is more "
                                  f"than its quota of {own:g}, so it must borrow"))
            out += [b for b in blocked if not (out[0].kind == "larger_than_pool" and b.kind != "budget_cut")]
    if w.topology:
        out.append(WaitReason(kind="topology", text=f"it asks for a topology level ({w.topology}): its {a:g} "
                              "accelerators must be free inside one such domain, which quota alone does not give"))
    return out


def _borrowing_blocked(pool: _Pool, quota: ComputeQuota | None, w: PendingWorkload, notes: Sequence[str],
                       reservations: Sequence[Reservation]) -> list[WaitReason]:
    a, team = w.accelerators, w.team
    own, used = pool.quotas.get(team, 0.0), pool.in_use.get(team, 0.0)
    borrow = borrow_limit(quota, w.pool)
    out: list[WaitReason] = []
    if used + a > own + borrow:
        out.append(WaitReason(kind="borrow_limit", text=f"borrow limit reached: it may borrow {borrow:g} beyond "
                              f"its quota, {used + a - own:g} needed"))
    elif a > pool.free:
        out.append(_larger_than_free(pool, a))
    held_for_others = _held_for_others(pool, team, reservations)
    if held_for_others and pool.free >= a > pool.free - held_for_others and used + a <= own + borrow:
        others = ", ".join(sorted({r.team for r in reservations if r.team != team and r.pool == w.pool}))
        out.append(WaitReason(kind="reservation", text=f"{held_for_others:g} of the free accelerators are "
                              f"reserved for {others}"))
    budget = next((n for n in notes if "budget" in n and ("held at its guarantee" in n or "no borrowing" in n)), None)
    if budget is not None:
        out.append(WaitReason(kind="budget_cut", text=f"budget cut: {budget}"))
    return out


def _larger_than_free(pool: _Pool, a: float) -> WaitReason:
    return WaitReason(kind="gang_larger_than_free", text=f"it needs {a:g} accelerators at once; {pool.free:g} of "
                      f"{pool.capacity:g} are free in {pool.pool}")


def _held_for_others(pool: _Pool, team: str, reservations: Sequence[Reservation]) -> float:
    """Idle capacity other teams' reservations hold on the pool (what they reserve beyond what they run)."""
    reserved: dict[str, float] = {}
    for r in reservations:
        if r.pool == pool.pool and r.team != team:
            reserved[r.team] = reserved.get(r.team, 0.0) + r.accelerators
    return sum(max(0.0, amount - pool.in_use.get(t, 0.0)) for t, amount in reserved.items())


def _guaranteed_to_others(pool: _Pool, team: str, policy: Policy | None) -> float:
    if policy is None:
        return 0.0
    return sum(tp.guarantee_for(pool.pool, pool.capacity) for name, tp in policy.teams.items()
               if name != team and not tp.remove)


def _guarantee_advice(pool: _Pool, needed: float, own: float, others: float, extra: str) -> str:
    """A guarantee that lets it start, only one the pool can keep: within its healthy capacity, less what other
    teams' guarantees hold there (when the policy is known)."""
    room = pool.capacity - others
    if needed <= room:
        return f"a guarantee of {needed:g} in {pool.pool} (now {own:g}){extra}"
    held = f", {others:g} of them guaranteed to other teams" if others else ""
    short = needed - max(room, own)
    return (f"{short:g} of the team's own running work in {pool.pool} ends (no guarantee can hold {needed:g}: the "
            f"pool has {pool.capacity:g} healthy accelerators{held})")


def _would_start(pool: _Pool, w: PendingWorkload, reasons: Sequence[WaitReason],
                 reservations: Sequence[Reservation], others: float = 0.0) -> str:
    """The smallest changes that let it start, as alternatives ("or"), each with what else it needs ("and")."""
    kinds = {r.kind for r in reasons}
    if not kinds:
        return "nothing in the last snapshot holds it: it starts at Kueue's next pass unless older work goes first"
    a, team = w.accelerators, w.team
    own, used = pool.quotas.get(team, 0.0), pool.in_use.get(team, 0.0)
    if "larger_than_pool" in kinds:
        return (f"{a - pool.capacity:g} more healthy accelerators in {w.pool} (nodes added or repaired), or a "
                f"smaller gang")
    options = []
    short = a - pool.free
    if kinds & {"over_quota"} and not kinds & {"borrow_limit", "budget_cut"} and short > 0:
        options.append(f"{short:g} more accelerators in {w.pool} free up")
    if kinds & {"over_quota", "gang_larger_than_free"}:
        needed = used + a
        reclaim_short = a - pool.free - pool.borrowed_by_others(team)
        extra = f" and {reclaim_short:g} accelerators free up" if reclaim_short > 0 else ""
        if needed > own:
            options.append(_guarantee_advice(pool, needed, own, others, extra))
        elif extra:
            options.append(f"{reclaim_short:g} accelerators in {w.pool} free up")
    if "reservation" in kinds:
        ends = sorted(r.until for r in reservations if r.team != team and r.pool == w.pool)
        options.append("the reservation ends" + (f" ({ends[0]:%Y-%m-%d %H:%M})" if ends else ""))
    if "budget_cut" in kinds:
        options.append("the budget period ends or the budget is raised")
    if "topology" in kinds and not options:
        options.append(f"one topology domain with {a:g} free accelerators")
    return " or ".join(options) or "capacity frees up"
