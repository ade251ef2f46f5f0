"""Seeded, scriptable fault injection.

A rule says which call it hits (operation, optionally the quota's team or name), when (skip the first `skip`
matching calls, then fire `times` times, each with `probability` drawn from the injector's seeded RNG) and what
happens: a ThrottlingException (400, botocore retries it), a 5xx, a slow status transition, a write that ends in
any failure status of SchedulerResourceStatus (CreateFailed, CreateRollbackFailed, UpdateFailed,
UpdateRollbackFailed, DeleteFailed, DeleteRollbackFailed; `update-failed` is `failed` with UpdateFailed), an
"external edit" that bumps the quota's version just before our write is processed, or a node of a cluster that
fails as the call arrives (`node-failure`: the call itself is answered as usual, so a node can fail, say, while a
writer polls DescribeComputeQuota for its decreases to settle).
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class FaultKind(StrEnum):
    THROTTLE = "throttle"
    SERVER_ERROR = "server-error"
    SLOW = "slow"
    UPDATE_FAILED = "update-failed"
    FAILED = "failed"
    EXTERNAL_EDIT = "external-edit"
    NODE_FAILURE = "node-failure"


# The failure statuses a write can end in, by the verb of the operation (SchedulerResourceStatus in the model).
FAILURE_STATUSES = {"Create": ("CreateFailed", "CreateRollbackFailed"),
                    "Update": ("UpdateFailed", "UpdateRollbackFailed"),
                    "Delete": ("DeleteFailed", "DeleteRollbackFailed")}
FAILING = frozenset({FaultKind.FAILED, FaultKind.UPDATE_FAILED})


def verb_of(status: str) -> str:
    return status.removesuffix("Failed").removesuffix("Rollback")


# Faults answered before the operation runs (the request has no effect); the others change how it runs.
WIRE_FAULTS = frozenset({FaultKind.THROTTLE, FaultKind.SERVER_ERROR})


@dataclass(slots=True)
class FaultRule:
    kind: FaultKind
    operation: str | None = None  # e.g. "UpdateComputeQuota"; None: any SageMaker operation
    team: str | None = None  # only calls on this team's quota
    name: str | None = None  # only calls on the quota / config with this name
    skip: int = 0
    times: int | None = 1  # None: every matching call
    probability: float = 1.0
    status_code: int = 500  # SERVER_ERROR: 500, 502, 503 or 504
    extra_reads: int = 3  # SLOW: Describe calls that still see the in-progress status
    reason: str = "Injected failure: the cluster rejected the new quota."  # FAILED, UPDATE_FAILED
    status: str | None = None  # FAILED: the failure status; None: the operation's plain *Failed
    edit: dict[str, Any] | None = None  # EXTERNAL_EDIT: body fields to set; None: a small decrease
    cluster: str | None = None  # NODE_FAILURE: the cluster (name or ARN) whose node fails
    node: str | None = None  # NODE_FAILURE: its node id
    seen: int = 0
    fired: int = 0

    def __post_init__(self) -> None:
        self.kind = FaultKind(self.kind)
        if self.kind is FaultKind.SERVER_ERROR and not 500 <= self.status_code <= 599:
            raise ValueError(f"status_code: a server error needs a 5xx status, got {self.status_code}")
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError(f"probability: must be within [0, 1], got {self.probability}")
        if self.kind is FaultKind.NODE_FAILURE and not (self.cluster and self.node):
            raise ValueError("cluster, node: a node failure names the cluster and the node that fails")
        if self.kind is FaultKind.UPDATE_FAILED:
            self.status = self.status or "UpdateFailed"
        every = [s for pair in FAILURE_STATUSES.values() for s in pair]
        if self.status is not None and self.status not in every:
            raise ValueError(f"status: one of {', '.join(every)}, got {self.status!r}")
        if self.status is not None and self.operation is not None and not self.operation.startswith(
                verb_of(self.status)):
            raise ValueError(f"status: {self.status} cannot be the outcome of {self.operation}")

    def failure_status(self, operation: str) -> str | None:
        """The status this rule makes `operation` end in, or None when it is not about that kind of write."""
        verb = next((v for v in FAILURE_STATUSES if operation.startswith(v)), None)
        if verb is None:
            return None
        if self.status is None:
            return f"{verb}Failed"
        return self.status if verb_of(self.status) == verb else None

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.fired >= self.times

    def matches(self, operation: str, team: str | None, name: str | None) -> bool:
        if self.operation is not None and self.operation != operation:
            return False
        if self.team is not None and self.team != team:
            return False
        if self.kind in FAILING and self.failure_status(operation) is None:
            return False
        return self.name is None or self.name == name


@dataclass(frozen=True, slots=True)
class FiredFault:
    kind: FaultKind
    operation: str
    team: str | None
    name: str | None


@dataclass(slots=True)
class FaultInjector:
    seed: int = 0
    rules: list[FaultRule] = field(default_factory=list)
    log: list[FiredFault] = field(default_factory=list)
    _rng: random.Random = field(init=False, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def reseed(self, seed: int) -> None:
        with self._lock:
            self.seed = seed
            self._rng = random.Random(seed)

    def add(self, rule: FaultRule) -> FaultRule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()
            self.log.clear()

    def take(self, kinds: frozenset[FaultKind], operation: str, *, team: str | None = None,
             name: str | None = None) -> FaultRule | None:
        """The first live rule of one of `kinds` that fires on this call (counting it), or None."""
        with self._lock:
            for rule in self.rules:
                if rule.kind not in kinds or rule.exhausted or not rule.matches(operation, team, name):
                    continue
                rule.seen += 1
                if rule.seen <= rule.skip:
                    continue
                if rule.probability < 1.0 and self._rng.random() >= rule.probability:
                    continue
                rule.fired += 1
                self.log.append(FiredFault(rule.kind, operation, team, name))
                return rule
        return None
