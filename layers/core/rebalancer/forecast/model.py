"""What a forecast of the cluster starts from, and what it answers. The cluster as the controller sees it at one
moment: per pool (one instance type, one Kueue cohort) its healthy accelerators, each team's ClusterQueue, the
workloads running (since when) and those waiting (since when). No field says how long a workload runs or will run:
the durations come from rebalancer.forecast.durations, from what finished before, so a forecast cannot read them.
Times are seconds on the caller's clock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Queue:
    """One team's ClusterQueue in the pool: its nominal quota, how far it may borrow (BorrowLimit percent of
    nominal and an absolute limit, the smaller of those set; neither: unlimited), whether it lends and borrows, its
    fair-sharing weight, whether it preempts its own lower-priority work (PreemptTeamTasks LowerPriority), and
    whether it reclaims from borrowers only their lower-priority work."""

    team: str
    nominal: float
    weight: float = 1.0
    lend: bool = True
    borrow: bool = True
    borrow_limit_percent: float | None = None
    borrow_limit: float | None = None
    preempt_within: bool = True
    reclaim_lower_priority_only: bool = False  # reclaimWithinCohort LowerPriority instead of Any


@dataclass(frozen=True, slots=True)
class Running:
    """`declared`: the run time the workload declares (seconds, its `kueue.x-k8s.io/estimated-duration`);
    `limit`: the longest it may run before Kueue stops it (`spec.maximumExecutionTimeSeconds`). None: not said."""

    job: str
    team: str
    accelerators: float
    started: float
    priority: int = 0
    declared: float | None = None
    limit: float | None = None


@dataclass(frozen=True, slots=True)
class Waiting:
    """`declared` and `limit` as a Running's."""

    job: str
    team: str
    accelerators: float
    queued: float
    priority: int = 0
    declared: float | None = None
    limit: float | None = None


@dataclass(frozen=True, slots=True)
class Pool:
    name: str
    capacity: float
    queues: tuple[Queue, ...]
    running: tuple[Running, ...] = ()
    waiting: tuple[Waiting, ...] = ()


@dataclass(frozen=True, slots=True)
class Cluster:
    """`fair_share`: Kueue orders queue heads by borrowed share ÷ weight; `share_unallocated`: capacity no quota
    covers is lent (HyperPod's idle-resource sharing); `checkpoint_s`: a preempted workload loses the work since
    its last checkpoint (0: all of it); `priorities`: the cluster has priority classes in use (a queue may then
    preempt its own lower-priority work)."""

    at: float
    pools: tuple[Pool, ...]
    fair_share: bool = True
    share_unallocated: bool = True
    checkpoint_s: float = 0.0
    priorities: bool = False


NoStart = Literal["larger_than_pool", "never_admitted", "beyond_horizon", "beyond_work", "out_of_time"]


@dataclass(frozen=True, slots=True)
class Start:
    """When a waiting workload starts in one forecast: `at` (seconds), or None with the reason it does not."""

    at: float | None
    reason: NoStart | None = None
