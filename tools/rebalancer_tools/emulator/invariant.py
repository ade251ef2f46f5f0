"""The invariant monitor: after every write, do the enabled quotas of the cluster fit its healthy capacity?

It only records; it never rejects a write (AWS does not either). Tests read the records to prove that an apply
lowers quotas before raising others, so the sum never exceeds capacity mid-way (`violations`), and that no write
raised a pool above its healthy capacity, whatever it held before (`raised_above_capacity`): after a node fails,
the pool is above capacity until a run lowers it (a violation without any write), but no write may make it worse.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from rebalancer_tools.emulator.capacity import Key

# Allocations are compared with a little slack for ratio-filled vCPU / memory fractions.
_EPSILON = 1e-6


@dataclass(frozen=True, slots=True)
class Excess:
    instance_type: str
    resource: str
    allocated: float
    capacity: float


@dataclass(frozen=True, slots=True)
class InvariantRecord:
    seq: int
    operation: str  # the API operation or control action that wrote
    cluster_arn: str
    target: str | None  # quota name, node id, instance group
    excess: tuple[Excess, ...]
    raised: tuple[Excess, ...] = ()  # of `excess`, what this write raised (the sum grew, and is above capacity)

    @property
    def ok(self) -> bool:
        return not self.excess


def raised_of(excess: tuple[Excess, ...], before: dict[Key, float]) -> tuple[Excess, ...]:
    return tuple(e for e in excess if e.allocated > before.get((e.instance_type, e.resource), 0.0) + _EPSILON)


def excess_of(allocated: dict[Key, float], capacity: dict[Key, float]) -> tuple[Excess, ...]:
    out = [
        Excess(t, r, amount, capacity.get((t, r), 0.0))
        for (t, r), amount in sorted(allocated.items())
        if amount > capacity.get((t, r), 0.0) + _EPSILON
    ]
    return tuple(out)


@dataclass(slots=True)
class InvariantMonitor:
    records: list[InvariantRecord] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def record(self, operation: str, cluster_arn: str, target: str | None,
               allocated: dict[Key, float], capacity: dict[Key, float],
               before: dict[Key, float] | None = None) -> InvariantRecord:
        """`before`: what the quotas asked for before this write (None: the write changed no quota)."""
        excess = excess_of(allocated, capacity)
        with self._lock:
            rec = InvariantRecord(len(self.records) + 1, operation, cluster_arn, target, excess,
                                  raised_of(excess, before) if before is not None else ())
            self.records.append(rec)
            return rec

    def violations(self, *, since: int = 0, api_only: bool = False) -> list[InvariantRecord]:
        """Records after sequence number `since` where the quotas exceeded capacity. `api_only` drops records of
        control actions (a node failing can break the invariant without any API write)."""
        return [r for r in self.records
                if r.seq > since and not r.ok and (not api_only or not r.operation.startswith("control:"))]

    def raised_above_capacity(self, *, since: int = 0) -> list[InvariantRecord]:
        """Records after sequence number `since` of API writes that raised a pool above its healthy capacity: the
        pool's quotas asked for more than before the write, and more than the capacity."""
        return [r for r in self.records if r.seq > since and r.raised and not r.operation.startswith("control:")]

    @property
    def last_seq(self) -> int:
        return len(self.records)

    def clear(self) -> None:
        with self._lock:
            self.records.clear()
