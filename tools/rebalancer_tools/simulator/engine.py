"""The discrete-event loop: arrivals, completions, node failures and repairs, controller runs, quota applies.

Capacity is one pool of GPUs per instance type (nodes × accelerators per node); a job runs only on its own type's
pool, and each pool has its own Kueue cohort (one queue per team), its own failures and its own metrics. Placement
inside nodes is not modelled (a gang job takes any free GPUs of its pool). When a node fails and the remaining GPUs
of its pool cannot hold the pool's running jobs, jobs of that pool chosen by the seeded RNG are killed until the
rest fits (as if the scheduler packed jobs so that idle nodes fail first).

An autoscaled pool (PoolSpec.autoscaling) lets Kueue admit up to what its `max_nodes` hold; admitted work that does
not fit the nodes present waits for nodes the autoscaler requests (see autoscaling.py). Node failures are not
modelled in an autoscaled pool.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rebalancer.domain.outlook import OUTCOMES_KEPT, TOLD_KEPT
from rebalancer.forecast.durations import KEPT, History
from rebalancer.forecast.estimate import Estimate
from rebalancer.forecast.kueue import admission_limit, reclaim_victims
from rebalancer.forecast.model import Cluster, Pool, Queue, Running, Waiting
from rebalancer.planning.eta import LEVELS, WAITED_S, adapted, error_band, likely_range
from rebalancer_tools.simulator.autoscaling import Autoscaling, node_seconds
from rebalancer_tools.simulator.kueue import QueueSpec, cohort_room, fair_share_key
from rebalancer_tools.simulator.metrics import WEEK_S, entitlements
from rebalancer_tools.simulator.results import POOL_FIELDS, PoolRaw, RawResult, Timeline
from rebalancer_tools.simulator.trace import HORIZON_S, TraceJob

# event kinds, in the order they are handled at one instant
COMPLETE, NODE, APPLY, ARRIVE, TICK, SAMPLE, NODES_UP, SCALE_CHECK = range(8)
DEFAULT_POOL = "gpu"


@dataclass(frozen=True, slots=True)
class NodeEvent:
    time_s: float
    node: int  # numbered across the pools in their order: pool 0's nodes first
    kind: str  # "fail" | "repair"


@dataclass(frozen=True, slots=True)
class Failures:
    """Node failures: exponential with `mtbf_hours` per node (None: none) and repairs after `repair_hours` (mean),
    plus explicit events."""

    mtbf_hours: float | None = None
    repair_hours: float = 4.0
    explicit: tuple[NodeEvent, ...] = ()


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """One instance type's capacity: `nodes` nodes of `per_node` accelerators."""

    name: str
    nodes: int
    per_node: int
    autoscaling: Autoscaling | None = None  # None: a fixed pool of `nodes`; else `nodes` is the size at the start


@dataclass(frozen=True, slots=True)
class ControllerView:
    """What the production collect step can see: capacity, quotas, and per-team use and pending demand, per pool
    (instance type) in accelerators. A team's quota versions are per team: one compute quota holds all its types."""

    now_s: float
    healthy_nodes: dict[str, int]  # pool → healthy nodes
    failed_nodes: dict[str, int]
    quotas: dict[str, dict[str, int]]  # queue (team) → pool → nominal quota
    quota_versions: dict[str, int]
    quota_modified_s: dict[str, float]
    in_use: dict[str, dict[str, int]]  # queue (team) → pool → in use
    pending: dict[str, dict[str, int]]  # team → pool → pending
    # team → pool → when its oldest pending job was (re)queued (a Kueue Workload's creation time)
    oldest_pending_s: dict[str, dict[str, float]] = field(default_factory=dict)
    # Called by a controller that reads each pending workload (as collect lists Kueue Workloads): team → pool →
    # (job id, GPUs, when (re)queued) in the queue's admission order. A callable, since most controllers never ask;
    # it reads the simulation as it is, so call it during the controller call.
    pending_jobs: Callable[[], dict[str, dict[str, tuple[tuple[int, int, float], ...]]]] | None = None
    # Likewise each running (admitted and placed) job: team → pool → (job id, GPUs, when admitted, priority), as
    # collect reads a Workload's Admitted condition and spec.priority.
    running_jobs: Callable[[], dict[str, dict[str, tuple[tuple[int, int, float, int], ...]]]] | None = None
    # queue (team) → pool → its ClusterQueue as its compute quota configures it now (nominal, weight, lending,
    # borrowing limits, preemption); empty: the view does not say (a controller then assumes the hand-set settings)
    queues: dict[str, dict[str, Queue]] = field(default_factory=dict)
    # pool → its nodes that are down, by number within the pool, each True while HyperPod repairs it (a repair is
    # due: the node is labelled UnschedulablePendingReplacement), False when it failed for good
    down: dict[str, tuple[tuple[int, bool], ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Decision:
    """Quotas to set (team → pool → accelerators); `queues`: for a team whose compute quota's other settings the
    decision rewrites, its ClusterQueue in each pool as the written quota configures it (team → pool → queue);
    `needs_approval` delays them by the configured approval time; `notice_s` by as much again (the notice a plan
    that preempts gives the teams it preempts, after its approval and before its write)."""

    quotas: dict[str, dict[str, int]]
    needs_approval: bool = False
    queues: dict[str, dict[str, Queue]] = field(default_factory=dict)
    notice_s: float = 0.0

    def changes(self, queues: Sequence[QueueSpec], pool_names: Sequence[str]) -> bool:
        """Whether applying it changes any of `queues` (each of the pool its `pool` index names)."""
        for q in queues:
            pool = pool_names[q.pool]
            if self.quotas.get(q.name, {}).get(pool, q.nominal) != q.nominal:
                return True
            written = self.queues.get(q.name, {}).get(pool)
            if written is not None and settings(written) != settings(q.state()):
                return True
        return False


def settings(q: Queue) -> tuple[object, ...]:
    """What a compute quota sets of a ClusterQueue besides its nominal quota."""
    return (q.weight, q.lend, q.borrow, q.borrow_limit_percent, q.borrow_limit, q.preempt_within)


# A controller returns a decision, or None for no change.
Controller = Callable[[ControllerView], Decision | None]
# Asked about jobs waiting in a cluster (what a controller sees, the run durations it saw finish, the jobs asked
# about, a decision staged and when it applies): each job's estimate of its first start and the span of its draws.
EtaProbe = Callable[[Cluster, History, tuple[str, ...], tuple[float, dict[str, dict[str, int]]] | None],
                    dict[str, Estimate]]


@dataclass(frozen=True, slots=True)
class SimConfig:
    nodes: int = 0  # with gpus_per_node: the one pool when `pools` is empty
    gpus_per_node: int = 8
    share_unallocated: bool = False
    fair_share: bool = False
    checkpoint_s: float = 0.0
    controller_interval_s: float = 900.0
    apply_delay_s: float = 120.0
    approval_delay_s: float = 0.0
    sample_interval_s: float = 3600.0
    failures: Failures = field(default_factory=Failures)
    seed: int = 0
    label: str = "sim"
    pools: tuple[PoolSpec, ...] = ()

    def pool_specs(self) -> tuple[PoolSpec, ...]:
        return self.pools or (PoolSpec(DEFAULT_POOL, self.nodes, self.gpus_per_node),)


class Simulation:
    def __init__(self, jobs: Sequence[TraceJob], teams: Sequence[str], queues: Sequence[QueueSpec],
                 queue_of_team: Sequence[int], config: SimConfig, controller: Controller | None = None,
                 weights: Sequence[float] | None = None, eta: EtaProbe | None = None):
        """`queues` of every pool (each names its pool); `queue_of_team[t]`: team t's queue among its pool's
        queues, in their order. A job runs in the pool named by its instance type ('': the first pool). `eta`:
        asked, at each controller interval after jobs arrived, when those still pending will start (what
        `rebalancer why` would have told their teams); not asked on autoscaled pools."""
        self.cfg = config
        self.pool_specs = config.pool_specs()
        self.pool_names = [p.name for p in self.pool_specs]
        self.teams = list(teams)
        self.team_index = {t: i for i, t in enumerate(self.teams)}
        self.queues = list(queues)
        self.pq: list[list[QueueSpec]] = [[] for _ in self.pool_specs]  # each pool's queues, the cohort
        for q in self.queues:
            self.pq[q.pool].append(q)
        self.weights = list(weights) if weights is not None else [1.0] * len(self.teams)
        self.controller = controller
        self.rng = random.Random(f"{config.seed}:{config.label}")
        self._init_jobs(jobs, queue_of_team)
        self._init_queues()
        self._init_nodes()
        self.events: list[tuple[float, int, int, int, int]] = []  # (time, kind, seq, a, b)
        self.seq = 0
        self.arrival = 0
        self.now = 0.0
        self.last = 0.0
        self.window_s = max(j.submit_s for j in jobs) if jobs else 0.0
        self.any_priority = any(p != 0 for p in self.prio)
        self.versions = {q.name: 1 for q in self.queues}  # a team's compute quota covers all its pools
        self.modified = {q.name: 0.0 for q in self.queues}
        self.pending_applies = 0
        self.staged: dict[int, Decision] = {}  # quota changes waiting for their apply event
        self.states: dict[str, dict[str, Queue]] | None = None  # the queues as configured, until a write
        self.idle_ticks = 0
        self._init_accounts()
        self.end = 0.0
        self._init_autoscaling()
        self._init_estimates(eta)

    def _init_jobs(self, jobs: Sequence[TraceJob], queue_of_team: Sequence[int]) -> None:
        """One column per job attribute (id, submit time, size, priority, team, pool, queue) and per job state
        (remaining work, start, enqueued, waited, done, epoch), indexed by the job's place in the trace."""
        n = len(jobs)
        pool_index = {name: i for i, name in enumerate(self.pool_names)}
        self.job_ids = [j.job_id for j in jobs]
        self.submit = [j.submit_s for j in jobs]
        self.gpus = [j.gpus for j in jobs]
        self.prio = [j.priority for j in jobs]
        self.declared = [j.declared_s for j in jobs]  # what a job says of its run time (the controller reads it)
        self.jteam = [self.team_index[j.team] for j in jobs]
        try:
            self.jpool = [pool_index[j.instance_type] if j.instance_type else 0 for j in jobs]
        except KeyError as e:
            raise ValueError(f"a job on {e.args[0]!r}, but the cluster's pools are {', '.join(self.pool_names)}") \
                from None
        self.jqueue = [queue_of_team[t] for t in self.jteam]  # within the job's pool
        self.remaining = [j.duration_s for j in jobs]
        self.start = [-1.0] * n
        self.enq = [0.0] * n
        self.waited = [0.0] * n
        self.done = [False] * n
        self.epoch = [0] * n

    def _init_queues(self) -> None:
        """Per pool, per queue: accelerators in use, running jobs, pending jobs by priority; per pool, per team:
        running and pending accelerators."""
        npools, nt = len(self.pool_specs), len(self.teams)
        sizes = [len(qs) for qs in self.pq]
        self.usage = [[0] * k for k in sizes]
        self.running: list[list[set[int]]] = [[set() for _ in range(k)] for k in sizes]
        self.pending: list[list[dict[int, list[tuple[int, float, int]]]]] = [[{} for _ in range(k)] for k in sizes]
        self.pending_count = [[0] * k for k in sizes]
        self.team_run = [[0] * nt for _ in range(npools)]
        self.team_pending = [[0] * nt for _ in range(npools)]

    def _init_nodes(self) -> None:
        """Every node, its pool and whether it is up; each pool's capacity and use; one random stream per node for
        its failures."""
        self.node_pool = [p for p, spec in enumerate(self.pool_specs) for _ in range(spec.nodes)]
        self.nodes_up = [True] * len(self.node_pool)
        self.up_count = [spec.nodes for spec in self.pool_specs]
        self.repairs_due = 0  # repair events in the queue
        self.under_repair: set[int] = set()  # nodes down with a repair due
        self.repair_at: dict[int, list[float]] = {}  # node → the times of its explicit repairs
        self.capacity = [spec.nodes * spec.per_node for spec in self.pool_specs]
        self.used = [0] * len(self.pool_specs)
        self.node_rngs = [random.Random(f"{self.cfg.seed}:node:{i}") for i in range(len(self.node_pool))]

    def _init_accounts(self) -> None:
        """What the run measures, per pool and team: entitlements, accelerator-seconds received, entitled and
        owed, preemptions, work lost, quota changes; and the timeline the report plots."""
        npools, nt = len(self.pool_specs), len(self.teams)
        self.ent = [[0.0] * nt for _ in range(npools)]
        self.ent_dirty = [True] * npools
        self.busy_window = [0.0] * npools
        self.cap_window = [0.0] * npools
        self.received = [[0.0] * nt for _ in range(npools)]
        self.entitled = [[0.0] * nt for _ in range(npools)]
        self.deficit = [[0.0] * nt for _ in range(npools)]
        self.preemptions = [[0] * nt for _ in range(npools)]
        self.lost = [[0.0] * nt for _ in range(npools)]
        self.fail_kills = [[0] * nt for _ in range(npools)]
        self.fail_lost = [[0.0] * nt for _ in range(npools)]
        self.quota_changes = [[0] * nt for _ in range(npools)]
        self.timeline = Timeline(quota={t: [] for t in self.teams}, usage={t: [] for t in self.teams},
                                 demand={t: [] for t in self.teams},
                                 pool_busy={p: [] for p in self.pool_names},
                                 pool_capacity={p: [] for p in self.pool_names})
        pools_of: list[set[int]] = [set() for _ in self.teams]
        for team, pool in zip(self.jteam, self.jpool, strict=True):
            pools_of[team].add(pool)
        self.timeline.pools_of = {t: [self.pool_names[p] for p in sorted(pools_of[i])]
                                  for i, t in enumerate(self.teams)}
        # Cumulative received and entitled accelerator-seconds per team (over the pools) at each week's end since
        # the start: the per-week figures of `fairness_windows` are their differences.
        self.week_marks: list[tuple[list[float], list[float]]] = []

    def _init_estimates(self, eta: EtaProbe | None) -> None:
        """The estimated starts asked of `eta` (none on autoscaled pools) and what each job was told."""
        n = len(self.submit)
        self.eta = eta if not self.scaled else None
        self.first_start = [-1.0] * n
        self.estimated: list[float | None] = [None] * n  # the estimated first start a job was given
        self.likely: list[tuple[float, float | None] | None] = [None] * n  # and the likely range told with it
        # The track record as the plan step keeps it: actual ÷ estimated wait of the jobs estimated that waited
        # WAITED_S or more, and the jobs told an estimate that still wait (planning.eta.wait_ratios)
        self.outcomes: list[float] = []
        self.told_waiting: dict[int, None] = {}  # in the order told
        self.levels = LEVELS  # the levels the likely range is taken at, as the outcomes moved them
        self.asked = [False] * n  # whether it was given an answer (an estimate or none)
        self.runs_done: dict[str, list[float]] = {}  # queue → run durations of its finished jobs, oldest first
        self.declared_done: dict[str, list[float]] = {}  # queue → of those that declared: ran ÷ declared
        self.apply_at: dict[int, float] = {}  # staged decision → when it applies
        self.next_probe = 0.0
        self.probed = 0  # jobs arrived before this index were asked about

    # --- events -------------------------------------------------------------------------------------------------
    def _push(self, t: float, kind: int, a: int = 0, b: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, kind, self.seq, a, b))

    def _busy(self) -> bool:
        """Something will change without a node coming back: arrivals, running work, an apply, a controller that
        still decides."""
        if self.arrival < len(self.submit) or any(self.used) or self.pending_applies or any(self.unplaced_gpus):
            return True
        return any(any(c) for c in self.pending_count) and self.controller is not None and self.idle_ticks < 8

    def _active(self) -> bool:
        # Waiting jobs may still run once a failed node is back, if a repair is due (a node failed for good, or a
        # gang larger than the cluster, would keep the run alive forever).
        return self._busy() or (any(any(c) for c in self.pending_count) and self.repairs_due > 0)

    def _again(self, interval_s: float) -> float:
        """When a periodic event (controller run, sample, scale check) comes next. While the run only waits for a
        node to come back nothing it would see changes, so it comes at its first instant on or after that node
        event: a repair far ahead is one step, not one per interval."""
        if self._busy():
            return self.now + interval_s
        wake = min((t for t, kind, *_ in self.events if kind == NODE), default=self.now)
        return self.now + interval_s * max(1, math.ceil((wake - self.now) / interval_s))

    def _first_events(self) -> None:
        """What is due before any job arrives: each node's first failure (drawn from its own stream) and the
        explicit node events, the controller's first run, the first sample and the first scale check."""
        cfg = self.cfg
        if cfg.failures.mtbf_hours:
            for node, r in enumerate(self.node_rngs):
                self._push(r.expovariate(1 / (cfg.failures.mtbf_hours * 3600)), NODE, node, 0)
        for ev in cfg.failures.explicit:
            if not 0 <= ev.node < len(self.node_pool):
                raise ValueError(f"node event for node {ev.node}, but the cluster has nodes "
                                 f"0..{len(self.node_pool) - 1}")
            if not 0 <= ev.time_s <= HORIZON_S:
                raise ValueError(f"node event at {ev.time_s!r} s, outside the run's 0..{HORIZON_S:.0f} s")
            self._push(ev.time_s, NODE, ev.node, 0 if ev.kind == "fail" else 1)
            self.repairs_due += ev.kind != "fail"
            if ev.kind != "fail":
                self.repair_at.setdefault(ev.node, []).append(ev.time_s)
        if self.controller is not None:
            self._push(0.0, TICK)
        self._push(0.0, SAMPLE)
        if self.scaled:
            self._push(0.0, SCALE_CHECK)

    def run(self, progress: Callable[[float], None] | None = None) -> RawResult:
        self._first_events()
        n = len(self.submit)
        next_progress = 0
        while True:
            ta = self.submit[self.arrival] if self.arrival < n else math.inf
            th = self.events[0][0] if self.events else math.inf
            if ta == math.inf and th == math.inf:
                break
            t = min(ta, th)
            if self.eta is not None:
                self._probes_before(t)
            self._advance(t)
            # everything at this instant, then one scheduling pass
            while True:
                if self.events and self.events[0][0] == t and (self.events[0][1] < ARRIVE or ta != t):
                    _, kind, _, a, b = heapq.heappop(self.events)
                    self._handle(kind, a, b)
                elif ta == t:
                    self._arrive(self.arrival)
                    self.arrival += 1
                    ta = self.submit[self.arrival] if self.arrival < n else math.inf
                else:
                    break
            if self.eta is not None and self.next_probe == t:
                self._probe(t)
            for p in range(len(self.pool_specs)):
                self._schedule(p)
            if progress is not None and self.arrival >= next_progress:
                progress(self.arrival / n)
                next_progress = self.arrival + max(1, n // 200)
        for j in range(n):
            if not self.done[j] and self.start[j] < 0:
                self.waited[j] += self.end - self.enq[j]
        if progress is not None:
            progress(1.0)
        return self._result()

    def _result(self) -> RawResult:
        pools = [PoolRaw(
            name=name, busy_gpu_s_window=self.busy_window[p], capacity_gpu_s_window=self.cap_window[p],
            received_gpu_s=self.received[p], entitled_gpu_s=self.entitled[p], deficit_gpu_s=self.deficit[p],
            preemptions=self.preemptions[p], lost_gpu_s=self.lost[p], failure_kills=self.fail_kills[p],
            failure_lost_gpu_s=self.fail_lost[p], quota_changes=self.quota_changes[p])
            for p, name in enumerate(self.pool_names)]

        def total(values: list[Any]) -> Any:
            """Over the pools: a figure summed, a per-team list summed team by team."""
            if isinstance(values[0], list):
                return [sum(col) for col in zip(*values, strict=True)]
            return sum(values)

        totals = {f: total([getattr(pr, f) for pr in pools]) for f in POOL_FIELDS}
        asked = self.eta is not None
        return RawResult(teams=self.teams, end_s=self.end, window_s=self.window_s, **totals, job_team=self.jteam,
                         job_wait_s=self.waited, job_done=self.done, timeline=self.timeline, pools=pools,
                         job_pool=self.jpool, week_marks=self.week_marks,
                         job_submit_s=list(self.submit) if asked else [],
                         job_first_start_s=self.first_start if asked else [],
                         job_estimate_s=self.estimated if asked else [], job_asked=self.asked if asked else [],
                         job_likely_s=self.likely if asked else [])

    def _handle(self, kind: int, a: int, b: int) -> None:
        if kind == COMPLETE:
            if self.epoch[a] == b and not self.done[a]:
                self._complete(a)
        elif kind == NODE:
            if b == 0:
                self._fail_node(a)
            else:
                self.repairs_due -= 1
                self._repair_node(a)
        elif kind == APPLY:
            self.pending_applies -= 1
            self.apply_at.pop(a, None)
            self._apply(self.staged.pop(a))
        elif kind == TICK:
            self._tick()
        elif kind == SAMPLE:
            self._sample()
        elif kind == NODES_UP:
            self._nodes_up(a, b)
        elif kind == SCALE_CHECK:
            self._scale_down()

    def _advance(self, t: float) -> None:
        dt = t - self.last
        while (len(self.week_marks) + 1) * WEEK_S <= t:
            self._mark_week((len(self.week_marks) + 1) * WEEK_S)
        if dt > 0:
            w = self.window_s
            wdt = min(t, w) - min(self.last, w)
            for p, team_run in enumerate(self.team_run):
                if wdt > 0:
                    self.busy_window[p] += self.used[p] * wdt
                    self.cap_window[p] += self.capacity[p] * wdt
                ent = self._entitlements(p)
                received, entitled, deficit = self.received[p], self.entitled[p], self.deficit[p]
                for i, r in enumerate(team_run):
                    e = ent[i]
                    if r:
                        received[i] += r * dt
                    if e:
                        entitled[i] += e * dt
                        if e > r:
                            deficit[i] += (e - r) * dt
        self.last = t
        self.now = t

    def _entitlements(self, p: int) -> list[float]:
        """Each team's entitlement in pool p for the state since the last event (recomputed when it changed)."""
        if self.ent_dirty[p]:
            demand = [r + q for r, q in zip(self.team_run[p], self.team_pending[p], strict=True)]
            self.ent[p] = entitlements(float(self.capacity[p]), self.weights, demand)
            self.ent_dirty[p] = False
        return self.ent[p]

    def _mark_week(self, boundary: float) -> None:
        """The cumulative totals at `boundary` (inside the interval being advanced, at constant rates since
        `self.last`), before the interval's own accumulation."""
        part = boundary - self.last
        nt = len(self.teams)
        received, entitled = [0.0] * nt, [0.0] * nt
        for p, team_run in enumerate(self.team_run):
            ent = self._entitlements(p)
            for i in range(nt):
                received[i] += self.received[p][i] + team_run[i] * part
                entitled[i] += self.entitled[p][i] + ent[i] * part
        self.week_marks.append((received, entitled))

    # --- jobs ---------------------------------------------------------------------------------------------------
    def _enqueue(self, j: int) -> None:
        p, q = self.jpool[j], self.jqueue[j]
        heapq.heappush(self.pending[p][q].setdefault(self.gpus[j], []), (-self.prio[j], self.enq[j], j))
        self.pending_count[p][q] += 1
        self.team_pending[p][self.jteam[j]] += self.gpus[j]
        self.ent_dirty[p] = True

    def _arrive(self, j: int) -> None:
        self.enq[j] = self.now
        self.end = max(self.end, self.now)
        self._enqueue(j)

    def _start(self, j: int) -> None:
        """Kueue admits j; its pods start now, or, in an autoscaled pool without room, once nodes come."""
        p, q, g, t = self.jpool[j], self.jqueue[j], self.gpus[j], self.jteam[j]
        heapq.heappop(self.pending[p][q][g])
        self.pending_count[p][q] -= 1
        self.team_pending[p][t] -= g
        if self.pool_specs[p].autoscaling is not None and g > self.capacity[p] - self.used[p]:
            self.usage[p][q] += g
            self.unplaced[p].append(j)
            self.unplaced_gpus[p] += g
            return
        self.waited[j] += self.now - self.enq[j]
        self.start[j] = self.now
        self.usage[p][q] += g
        self._place(j)

    def _place(self, j: int) -> None:
        p, q, g, t = self.jpool[j], self.jqueue[j], self.gpus[j], self.jteam[j]
        if self.first_start[j] < 0:
            self.first_start[j] = self.now
            estimated = self.estimated[j]
            if estimated is not None:  # only ever set with an estimator
                self.told_waiting.pop(j, None)
                if self.now - self.submit[j] >= WAITED_S and estimated > self.submit[j]:
                    self.outcomes.append((self.now - self.submit[j]) / (estimated - self.submit[j]))
                span = self.likely[j]
                if self.now - self.submit[j] >= WAITED_S and span is not None:
                    self.levels = adapted(self.levels, self.now, span)
        self.used[p] += g
        self.team_run[p][t] += g
        self.running[p][q].add(j)
        self._push(self.now + self.remaining[j], COMPLETE, j, self.epoch[j])

    def _stop(self, j: int) -> None:
        p, q, g, t = self.jpool[j], self.jqueue[j], self.gpus[j], self.jteam[j]
        self.running[p][q].discard(j)
        self.usage[p][q] -= g
        self.used[p] -= g
        self.team_run[p][t] -= g
        self.start[j] = -1.0
        self.epoch[j] += 1
        self.ent_dirty[p] = True

    def _complete(self, j: int) -> None:
        if self.eta is not None:  # what a controller sees finish: the job's queue and how long it ran
            queue = self.pq[self.jpool[j]][self.jqueue[j]].name
            self.runs_done.setdefault(queue, []).append(self.now - self.start[j])
            declared = self.declared[j]
            if declared is not None:
                self.declared_done.setdefault(queue, []).append((self.now - self.start[j]) / declared)
        self._stop(j)
        self.done[j] = True
        self.end = max(self.end, self.now)

    def _interrupt(self, j: int) -> float:
        """Stops a running job and requeues it; returns the GPU-seconds of work lost since its last checkpoint."""
        ran = self.now - self.start[j]
        ck = self.cfg.checkpoint_s
        saved = math.floor(ran / ck) * ck if ck > 0 else 0.0
        self.remaining[j] -= saved
        self._stop(j)
        self.enq[j] = self.now
        self._enqueue(j)
        return (ran - saved) * self.gpus[j]

    def _preempt(self, j: int) -> None:
        p, t = self.jpool[j], self.jteam[j]
        self.preemptions[p][t] += 1
        self.lost[p][t] += self._interrupt(j)

    # --- scheduling (one pool's cohort at a time) ---------------------------------------------------------------
    def _limit(self, q: QueueSpec, u: int, free: int, room: float) -> float:
        return admission_limit(q.nominal, q.borrowing_room(), q.borrow, u, free, room)

    def _schedule(self, p: int) -> None:
        scaled = self.pool_specs[p].autoscaling is not None
        if scaled:
            self._place_unplaced(p)
        while True:
            self._admit(p)
            if not self._reclaim(p):
                break
        if scaled:
            self._scale_up(p)

    def _admit(self, p: int) -> None:
        queues, usage, pending, count = self.pq[p], self.usage[p], self.pending[p], self.pending_count[p]
        fair = self.cfg.fair_share
        capacity, used, held = self.capacity[p], self.used, self.unplaced_gpus
        reach = capacity if self.pool_specs[p].autoscaling is None else self._reach(p)
        while used[p] + held[p] < reach:
            free = reach - used[p] - held[p]
            room = cohort_room(queues, usage, capacity, self.cfg.share_unallocated)
            best: tuple[float, int, float, int] | None = None
            for qi, sizes in enumerate(pending):
                if not count[qi]:
                    continue
                limit = self._limit(queues[qi], usage[qi], free, room)
                if limit < 1:
                    continue
                head: tuple[int, float, int] | None = None  # BestEffortFIFO: the queue's first job that fits
                for g, heap in sizes.items():
                    if heap and g <= limit and (head is None or heap[0] < head):
                        head = heap[0]
                if head is None:
                    continue
                negp, enq, j = head
                share = fair_share_key(queues[qi], usage[qi], self.gpus[j]) if fair else 0.0
                key = (share, negp, enq, j)
                if best is None or key < best:
                    best = key
            if best is None:
                return
            self._start(best[3])

    def _heads(self, p: int) -> list[tuple[int, float, int]]:
        heads = []
        for qi, sizes in enumerate(self.pending[p]):
            if self.pending_count[p][qi]:
                heads.append(min(h[0] for h in sizes.values() if h))
        heads.sort()
        return heads

    def _reclaim(self, p: int) -> bool:
        """Preempts for the first queue head that can get its GPUs back: reclaim from borrowing queues, then
        lower-priority jobs of its own queue. True if a job was admitted that way."""
        usage = self.usage[p]
        borrowing = [qi for qi, q in enumerate(self.pq[p]) if usage[qi] > q.nominal]
        if not borrowing and not self.any_priority:
            return False
        return any(self._try_reclaim(p, j, -negp, borrowing) for negp, _, j in self._heads(p))

    def _try_reclaim(self, p: int, j: int, prio: int, borrowing: list[int]) -> bool:
        queues, running = self.pq[p], self.running[p]
        qi, g = self.jqueue[j], self.gpus[j]
        q = queues[qi]
        free = self._room(p)
        if free >= g and self.usage[p][qi] + g <= q.nominal:
            return False  # admissible without preemption; _admit declined it for the cohort, leave it
        if self.usage[p][qi] + g > q.nominal and not (q.preempt_within and self.any_priority):
            return False  # only a queue getting back its own nominal quota may reclaim
        candidates: list[tuple[int, int, float, int]] = []
        for bi in borrowing:
            if bi == qi:
                continue
            for v in running[bi]:
                if q.reclaim_lower_priority_only and self.prio[v] >= prio:
                    continue
                candidates.append((0, self.prio[v], -self.start[v], v))
        if q.preempt_within:
            candidates.extend((1, self.prio[v], -self.start[v], v) for v in running[qi] if self.prio[v] < prio)
        if not candidates:
            return False
        if free + sum(self.gpus[c[3]] for c in candidates) < g:
            return False
        victims = reclaim_victims(candidates, self.jqueue, self.gpus, queues, self.usage[p], qi, g, free)
        if victims is None:
            return False
        for v in victims:
            self._preempt(v)
        self._start(j)
        return True

    # --- capacity -----------------------------------------------------------------------------------------------
    def _reach(self, p: int) -> int:
        """What Kueue may admit in all in an autoscaled pool: it counts quota, not nodes, so the cohort's quota
        (with idle sharing at least the nodes present), within what the autoscaler can reach."""
        scaling = self.pool_specs[p].autoscaling
        assert scaling is not None
        quota = sum(q.nominal for q in self.pq[p])
        if self.cfg.share_unallocated:
            quota = max(quota, self.capacity[p])
        return min(quota, scaling.max_nodes * self.pool_specs[p].per_node)

    def _room(self, p: int) -> int:
        """Accelerators Kueue may still admit onto: free ones, or in an autoscaled pool what its reach leaves."""
        if self.pool_specs[p].autoscaling is None:
            return self.capacity[p] - self.used[p]
        return self._reach(p) - self.used[p] - self.unplaced_gpus[p]

    def _init_autoscaling(self) -> None:
        npools = len(self.pool_specs)
        self.scaled = [p for p, spec in enumerate(self.pool_specs) if spec.autoscaling is not None]
        for p in self.scaled:
            a, spec = self.pool_specs[p].autoscaling, self.pool_specs[p]
            assert a is not None
            if not a.min_nodes <= spec.nodes <= a.max_nodes:
                raise ValueError(f"pool {spec.name} starts with {spec.nodes} nodes, outside its autoscaling range "
                                 f"{a.min_nodes}..{a.max_nodes}")
        if self.scaled and (self.cfg.failures.mtbf_hours or any(
                self.pool_specs[self.node_pool[e.node]].autoscaling is not None
                for e in self.cfg.failures.explicit if 0 <= e.node < len(self.node_pool))):
            raise ValueError("node failures are not modelled in an autoscaled pool")
        self.unplaced: list[list[int]] = [[] for _ in range(npools)]  # admitted, waiting for nodes, in order
        self.unplaced_gpus = [0] * npools
        self.incoming = [0] * npools  # nodes requested, not yet there
        self.idle_since: list[list[float]] = [[] for _ in range(npools)]  # per idle node, oldest first
        self.node_steps: list[list[tuple[float, int]]] = [[(0.0, spec.nodes)] for spec in self.pool_specs]
        self.scale_ups = [0] * npools
        self.scale_check_s = min((a.check_s for spec in self.pool_specs if (a := spec.autoscaling)), default=0.0)
        self.peak_nodes = [spec.nodes for spec in self.pool_specs]

    def _place_unplaced(self, p: int) -> None:
        """Pods of admitted work start on nodes that have come (in admission order, any that fits)."""
        waiting = self.unplaced[p]
        if not waiting or self.capacity[p] <= self.used[p]:
            return
        kept = []
        for j in waiting:
            g = self.gpus[j]
            if g <= self.capacity[p] - self.used[p]:
                self.unplaced_gpus[p] -= g
                self.waited[j] += self.now - self.enq[j]
                self.start[j] = self.now
                self._place(j)
            else:
                kept.append(j)
        self.unplaced[p] = kept

    def _scale_up(self, p: int) -> None:
        """Nodes for the admitted work that cannot be placed, less what is free or already coming."""
        spec = self.pool_specs[p]
        assert spec.autoscaling is not None
        short = self.unplaced_gpus[p] - (self.capacity[p] - self.used[p]) - self.incoming[p] * spec.per_node
        if short <= 0:
            return
        n = min(-(-short // spec.per_node), spec.autoscaling.max_nodes - self.up_count[p] - self.incoming[p])
        if n > 0:
            self.incoming[p] += n
            self.scale_ups[p] += 1
            self._push(self.now + spec.autoscaling.scale_up_delay_s, NODES_UP, p, n)

    def _set_nodes(self, p: int, n: int) -> None:
        self.capacity[p] += (n - self.up_count[p]) * self.pool_specs[p].per_node
        self.up_count[p] = n
        self.peak_nodes[p] = max(self.peak_nodes[p], n)
        self.node_steps[p].append((self.now, n))
        self.ent_dirty[p] = True

    def _nodes_up(self, p: int, n: int) -> None:
        self.incoming[p] -= n
        self._set_nodes(p, self.up_count[p] + n)

    def _scale_down(self) -> None:
        """Every `check_s`: nodes idle since longer than `idle_scale_down_s` go, down to `min_nodes`."""
        for p in self.scaled:
            spec = self.pool_specs[p]
            a = spec.autoscaling
            assert a is not None
            since = self.idle_since[p]
            idle = 0 if self.unplaced[p] else (self.capacity[p] - self.used[p]) // spec.per_node
            del since[idle:]
            since.extend([self.now] * (idle - len(since)))
            expired = sum(1 for s in since if self.now - s >= a.idle_scale_down_s)
            n = min(expired, self.up_count[p] - a.min_nodes)
            if n > 0:
                del since[:n]
                self._set_nodes(p, self.up_count[p] - n)
        if self._active():
            self._push(self._again(self.scale_check_s), SCALE_CHECK)

    def node_hours(self) -> dict[str, float]:
        """Per pool, nodes × hours present over the run (to its last arrival or completion)."""
        return {name: node_seconds(steps, self.end) / 3600
                for name, steps in zip(self.pool_names, self.node_steps, strict=True)}

    def _fail_node(self, node: int) -> None:
        if not self.nodes_up[node]:
            return
        p = self.node_pool[node]
        self.nodes_up[node] = False
        self.up_count[p] -= 1
        self.capacity[p] -= self.pool_specs[p].per_node
        self.ent_dirty[p] = True
        if self.used[p] > self.capacity[p]:
            running = sorted(j for r in self.running[p] for j in r)
            self.rng.shuffle(running)
            for j in running:
                if self.used[p] <= self.capacity[p]:
                    break
                t = self.jteam[j]
                self.fail_kills[p][t] += 1
                self.fail_lost[p][t] += self._interrupt(j)
        f = self.cfg.failures
        if f.mtbf_hours:
            self._push(self.now + self.node_rngs[node].expovariate(1 / (f.repair_hours * 3600)), NODE, node, 1)
            self.repairs_due += 1
        if f.mtbf_hours or any(t > self.now for t in self.repair_at.get(node, ())):
            self.under_repair.add(node)

    def _down(self) -> dict[str, tuple[tuple[int, bool], ...]]:
        """Per fixed pool, its nodes down by number within the pool, each with whether a repair is due."""
        out: dict[str, list[tuple[int, bool]]] = {}
        first = 0
        for spec in self.pool_specs:
            if not spec.autoscaling:
                out[spec.name] = [(k, first + k in self.under_repair) for k in range(spec.nodes)
                                  if not self.nodes_up[first + k]]
            first += spec.nodes
        return {name: tuple(nodes) for name, nodes in out.items() if nodes}

    def _repair_node(self, node: int) -> None:
        if self.nodes_up[node]:
            return
        p = self.node_pool[node]
        self.nodes_up[node] = True
        self.under_repair.discard(node)
        self.up_count[p] += 1
        self.capacity[p] += self.pool_specs[p].per_node
        self.ent_dirty[p] = True
        f = self.cfg.failures
        if f.mtbf_hours and self._active():
            self._push(self.now + self.node_rngs[node].expovariate(1 / (f.mtbf_hours * 3600)), NODE, node, 0)

    # --- what `rebalancer why` would have said ---
    def _probes_before(self, t: float) -> None:
        """The controller runs before `t` (nothing changed since the last event): each asks about the jobs that
        arrived since the one before."""
        interval = self.cfg.controller_interval_s
        while self.next_probe < t:
            if self.probed == self.arrival:
                self.next_probe = math.ceil(t / interval) * interval
                return
            self._probe(self.next_probe)

    def _probe(self, at: float) -> None:
        """Asks the estimator, as of `at`, when the jobs that arrived since the last ask and still wait start."""
        assert self.eta is not None
        self.next_probe = at + self.cfg.controller_interval_s
        targets = {f"{j:08d}": j for j in range(self.probed, self.arrival) if self.first_start[j] < 0}
        self.probed = self.arrival
        if not targets:
            return
        staged = next(((self.apply_at[k], d.quotas) for k, d in self.staged.items()), None)
        history = History({q: tuple(runs[-KEPT:]) for q, runs in self.runs_done.items()},
                          {q: tuple(ratios[-KEPT:]) for q, ratios in self.declared_done.items()})
        answers = self.eta(self.observed(at), history, tuple(targets), staged)
        waiting = [(at - self.submit[k]) / told for k in list(self.told_waiting)[-TOLD_KEPT:]
                   if at - self.submit[k] >= WAITED_S and (told := (self.estimated[k] or 0.0) - self.submit[k]) > 0]
        band = error_band(self.outcomes[-OUTCOMES_KEPT:] + waiting, self.levels)
        for name, j in targets.items():
            e = answers.get(name)
            if e is not None and e.start is not None:
                self.estimated[j] = e.start
                self.likely[j] = likely_range(e, at, band)
                self.told_waiting[j] = None
            self.asked[j] = True

    def observed(self, at: float) -> Cluster:
        """The cluster as a controller sees it at `at`: each pool's healthy accelerators and queues, the jobs
        running (since when) and waiting (since when), and the run time each declares, if the trace gives one.
        Never how long a job runs: that stays in the trace."""
        pools = []
        for p, spec in enumerate(self.pool_specs):
            qs = self.pq[p]
            queues = tuple(q.state() for q in qs)
            running = tuple(Running(f"{j:08d}", qs[qi].name, float(self.gpus[j]), self.start[j], self.prio[j],
                                    self.declared[j])
                            for qi, jobs in enumerate(self.running[p]) for j in jobs)
            waiting = tuple(Waiting(f"{j:08d}", qs[qi].name, float(self.gpus[j]), enq, self.prio[j],
                                    self.declared[j])
                            for qi, sizes in enumerate(self.pending[p]) for heap in sizes.values()
                            for _, enq, j in heap)
            pools.append(Pool(spec.name, float(self.capacity[p]), queues, running, waiting))
        return Cluster(at, tuple(pools), fair_share=self.cfg.fair_share, share_unallocated=self.cfg.share_unallocated,
                       checkpoint_s=self.cfg.checkpoint_s, priorities=self.any_priority)

    # --- controller ---------------------------------------------------------------------------------------------
    def _tick(self) -> None:
        assert self.controller is not None
        if self.pending_applies:  # one execution per cluster: no new plan while one waits for approval or apply
            self._push(self.now + self.cfg.controller_interval_s, TICK)
            return
        names = self.pool_names
        quotas: dict[str, dict[str, int]] = {}
        in_use: dict[str, dict[str, int]] = {}
        for name, queues, usage in zip(names, self.pq, self.usage, strict=True):
            for q, u in zip(queues, usage, strict=True):
                if q.name in quotas:
                    quotas[q.name][name] = q.nominal
                    in_use[q.name][name] = u
                else:
                    quotas[q.name] = {name: q.nominal}
                    in_use[q.name] = {name: u}
        view = ControllerView(
            now_s=self.now, healthy_nodes=dict(zip(names, self.up_count, strict=True)),
            # an autoscaled pool has no failed nodes (failures are not modelled there): it is just its size now
            failed_nodes={name: 0 if spec.autoscaling else spec.nodes - up
                          for name, spec, up in zip(names, self.pool_specs, self.up_count, strict=True)},
            down=self._down() if any(not spec.autoscaling and spec.nodes > up for spec, up in
                                     zip(self.pool_specs, self.up_count, strict=True)) else {},
            quotas=quotas,
            quota_versions=dict(self.versions), quota_modified_s=dict(self.modified), in_use=in_use,
            pending={t: dict(zip(names, by_pool, strict=True))
                     for t, by_pool in zip(self.teams, zip(*self.team_pending, strict=True), strict=True)},
            oldest_pending_s=self._oldest_pending(), pending_jobs=self._pending_jobs, running_jobs=self._running_jobs,
            queues=self._queue_states())
        decision = self.controller(view)
        if decision is not None and decision.changes(self.queues, self.pool_names):
            self.seq += 1
            self.staged[self.seq] = decision
            self.pending_applies += 1
            delay = (self.cfg.apply_delay_s + (self.cfg.approval_delay_s if decision.needs_approval else 0.0)
                     + decision.notice_s)
            self.apply_at[self.seq] = self.now + delay
            self._push(self.now + delay, APPLY, self.seq)
            self.idle_ticks = 0
        else:
            self.idle_ticks += 1
        if self._active():
            self._push(self._again(self.cfg.controller_interval_s), TICK)

    def _pending_jobs(self) -> dict[str, dict[str, tuple[tuple[int, int, float], ...]]]:
        """Per team and pool, every pending job as (id, GPUs, when (re)queued), in admission order (priority, then
        queue time)."""
        found: dict[str, dict[str, list[tuple[int, float, int]]]] = {}
        for name, queues in zip(self.pool_names, self.pending, strict=True):
            for sizes in queues:
                for heap in sizes.values():
                    for entry in heap:
                        found.setdefault(self.teams[self.jteam[entry[2]]], {}).setdefault(name, []).append(entry)
        return {team: {pool: tuple((j, self.gpus[j], enq) for _, enq, j in sorted(entries))
                       for pool, entries in pools.items()} for team, pools in found.items()}

    def _running_jobs(self) -> dict[str, dict[str, tuple[tuple[int, int, float, int], ...]]]:
        """Per team and pool, every running job as (id, GPUs, when admitted, priority), the newest admitted first."""
        found: dict[str, dict[str, list[tuple[int, int, float, int]]]] = {}
        for name, queues in zip(self.pool_names, self.running, strict=True):
            for jobs in queues:
                for j in jobs:
                    found.setdefault(self.teams[self.jteam[j]], {}).setdefault(name, []).append(
                        (j, self.gpus[j], self.start[j], self.prio[j]))
        return {team: {pool: tuple(sorted(jobs, key=lambda r: (-r[2], r[0]))) for pool, jobs in pools.items()}
                for team, pools in found.items()}

    def _oldest_pending(self) -> dict[str, dict[str, float]]:
        """Per team and pool, when its oldest pending job was (re)queued, as a Kueue Workload's creation time."""
        oldest: dict[str, dict[str, float]] = {}
        for name, queues in zip(self.pool_names, self.pending, strict=True):
            for sizes in queues:
                for heap in sizes.values():
                    # heaps are ordered by priority first: with priorities the oldest may be anywhere in them
                    for _, enq, j in (heap if self.any_priority else heap[:1]):
                        by_pool = oldest.setdefault(self.teams[self.jteam[j]], {})
                        by_pool[name] = min(enq, by_pool.get(name, enq))
        return oldest

    def _queue_states(self) -> dict[str, dict[str, Queue]]:
        """Each team's ClusterQueue in each pool as it is configured now (made again only after a write)."""
        if self.states is None:
            self.states = {}
            for q in self.queues:
                self.states.setdefault(q.name, {})[self.pool_names[q.pool]] = q.state()
        return self.states

    def _apply(self, decision: Decision) -> None:
        """The decision's quotas written: each queue's nominal quota, and for a team whose other settings it
        rewrites, those too (a changed weight, lending, borrowing limit or preemption setting takes effect at the
        next admission, as Kueue reads a ClusterQueue's new spec)."""
        updated: set[str] = set()
        for q in self.queues:
            pool = self.pool_names[q.pool]
            new = decision.quotas.get(q.name, {}).get(pool)
            written = decision.queues.get(q.name, {}).get(pool)
            changed = new is not None and new != q.nominal
            if changed:
                assert new is not None
                q.nominal = new
                self.quota_changes[q.pool][self.team_index.get(q.name, 0)] += 1
            if written is not None and settings(written) != settings(q.state()):
                q.configure(written)
                changed = True
            if changed:
                self.states = None
                if q.name not in updated:  # one UpdateComputeQuota per team, whatever pools it changes
                    updated.add(q.name)
                    self.versions[q.name] += 1
                self.modified[q.name] = self.now

    def _sample(self) -> None:
        tl = self.timeline
        tl.times_s.append(self.now)
        tl.busy.append(sum(self.used))
        tl.capacity.append(sum(self.capacity))
        for p, name in enumerate(self.pool_names):
            tl.pool_busy[name].append(self.used[p])
            tl.pool_capacity[name].append(self.capacity[p])
        by_name: dict[str, int] = {}
        for q in self.queues:
            by_name[q.name] = by_name.get(q.name, 0) + q.nominal
        for i, t in enumerate(self.teams):
            tl.quota[t].append(by_name.get(t, 0))
            tl.usage[t].append(sum(run[i] for run in self.team_run))
            tl.demand[t].append(sum(run[i] + pend[i] for run, pend in zip(self.team_run, self.team_pending,
                                                                         strict=True)))
        if self._active():
            self._push(self._again(self.cfg.sample_interval_s), SAMPLE)
