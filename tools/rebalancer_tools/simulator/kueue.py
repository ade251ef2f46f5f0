"""Kueue's quota model as HyperPod task governance configures it: one ClusterQueue per team in one cohort.

A cluster with several instance types is modelled as one cohort per type (a pool): a team's quota of each type is
its own queue there, borrowing and lending stay within the type, as a flavor's quota does. Amounts are GPUs (or
the type's accelerators). A queue admits a gang job when its usage stays within nominal quota, or, if it may borrow,
within nominal + borrowing limit while the cohort has lendable quota left; the GPUs must also be free physically
(Kueue does not know about failed nodes; the pods of a job admitted onto missing capacity would just not start).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

INF = math.inf


@dataclass(slots=True)
class QueueSpec:
    """One ClusterQueue. `borrow_limit_percent` is HyperPod's BorrowLimit (percent of nominal);
    `borrow_limit` an absolute limit in GPUs (AbsoluteBorrowLimits). Neither set: unlimited borrowing."""

    name: str
    nominal: int
    weight: float = 1.0
    lend: bool = True
    borrow: bool = True
    borrow_limit_percent: float | None = None
    borrow_limit: int | None = None
    preempt_within: bool = True  # PreemptTeamTasks=LowerPriority
    reclaim_lower_priority_only: bool = False  # reclaimWithinCohort: LowerPriority instead of Any
    pool: int = 0  # the capacity pool (instance type) this queue's quota is of: an index into SimConfig.pools

    def borrowing_room(self) -> float:
        """How far above nominal this queue may go."""
        if not self.borrow:
            return 0.0
        limits = [INF]
        if self.borrow_limit_percent is not None:
            limits.append(self.nominal * self.borrow_limit_percent / 100)
        if self.borrow_limit is not None:
            limits.append(float(self.borrow_limit))
        return min(limits)


def cohort_room(queues: list[QueueSpec], usage: list[int], capacity: int, share_unallocated: bool) -> float:
    """Lendable quota still unused in the cohort. Capacity no quota covers is lendable when idle sharing is on."""
    requestable = 0.0
    used = 0.0
    nominal_total = 0
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


def fair_share_key(q: QueueSpec, usage: int, gpus: int) -> float:
    """Kueue fair sharing: the queue's borrowed share after admitting the job, divided by its weight."""
    borrowed = usage + gpus - q.nominal
    if borrowed <= 0:
        return 0.0
    return INF if q.weight <= 0 else borrowed / q.weight
