"""A forward simulation of the cluster from one moment: each pool's Kueue cohort admits by the rules of
rebalancer.forecast.kueue (queue heads in fair-sharing order, BestEffortFIFO within a queue, borrowing within the
limit while the cohort lends, a queue taking back its nominal quota from borrowers, LowerPriority preemption within
a queue), running workloads end after the time `Durations` estimates, and the controller (`Controller`: the
caller's planner) re-plans the quotas every interval, its decision applied after the apply delay. No workload
arrives after the moment the forecast starts from: it answers when each workload waiting now starts if nothing
else comes. Pure and deterministic; bounded by `horizon_s`, the controller's `max_replans` and `work` (queue heads
looked at: what a scheduling pass costs grows with the queues that wait, so a bound on time at 1,000 teams is a bound
on them). A caller with a deadline of its own (the plan step's Lambda timeout) passes a `Deadline` too: the one
bound that depends on the machine, so that a cluster larger than the work bound was set for cannot stop a run."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from rebalancer.forecast.deadline import Deadline
from rebalancer.forecast.kueue import borrowing_room, cohort_room, fair_share_key, reclaim_victims
from rebalancer.forecast.model import Cluster, NoStart, Pool, Queue, Running, Start, Waiting

Quotas = Mapping[str, Mapping[str, float]]  # team → pool → nominal quota
DAY_S = 86_400.0
# Queue heads one forecast may look at: where many teams wait in one pool, each scheduling pass looks at all of them;
# at 300,000 the plan step's three forecasts at 1,000 teams take a few seconds (benchmarks/outlook_bench.py), and at
# the bench scenarios' 8-15 teams no forecast comes near it.
WORK = 300_000


class Durations(Protocol):
    """How long each workload is expected to run: a running one from now on (it has run `at − started`), a
    waiting one in all."""

    def remaining(self, job: Running, at: float) -> float: ...
    def duration(self, job: Waiting) -> float: ...


@dataclass(frozen=True, slots=True)
class Controller:
    """The controller in the forecast: `replan` is called every `interval_s` with the cluster as the forecast has
    it then and returns the quotas to set (None: no change), applied `apply_delay_s` later; no new plan while one
    waits to be applied, and at most `max_replans` plans. `staged`: a decision already taken, and when it applies."""

    replan: Callable[[Cluster], Quotas | None]
    interval_s: float = 900.0
    apply_delay_s: float = 120.0
    max_replans: int = 16
    staged: tuple[float, Quotas] | None = None
    # The plans of another forecast from the same moment, by the time each was made: replayed instead of planned
    # (the same controller, the same ticks, no planner call).
    replayed: Mapping[float, Quotas] | None = None

    def replaying(self, plans: Mapping[float, Quotas]) -> Controller:
        return replace(self, replayed=plans)


@dataclass(frozen=True, slots=True)
class Forecast:
    """When each waiting workload asked about first starts, and the plans the controller made (by time)."""

    starts: dict[str, Start]
    plans: dict[float, Quotas]


@dataclass(slots=True)
class _Queue:
    """A queue's working state: its rules, and its nominal quota and the room above it, which change when a
    decision applies. The rules the admission loop reads most are copied to fields of their own."""

    rules: Queue
    weight: float = field(init=False)
    lend: bool = field(init=False)
    borrow: bool = field(init=False)
    preempt_within: bool = field(init=False)
    lower_only: bool = field(init=False)
    nominal: float = field(init=False)
    above: float = field(init=False)

    def __post_init__(self) -> None:
        q = self.rules
        self.weight, self.lend, self.borrow = q.weight, q.lend, q.borrow
        self.preempt_within, self.lower_only = q.preempt_within, q.reclaim_lower_priority_only
        self.set_nominal(q.nominal)

    def set_nominal(self, nominal: float) -> None:
        self.nominal = nominal
        self.above = borrowing_room(nominal, self.borrow, self.rules.borrow_limit_percent, self.rules.borrow_limit)


class _Run:
    def __init__(self, cluster: Cluster, durations: Durations, controller: Controller | None) -> None:
        self.cluster, self.controller = cluster, controller
        self.now = cluster.at
        self.pools = cluster.pools
        self.queues = [[_Queue(q) for q in p.queues] for p in cluster.pools]
        self.queue_of = [{q.team: i for i, q in enumerate(p.queues)} for p in cluster.pools]
        self.borrows = [any(q.borrow for q in p.queues) for p in cluster.pools]
        self.capacity = [p.capacity for p in cluster.pools]
        self.used = [0.0] * len(cluster.pools)
        self.usage = [[0.0] * len(p.queues) for p in cluster.pools]
        self.pending: list[list[dict[float, list[tuple[int, float, int]]]]] = [[{} for _ in p.queues]
                                                                              for p in cluster.pools]
        self.count = [[0] * len(p.queues) for p in cluster.pools]
        self.active: list[set[int]] = [set() for _ in cluster.pools]  # per pool, the queues with work waiting
        self.looked = 0  # queue heads looked at
        self.running: list[list[set[int]]] = [[set() for _ in p.queues] for p in cluster.pools]
        jobs: list[tuple[int, Running | Waiting]] = []
        for p, pool in enumerate(cluster.pools):
            jobs += [(p, r) for r in pool.running]
            jobs += [(p, w) for w in pool.waiting]
        order = sorted(range(len(jobs)), key=[j.job for _, j in jobs].__getitem__)
        self.jobs = [jobs[i][1] for i in order]
        self.pool = [jobs[i][0] for i in order]
        n = len(self.jobs)
        self.gpus = [j.accelerators for j in self.jobs]
        self.prio = [j.priority for j in self.jobs]
        self.queue = [self._queue_index(p, j.team) for p, j in zip(self.pool, self.jobs, strict=True)]
        self.enq = [0.0] * n
        self.start = [-1.0] * n
        self.first_start = [-1.0] * n
        self.wanted: set[int] = set()
        self.left = 0  # of the wanted, those not started yet
        self.work = [0.0] * n
        self.epoch = [0] * n
        self.events: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self._load(durations)
        self.staged = controller.staged if controller else None
        self.replans = 0
        self.tick_at = (cluster.at + controller.interval_s
                        if controller and (controller.max_replans or controller.staged) else math.inf)
        self.plans: dict[float, Quotas] = {}
        self.evicted: list[int] = []  # the workloads preempted, in the order Kueue took them

    def _load(self, durations: Durations) -> None:
        """The cluster as the forecast starts: each running workload placed with the run time it has left, each
        waiting one queued."""
        for j, job in enumerate(self.jobs):
            if isinstance(job, Running):
                self.work[j] = (self.now - job.started) + max(0.0, durations.remaining(job, self.now))
                self.start[j] = job.started
                self._place(j)
            else:
                self.work[j] = max(0.0, durations.duration(job))
                self.enq[j] = job.queued
                self._enqueue(j)

    def _queue_index(self, p: int, team: str) -> int:
        try:
            return self.queue_of[p][team]
        except KeyError:
            raise ValueError(f"a workload of team {team!r} in pool {self.pools[p].name}, which lists no queue of "
                             "that team") from None

    # --- workloads ---
    def _enqueue(self, j: int) -> None:
        p, q = self.pool[j], self.queue[j]
        heapq.heappush(self.pending[p][q].setdefault(self.gpus[j], []), (-self.prio[j], self.enq[j], j))
        self.count[p][q] += 1
        self.active[p].add(q)

    def _place(self, j: int) -> None:
        p, q, g = self.pool[j], self.queue[j], self.gpus[j]
        self.usage[p][q] += g
        self.used[p] += g
        self.running[p][q].add(j)
        self.seq += 1
        heapq.heappush(self.events, (self.start[j] + self.work[j], self.seq, j, self.epoch[j]))

    def _admit_job(self, j: int) -> None:
        p, q, g = self.pool[j], self.queue[j], self.gpus[j]
        sizes = self.pending[p][q]
        heapq.heappop(sizes[g])
        if not sizes[g]:
            del sizes[g]
        self.count[p][q] -= 1
        if not self.count[p][q]:
            self.active[p].discard(q)
        self.start[j] = self.now
        if self.first_start[j] < 0:
            self.first_start[j] = self.now
            if j in self.wanted:
                self.left -= 1
        self._place(j)

    def _stop(self, j: int) -> None:
        p, q, g = self.pool[j], self.queue[j], self.gpus[j]
        self.running[p][q].discard(j)
        self.usage[p][q] -= g
        self.used[p] -= g
        self.epoch[j] += 1

    def _preempt(self, j: int) -> None:
        ck = self.cluster.checkpoint_s
        ran = self.now - self.start[j]
        self.work[j] -= math.floor(ran / ck) * ck if ck > 0 else 0.0
        self._stop(j)
        self.start[j] = -1.0
        self.enq[j] = self.now
        self._enqueue(j)
        self.evicted.append(j)

    # --- one cohort's scheduling pass ---
    def schedule(self, p: int) -> None:
        while True:
            self._admit(p)
            if not self._reclaim(p):
                return

    def _admit(self, p: int) -> None:
        queues, usage, pending = self.queues[p], self.usage[p], self.pending[p]
        capacity, fair, gpus = self.capacity[p], self.cluster.fair_share, self.gpus
        borrowing = self.borrows[p]
        while self.used[p] < capacity:
            free = capacity - self.used[p]
            # what the cohort lends matters only where a queue borrows
            room = cohort_room(queues, usage, capacity, self.cluster.share_unallocated) if borrowing else 0.0
            best: tuple[float, int, float, int] | None = None
            self.looked += len(self.active[p])
            for qi in self.active[p]:
                sizes = pending[qi]
                q = queues[qi]
                # kueue.admission_limit, inlined: this loop is most of a forecast's time (the property test holds
                # the forecast to the simulator, which calls the function)
                u, nominal = usage[qi], q.nominal
                limit = min(free, max(nominal - u, min(nominal + q.above - u, room)) if q.borrow else nominal - u)
                if limit < 1:
                    continue
                head: tuple[int, float, int] | None = None  # BestEffortFIFO: the queue's first job that fits
                for g, heap in sizes.items():
                    if g <= limit and (head is None or heap[0] < head):
                        head = heap[0]
                if head is None:
                    continue
                negp, enq, j = head
                share = fair_share_key(q.nominal, q.weight, usage[qi], gpus[j]) if fair else 0.0
                key = (share, negp, enq, j)
                if best is None or key < best:
                    best = key
            if best is None:
                return
            self._admit_job(best[3])

    def _reclaim(self, p: int) -> bool:
        queues, usage = self.queues[p], self.usage[p]
        borrowing = [qi for qi, q in enumerate(queues) if usage[qi] > q.nominal]
        priorities = self.cluster.priorities
        if not borrowing and not priorities:
            return False
        # Without priorities only a queue below its nominal quota may reclaim (_try_reclaim): the others' heads
        # are not looked at, which changes no outcome.
        pending = self.pending[p]
        self.looked += len(self.active[p])
        heads = sorted(min(h[0] for h in pending[qi].values()) for qi in self.active[p]
                       if priorities or usage[qi] < queues[qi].nominal)
        if not heads:
            return False
        # what each borrowing queue runs: a head that could not start even with all of it (and with what its own
        # queue runs) reclaims nothing, which _try_reclaim would find only after listing every victim
        lent = {bi: usage[bi] for bi in borrowing}
        return any(self._try_reclaim(p, j, -negp, borrowing, lent) for negp, _, j in heads)

    def _try_reclaim(self, p: int, j: int, prio: int, borrowing: list[int], lent: dict[int, float]) -> bool:
        queues, running = self.queues[p], self.running[p]
        qi, g = self.queue[j], self.gpus[j]
        q = queues[qi]
        free = self.capacity[p] - self.used[p]
        if free >= g and self.usage[p][qi] + g <= q.nominal:
            return False
        if self.usage[p][qi] + g > q.nominal and not (q.preempt_within and self.cluster.priorities):
            return False
        if free + sum(lent.values()) - lent.get(qi, 0.0) + (self.usage[p][qi] if q.preempt_within else 0.0) < g:
            return False
        candidates: list[tuple[int, int, float, int]] = [
            (0, self.prio[v], -self.start[v], v) for bi in borrowing if bi != qi for v in running[bi]
            if not (q.lower_only and self.prio[v] >= prio)]
        if q.preempt_within:
            candidates.extend((1, self.prio[v], -self.start[v], v) for v in running[qi] if self.prio[v] < prio)
        if not candidates or free + sum(self.gpus[c[3]] for c in candidates) < g:
            return False
        victims = reclaim_victims(candidates, self.queue, self.gpus, queues, self.usage[p], qi, g, free)
        if victims is None:
            return False
        for v in victims:
            self._preempt(v)
        self._admit_job(j)
        return True

    # --- the controller ---
    def cluster_now(self) -> Cluster:
        pools = []
        for p, pool in enumerate(self.pools):
            queues = tuple(replace(q.rules, nominal=q.nominal) for q in self.queues[p])
            running = tuple(Running(self.jobs[j].job, self.jobs[j].team, self.gpus[j], self.start[j], self.prio[j],
                                    self.jobs[j].declared, self.jobs[j].limit)
                            for qset in self.running[p] for j in sorted(qset))
            waiting = tuple(Waiting(self.jobs[j].job, self.jobs[j].team, self.gpus[j], enq, self.prio[j],
                                    self.jobs[j].declared, self.jobs[j].limit)
                            for sizes in self.pending[p] for heap in sizes.values() for _, enq, j in sorted(heap))
            pools.append(Pool(pool.name, pool.capacity, queues, running, waiting))
        return replace(self.cluster, at=self.now, pools=tuple(pools))

    def apply(self, quotas: Quotas) -> None:
        for p, pool in enumerate(self.pools):
            for q in self.queues[p]:
                new = quotas.get(q.rules.team, {}).get(pool.name)
                if new is not None:
                    q.set_nominal(new)

    def advance(self, t: float) -> set[int]:
        """Everything at time `t`: the runs that end, the plan that applies, the controller's run; returns the pools
        whose cohort changed."""
        self.now = t
        dirty: set[int] = set()
        while self.events and self.events[0][0] == t:
            _, _, j, epoch = heapq.heappop(self.events)
            if self.epoch[j] == epoch:
                self._stop(j)
                self.start[j] = -1.0
                dirty.add(self.pool[j])
        if self.staged is not None and self.staged[0] == t:
            quotas = self.staged[1]
            self.staged = None
            self.apply(quotas)
            dirty.update(range(len(self.pools)))
        if t == self.tick_at:
            self.tick()
        return dirty

    def start_of(self, j: int, stopped: NoStart) -> Start:
        """When a waiting workload first started, or why not (`stopped`: why the forecast ended)."""
        if self.first_start[j] >= 0:
            return Start(self.first_start[j])
        if self.gpus[j] > self.capacity[self.pool[j]]:
            return Start(None, "larger_than_pool")
        return Start(None, stopped)

    def tick(self) -> None:
        """A controller run at `tick_at` (now): a plan unless one waits to be applied; the next run's time."""
        c = self.controller
        if c is None:
            return
        if self.staged is None and self.replans < c.max_replans:
            self.replans += 1
            quotas = c.replayed.get(self.now) if c.replayed is not None else c.replan(self.cluster_now())
            if quotas is not None and any(quotas.get(q.rules.team, {}).get(pool.name, q.nominal) != q.nominal
                                          for p, pool in enumerate(self.pools) for q in self.queues[p]):
                self.staged = (self.now + c.apply_delay_s, quotas)
                self.plans[self.now] = quotas
        more = self.replans < c.max_replans or self.staged is not None
        self.tick_at = self.tick_at + c.interval_s if more else math.inf


def forecast(cluster: Cluster, durations: Durations, *, targets: Collection[str] | None = None,
             controller: Controller | None = None, horizon_s: float = 90 * DAY_S, work: int = WORK,
             deadline: Deadline | None = None) -> Forecast:
    """When each waiting workload (of `targets`, default all) first starts, or why it does not: larger than its
    pool, never admitted as the quotas stand (nothing left that would change them), not within `horizon_s` of the
    cluster's moment, not within the `work` the forecast may do, or not before `deadline`."""
    run = _Run(cluster, durations, controller)
    wanted = {j for j, job in enumerate(run.jobs)
              if isinstance(job, Waiting) and (targets is None or job.job in targets)}
    run.wanted, run.left = wanted, len(wanted)
    end = cluster.at + horizon_s
    stopped: NoStart = "never_admitted"
    dirty = set(range(len(run.pools)))  # the pools whose cohort changed since their last scheduling pass
    while True:
        for p in sorted(dirty):
            run.schedule(p)
        if not run.left:
            break
        t_event = run.events[0][0] if run.events else math.inf
        t_apply = run.staged[0] if run.staged is not None else math.inf
        t = min(t_event, t_apply, run.tick_at)
        if t == math.inf:
            break
        if t > end or run.looked > work:
            stopped = "beyond_horizon" if t > end else "beyond_work"
            break
        if deadline is not None and deadline.passed():
            stopped = "out_of_time"
            break
        dirty = run.advance(t)
    return Forecast({run.jobs[j].job: run.start_of(j, stopped) for j in wanted}, run.plans)


class _Now:
    """Durations for a pass that does not advance time: none is read."""

    def remaining(self, job: Running, at: float) -> float:
        return 0.0

    def duration(self, job: Waiting) -> float:
        return 0.0


def preempted(cluster: Cluster, quotas: Quotas) -> list[Running]:
    """The workloads running in `cluster` that Kueue preempts once `quotas` are written: each pool's scheduling
    pass (admission, then a queue taking back its nominal quota from borrowers, lowest priority and newest admitted
    first) at the moment of the write, in the order Kueue takes them. Time does not advance: what would be preempted
    later, as work arrives or ends, is not the write's doing."""
    run = _Run(cluster, _Now(), None)
    run.apply(quotas)
    for p in range(len(run.pools)):
        run.schedule(p)
    return [job for job in dict.fromkeys(run.jobs[j] for j in run.evicted) if isinstance(job, Running)]
