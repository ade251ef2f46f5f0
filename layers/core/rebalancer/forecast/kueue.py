"""Kueue's admission rules as HyperPod task governance configures them, for one cohort (one instance type's pool):
how far a ClusterQueue may borrow, what the cohort still lends, which queue head goes first under fair sharing, and
how many accelerators a queue may admit onto now. The forecast (rebalancer.forecast.engine) and the simulator in
the tools both admit by these. Pure arithmetic on accelerators."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Protocol

INF = math.inf


class Lending(Protocol):
    """What the cohort's lending reads of a queue."""

    @property
    def nominal(self) -> float: ...
    @property
    def lend(self) -> bool: ...


def borrowing_room(nominal: float, borrow: bool, percent: float | None, absolute: float | None) -> float:
    """How far above nominal a queue may go: HyperPod's BorrowLimit (percent of nominal) and AbsoluteBorrowLimits,
    the smaller of those set; neither set: unlimited; a queue that does not borrow: 0."""
    if not borrow:
        return 0.0
    limits = [INF]
    if percent is not None:
        limits.append(nominal * percent / 100)
    if absolute is not None:
        limits.append(float(absolute))
    return min(limits)


def cohort_room(queues: Iterable[Lending], usage: Iterable[float], capacity: float,
                share_unallocated: bool) -> float:
    """Lendable quota still unused in the cohort. Capacity no quota covers is lendable when idle sharing is on."""
    requestable = 0.0
    used = 0.0
    nominal_total = 0.0
    for q, u in zip(queues, usage, strict=True):
        nominal_total += q.nominal
        if q.lend:
            requestable += q.nominal
            used += u
        else:
            used += max(0, u - q.nominal)
    if share_unallocated:
        requestable += max(0, capacity - nominal_total)
    return requestable - used


def fair_share_key(nominal: float, weight: float, usage: float, gpus: float) -> float:
    """Kueue fair sharing: the queue's borrowed share after admitting the job, divided by its weight."""
    borrowed = usage + gpus - nominal
    if borrowed <= 0:
        return 0.0
    return INF if weight <= 0 else borrowed / weight


def admission_limit(nominal: float, room_above: float, borrow: bool, usage: float, free: float,
                    room: float) -> float:
    """The largest workload a queue may admit now: within its nominal quota, or up to its borrowing room while the
    cohort lends that much, and never more than is free."""
    within = nominal - usage
    if borrow:
        return min(free, max(within, min(nominal + room_above - usage, room)))
    return min(free, within)


def reclaim_victims(candidates: Iterable[tuple[int, int, float, int]], queue_of: Sequence[int],
                    size: Sequence[float], queues: Sequence[Lending], usage: Sequence[float], qi: int,
                    need: float, free: float) -> list[int] | None:
    """Kueue's reclaim for the head of queue `qi` that needs `need` with `free` free: the candidates in order
    (each `(own queue, priority, -start, workload)`: others' borrowed work before the queue's own lower-priority
    work, the lowest priority and the newest first), a queue's work passed over once it is back within its nominal
    quota, taken until the head fits within its own nominal quota. The workloads to preempt, or None if it never
    fits."""
    left = list(usage)
    victims: list[int] = []
    for *_, v in sorted(candidates):
        vq = queue_of[v]
        if vq != qi and left[vq] <= queues[vq].nominal:
            continue
        victims.append(v)
        left[vq] -= size[v]
        free += size[v]
        if free >= need and left[qi] + need <= queues[qi].nominal:
            return victims
    return None
