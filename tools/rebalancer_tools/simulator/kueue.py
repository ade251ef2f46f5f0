"""Kueue's quota model as HyperPod task governance configures it: one ClusterQueue per team in one cohort.

A cluster with several instance types is modelled as one cohort per type (a pool): a team's quota of each type is
its own queue there, borrowing and lending stay within the type, as a flavor's quota does. Amounts are GPUs (or
the type's accelerators). A queue admits a gang job when its usage stays within nominal quota, or, if it may borrow,
within nominal + borrowing limit while the cohort has lendable quota left; the GPUs must also be free physically
(Kueue does not know about failed nodes; the pods of a job admitted onto missing capacity would just not start).
The rules themselves are the runtime's (rebalancer.forecast.kueue), which the controller's forecast admits by too.
"""

from __future__ import annotations

from dataclasses import dataclass

from rebalancer.forecast import kueue
from rebalancer.forecast.kueue import INF, cohort_room
from rebalancer.forecast.model import Queue

__all__ = ["INF", "QueueSpec", "cohort_room", "fair_share_key"]


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
        return kueue.borrowing_room(self.nominal, self.borrow, self.borrow_limit_percent, self.borrow_limit)

    def state(self) -> Queue:
        """The queue as a controller and a forecast see it."""
        return Queue(self.name, float(self.nominal), self.weight, self.lend, self.borrow, self.borrow_limit_percent,
                     None if self.borrow_limit is None else float(self.borrow_limit), self.preempt_within,
                     self.reclaim_lower_priority_only)

    def configure(self, written: Queue) -> None:
        """Takes what a compute quota sets besides the nominal quota from `written`."""
        self.weight, self.lend, self.borrow = written.weight, written.lend, written.borrow
        self.borrow_limit_percent = written.borrow_limit_percent
        self.borrow_limit = None if written.borrow_limit is None else round(written.borrow_limit)
        self.preempt_within = written.preempt_within


def fair_share_key(q: QueueSpec, usage: int, gpus: int) -> float:
    return kueue.fair_share_key(q.nominal, q.weight, usage, gpus)
