"""The invariant monitor: after every write, do the enabled quotas of the cluster fit its healthy capacity?

It only records; it never rejects a write (AWS does not either). Tests read the records to prove that an apply
lowers quotas before raising others, so the sum never exceeds capacity mid-way.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from rebalancer_tools.emulator.capacity import Key

# Allocations are compared with a little slack for ratio-filled vCPU / memory fractions.
_EPSILON = 1e-6


@dataclass(frozen=True)
class Excess:
    instance_type: str
    resource: str
    allocated: float
    capacity: float


@dataclass(frozen=True)
class InvariantRecord:
    seq: int
    operation: str  # the API operation or control action that wrote
    cluster_arn: str
    target: str | None  # quota name, node id, instance group
    excess: tuple[Excess, ...]

    @property
    def ok(self) -> bool:
        return not self.excess


def excess_of(allocated: dict[Key, float], capacity: dict[Key, float]) -> tuple[Excess, ...]:
    out = [
        Excess(t, r, amount, capacity.get((t, r), 0.0))
        for (t, r), amount in sorted(allocated.items())
        if amount > capacity.get((t, r), 0.0) + _EPSILON
    ]
    return tuple(out)


@dataclass
class InvariantMonitor:
    records: list[InvariantRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def record(self, operation: str, cluster_arn: str, target: str | None,
               allocated: dict[Key, float], capacity: dict[Key, float]) -> InvariantRecord:
        with self._lock:
            rec = InvariantRecord(len(self.records) + 1, operation, cluster_arn, target,
                                  excess_of(allocated, capacity))
            self.records.append(rec)
            return rec

    def violations(self, *, since: int = 0, api_only: bool = False) -> list[InvariantRecord]:
        """Records after sequence number `since` where the quotas exceeded capacity. `api_only` drops records of
        control actions (a node failing can break the invariant without any API write)."""
        return [r for r in self.records
                if r.seq > since and not r.ok and (not api_only or not r.operation.startswith("control:"))]

    @property
    def last_seq(self) -> int:
        return len(self.records)

    def clear(self) -> None:
        with self._lock:
            self.records.clear()
