"""The discrete-event loop: arrivals, completions, node failures and repairs, controller runs, quota applies.

Capacity is a pool of GPUs (nodes × GPUs per node); placement inside nodes is not modelled (a gang job takes any free
GPUs). When a node fails and the remaining GPUs cannot hold the running jobs, jobs chosen by the seeded RNG are
killed until the rest fits (as if the scheduler packed jobs so that idle nodes fail first).
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rebalancer_tools.simulator.kueue import QueueSpec, cohort_room, fair_share_key
from rebalancer_tools.simulator.metrics import entitlements
from rebalancer_tools.simulator.results import RawResult, Timeline
from rebalancer_tools.simulator.trace import TraceJob

# event kinds, in the order they are handled at one instant
COMPLETE, NODE, APPLY, ARRIVE, TICK, SAMPLE = range(6)


@dataclass(frozen=True, slots=True)
class NodeEvent:
    time_s: float
    node: int
    kind: str  # "fail" | "repair"


@dataclass(frozen=True, slots=True)
class Failures:
    """Node failures: exponential with `mtbf_hours` per node (None: none) and repairs after `repair_hours` (mean),
    plus explicit events."""

    mtbf_hours: float | None = None
    repair_hours: float = 4.0
    explicit: tuple[NodeEvent, ...] = ()


@dataclass(frozen=True, slots=True)
class ControllerView:
    """What the production collect step can see: capacity, quotas, and per-team use and pending demand (GPUs)."""

    now_s: float
    healthy_nodes: int
    failed_nodes: int
    quotas: dict[str, int]
    quota_versions: dict[str, int]
    quota_modified_s: dict[str, float]
    in_use: dict[str, int]
    pending: dict[str, int]
    oldest_pending_s: dict[str, float] = field(default_factory=dict)  # per team with pending jobs: oldest enqueue


@dataclass(frozen=True, slots=True)
class Decision:
    """Quotas to set (team → GPUs); `needs_approval` delays them by the configured approval time."""

    quotas: dict[str, int]
    needs_approval: bool = False


# A controller returns a decision, or None for no change.
Controller = Callable[[ControllerView], Decision | None]


@dataclass(frozen=True, slots=True)
class SimConfig:
    nodes: int
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


class Simulation:
    def __init__(self, jobs: Sequence[TraceJob], teams: Sequence[str], queues: Sequence[QueueSpec],
                 queue_of_team: Sequence[int], config: SimConfig, controller: Controller | None = None,
                 weights: Sequence[float] | None = None):
        self.cfg = config
        self.teams = list(teams)
        self.team_index = {t: i for i, t in enumerate(self.teams)}
        self.queues = list(queues)
        self.weights = list(weights) if weights is not None else [1.0] * len(self.teams)
        self.controller = controller
        self.rng = random.Random(f"{config.seed}:{config.label}")
        n = len(jobs)
        self.job_ids = [j.job_id for j in jobs]
        self.submit = [j.submit_s for j in jobs]
        self.gpus = [j.gpus for j in jobs]
        self.prio = [j.priority for j in jobs]
        self.jteam = [self.team_index[j.team] for j in jobs]
        self.jqueue = [queue_of_team[t] for t in self.jteam]
        self.remaining = [j.duration_s for j in jobs]
        self.start = [-1.0] * n
        self.enq = [0.0] * n
        self.waited = [0.0] * n
        self.done = [False] * n
        self.epoch = [0] * n
        nq, nt = len(self.queues), len(self.teams)
        self.usage = [0] * nq
        self.running: list[set[int]] = [set() for _ in range(nq)]
        self.pending: list[dict[int, list[tuple[int, float, int]]]] = [{} for _ in range(nq)]
        self.pending_count = [0] * nq
        self.team_run = [0] * nt
        self.team_pending = [0] * nt
        self.nodes_up = [True] * config.nodes
        self.capacity = config.nodes * config.gpus_per_node
        self.used = 0
        self.events: list[tuple[float, int, int, int, int]] = []  # (time, kind, seq, a, b)
        self.seq = 0
        self.arrival = 0
        self.now = 0.0
        self.last = 0.0
        self.window_s = max(j.submit_s for j in jobs) if jobs else 0.0
        self.any_priority = any(p != 0 for p in self.prio)
        self.versions = [1] * nq
        self.modified = [0.0] * nq
        self.pending_applies = 0
        self.staged: dict[int, dict[str, int]] = {}  # quota changes waiting for their apply event
        self.idle_ticks = 0
        self.node_rngs = [random.Random(f"{config.seed}:node:{i}") for i in range(config.nodes)]
        self.ent = [0.0] * nt
        self.ent_dirty = True
        self.busy_window = 0.0
        self.cap_window = 0.0
        self.received = [0.0] * nt
        self.entitled = [0.0] * nt
        self.deficit = [0.0] * nt
        self.preemptions = [0] * nt
        self.lost = [0.0] * nt
        self.fail_kills = [0] * nt
        self.fail_lost = [0.0] * nt
        self.quota_changes = [0] * nt
        self.timeline = Timeline(quota={t: [] for t in self.teams}, usage={t: [] for t in self.teams},
                                 demand={t: [] for t in self.teams})
        self.end = 0.0

    # --- events -------------------------------------------------------------------------------------------------
    def _push(self, t: float, kind: int, a: int = 0, b: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, kind, self.seq, a, b))

    def _active(self) -> bool:
        if self.arrival < len(self.submit) or self.used > 0 or self.pending_applies:
            return True
        if not any(self.pending_count):
            return False
        return (self.controller is not None and self.idle_ticks < 8) or not all(self.nodes_up)

    def run(self, progress: Callable[[float], None] | None = None) -> RawResult:
        cfg = self.cfg
        if cfg.failures.mtbf_hours:
            for node, r in enumerate(self.node_rngs):
                self._push(r.expovariate(1 / (cfg.failures.mtbf_hours * 3600)), NODE, node, 0)
        for ev in cfg.failures.explicit:
            if not 0 <= ev.node < cfg.nodes:
                raise ValueError(f"node event for node {ev.node}, but the cluster has nodes 0..{cfg.nodes - 1}")
            self._push(ev.time_s, NODE, ev.node, 0 if ev.kind == "fail" else 1)
        if self.controller is not None:
            self._push(0.0, TICK)
        self._push(0.0, SAMPLE)
        n = len(self.submit)
        next_progress = 0
        while True:
            ta = self.submit[self.arrival] if self.arrival < n else math.inf
            th = self.events[0][0] if self.events else math.inf
            if ta == math.inf and th == math.inf:
                break
            t = min(ta, th)
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
            self._schedule()
            if progress is not None and self.arrival >= next_progress:
                progress(self.arrival / n)
                next_progress = self.arrival + max(1, n // 200)
        for j in range(n):
            if not self.done[j] and self.start[j] < 0:
                self.waited[j] += self.end - self.enq[j]
        if progress is not None:
            progress(1.0)
        return RawResult(
            teams=self.teams, end_s=self.end, window_s=self.window_s, busy_gpu_s_window=self.busy_window,
            capacity_gpu_s_window=self.cap_window, received_gpu_s=self.received, entitled_gpu_s=self.entitled,
            deficit_gpu_s=self.deficit, preemptions=self.preemptions, lost_gpu_s=self.lost,
            failure_kills=self.fail_kills, failure_lost_gpu_s=self.fail_lost, quota_changes=self.quota_changes,
            job_team=self.jteam, job_wait_s=self.waited, job_done=self.done, timeline=self.timeline)

    def _handle(self, kind: int, a: int, b: int) -> None:
        if kind == COMPLETE:
            if self.epoch[a] == b and not self.done[a]:
                self._complete(a)
        elif kind == NODE:
            if b == 0:
                self._fail_node(a)
            else:
                self._repair_node(a)
        elif kind == APPLY:
            self.pending_applies -= 1
            self._apply(self.staged.pop(a))
        elif kind == TICK:
            self._tick()
        elif kind == SAMPLE:
            self._sample()

    def _advance(self, t: float) -> None:
        dt = t - self.last
        if dt > 0:
            w = self.window_s
            wdt = min(t, w) - min(self.last, w)
            if wdt > 0:
                self.busy_window += self.used * wdt
                self.cap_window += self.capacity * wdt
            if self.ent_dirty:
                demand = [r + p for r, p in zip(self.team_run, self.team_pending, strict=True)]
                self.ent = entitlements(float(self.capacity), self.weights, demand)
                self.ent_dirty = False
            for i, r in enumerate(self.team_run):
                e = self.ent[i]
                if r:
                    self.received[i] += r * dt
                if e:
                    self.entitled[i] += e * dt
                    if e > r:
                        self.deficit[i] += (e - r) * dt
        self.last = t
        self.now = t

    # --- jobs ---------------------------------------------------------------------------------------------------
    def _enqueue(self, j: int) -> None:
        q = self.jqueue[j]
        heapq.heappush(self.pending[q].setdefault(self.gpus[j], []), (-self.prio[j], self.enq[j], j))
        self.pending_count[q] += 1
        self.team_pending[self.jteam[j]] += self.gpus[j]
        self.ent_dirty = True

    def _arrive(self, j: int) -> None:
        self.enq[j] = self.now
        self.end = max(self.end, self.now)
        self._enqueue(j)

    def _start(self, j: int) -> None:
        q, g, t = self.jqueue[j], self.gpus[j], self.jteam[j]
        heapq.heappop(self.pending[q][g])
        self.pending_count[q] -= 1
        self.team_pending[t] -= g
        self.waited[j] += self.now - self.enq[j]
        self.start[j] = self.now
        self.usage[q] += g
        self.used += g
        self.team_run[t] += g
        self.running[q].add(j)
        self._push(self.now + self.remaining[j], COMPLETE, j, self.epoch[j])

    def _stop(self, j: int) -> None:
        q, g, t = self.jqueue[j], self.gpus[j], self.jteam[j]
        self.running[q].discard(j)
        self.usage[q] -= g
        self.used -= g
        self.team_run[t] -= g
        self.start[j] = -1.0
        self.epoch[j] += 1
        self.ent_dirty = True

    def _complete(self, j: int) -> None:
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
        t = self.jteam[j]
        self.preemptions[t] += 1
        self.lost[t] += self._interrupt(j)

    # --- scheduling ---------------------------------------------------------------------------------------------
    def _limit(self, qi: int, free: int, room: float) -> float:
        q, u = self.queues[qi], self.usage[qi]
        within = q.nominal - u
        if q.borrow:
            return min(free, max(within, min(q.nominal + q.borrowing_room() - u, room)))
        return min(free, within)

    def _schedule(self) -> None:
        while True:
            self._admit()
            if not self._reclaim():
                return

    def _admit(self) -> None:
        queues, usage, pending = self.queues, self.usage, self.pending
        fair = self.cfg.fair_share
        while self.used < self.capacity:
            free = self.capacity - self.used
            room = cohort_room(queues, usage, self.capacity, self.cfg.share_unallocated)
            best: tuple[float, int, float, int] | None = None
            for qi, sizes in enumerate(pending):
                if not self.pending_count[qi]:
                    continue
                limit = self._limit(qi, free, room)
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

    def _heads(self) -> list[tuple[int, float, int]]:
        heads = []
        for qi, sizes in enumerate(self.pending):
            if self.pending_count[qi]:
                heads.append(min(h[0] for h in sizes.values() if h))
        heads.sort()
        return heads

    def _reclaim(self) -> bool:
        """Preempts for the first queue head that can get its GPUs back: reclaim from borrowing queues, then
        lower-priority jobs of its own queue. True if a job was admitted that way."""
        borrowing = [qi for qi, q in enumerate(self.queues) if self.usage[qi] > q.nominal]
        if not borrowing and not self.any_priority:
            return False
        return any(self._try_reclaim(j, -negp, borrowing) for negp, _, j in self._heads())

    def _try_reclaim(self, j: int, prio: int, borrowing: list[int]) -> bool:
        qi, g = self.jqueue[j], self.gpus[j]
        q = self.queues[qi]
        free = self.capacity - self.used
        if free >= g and self.usage[qi] + g <= q.nominal:
            return False  # admissible without preemption; _admit declined it for the cohort, leave it
        if self.usage[qi] + g > q.nominal and not (q.preempt_within and self.any_priority):
            return False  # only a queue getting back its own nominal quota may reclaim
        candidates: list[tuple[int, int, float, int]] = []
        for bi in borrowing:
            if bi == qi:
                continue
            for v in self.running[bi]:
                if q.reclaim_lower_priority_only and self.prio[v] >= prio:
                    continue
                candidates.append((0, self.prio[v], -self.start[v], v))
        if q.preempt_within:
            candidates.extend((1, self.prio[v], -self.start[v], v) for v in self.running[qi] if self.prio[v] < prio)
        if not candidates:
            return False
        if free + sum(self.gpus[c[3]] for c in candidates) < g:
            return False
        candidates.sort()
        usage = list(self.usage)
        victims: list[int] = []
        for _, _, _, v in candidates:
            vq = self.jqueue[v]
            if vq != qi and usage[vq] <= self.queues[vq].nominal:
                continue
            victims.append(v)
            usage[vq] -= self.gpus[v]
            free += self.gpus[v]
            if free >= g and usage[qi] + g <= q.nominal:
                for v2 in victims:
                    self._preempt(v2)
                self._start(j)
                return True
        return False

    # --- capacity -----------------------------------------------------------------------------------------------
    def _fail_node(self, node: int) -> None:
        if not self.nodes_up[node]:
            return
        self.nodes_up[node] = False
        self.capacity -= self.cfg.gpus_per_node
        self.ent_dirty = True
        if self.used > self.capacity:
            running = sorted(j for r in self.running for j in r)
            self.rng.shuffle(running)
            for j in running:
                if self.used <= self.capacity:
                    break
                t = self.jteam[j]
                self.fail_kills[t] += 1
                self.fail_lost[t] += self._interrupt(j)
        f = self.cfg.failures
        if f.mtbf_hours:
            self._push(self.now + self.node_rngs[node].expovariate(1 / (f.repair_hours * 3600)), NODE, node, 1)

    def _repair_node(self, node: int) -> None:
        if self.nodes_up[node]:
            return
        self.nodes_up[node] = True
        self.capacity += self.cfg.gpus_per_node
        self.ent_dirty = True
        f = self.cfg.failures
        if f.mtbf_hours and self._active():
            self._push(self.now + self.node_rngs[node].expovariate(1 / (f.mtbf_hours * 3600)), NODE, node, 0)

    # --- controller ---------------------------------------------------------------------------------------------
    def _tick(self) -> None:
        assert self.controller is not None
        if self.pending_applies:  # one execution per cluster: no new plan while one waits for approval or apply
            self._push(self.now + self.cfg.controller_interval_s, TICK)
            return
        up = sum(self.nodes_up)
        view = ControllerView(
            now_s=self.now, healthy_nodes=up, failed_nodes=len(self.nodes_up) - up,
            quotas={q.name: q.nominal for q in self.queues},
            quota_versions={q.name: v for q, v in zip(self.queues, self.versions, strict=True)},
            quota_modified_s={q.name: m for q, m in zip(self.queues, self.modified, strict=True)},
            in_use={q.name: self.usage[i] for i, q in enumerate(self.queues)},
            pending={t: self.team_pending[i] for i, t in enumerate(self.teams)},
            oldest_pending_s=self._oldest_pending())
        decision = self.controller(view)
        if decision is not None and any(decision.quotas.get(q.name, q.nominal) != q.nominal for q in self.queues):
            self.seq += 1
            self.staged[self.seq] = decision.quotas
            self.pending_applies += 1
            delay = self.cfg.apply_delay_s + (self.cfg.approval_delay_s if decision.needs_approval else 0.0)
            self._push(self.now + delay, APPLY, self.seq)
            self.idle_ticks = 0
        else:
            self.idle_ticks += 1
        if self._active():
            self._push(self.now + self.cfg.controller_interval_s, TICK)

    def _oldest_pending(self) -> dict[str, float]:
        """Per team, when its oldest pending job was (re)queued, as a Kueue Workload's creation time shows it."""
        oldest: dict[str, float] = {}
        for sizes in self.pending:
            for heap in sizes.values():
                # heaps are ordered by priority first: with priorities the oldest may be anywhere in them
                for _, enq, j in (heap if self.any_priority else heap[:1]):
                    team = self.teams[self.jteam[j]]
                    oldest[team] = min(enq, oldest.get(team, enq))
        return oldest

    def _apply(self, quotas: dict[str, int]) -> None:
        for qi, q in enumerate(self.queues):
            new = quotas.get(q.name)
            if new is not None and new != q.nominal:
                q.nominal = new
                self.versions[qi] += 1
                self.modified[qi] = self.now
                self.quota_changes[self.team_index.get(q.name, 0)] += 1

    def _sample(self) -> None:
        tl = self.timeline
        tl.times_s.append(self.now)
        tl.busy.append(self.used)
        tl.capacity.append(self.capacity)
        by_name = {q.name: q.nominal for q in self.queues}
        for i, t in enumerate(self.teams):
            tl.quota[t].append(by_name.get(t, 0))
            tl.usage[t].append(self.team_run[i])
            tl.demand[t].append(self.team_run[i] + self.team_pending[i])
        if self._active():
            self._push(self.now + self.cfg.sample_interval_s, SAMPLE)
