"""Versioned task-governance resources (compute quotas, cluster scheduler configs) as the emulator stores them.

Both kinds share the same life cycle: a version that starts at 1 and grows on every update, a status that moves
Creating → Created, Updating → Updated, Deleting → Deleted (or any of the *Failed / *RollbackFailed statuses) after
a configurable number of Describe calls, and a history so Describe can answer for any earlier version.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Kind(StrEnum):
    COMPUTE_QUOTA = "compute-quota"
    SCHEDULER_CONFIG = "cluster-scheduler-config"


# The in-progress status of each write and the status it settles to.
SETTLES_TO = {"Creating": "Created", "Updating": "Updated", "Deleting": "Deleted"}


@dataclass(slots=True)
class Pending:
    """A status transition that completes after `reads_left` more Describe calls (0: on the next one)."""

    final_status: str
    reads_left: int
    failure_reason: str | None = None
    # For a failed update: the body to restore when the failure shows (the config does not change).
    restore_body: dict[str, Any] | None = None


@dataclass(slots=True)
class Resource:
    kind: Kind
    resource_id: str
    arn: str
    name: str
    cluster_arn: str
    body: dict[str, Any]
    description: str | None
    created: dt.datetime
    modified: dt.datetime
    version: int = 1
    status: str = "Creating"
    failure_reason: str | None = None
    pending: Pending | None = None
    history: dict[int, dict[str, Any]] = field(default_factory=dict)
    tags: list[dict[str, str]] = field(default_factory=list)  # ListTags / AddTags on the ARN, as moto keeps them

    @property
    def team(self) -> str | None:
        target = self.body.get("ComputeQuotaTarget")
        return target.get("TeamName") if isinstance(target, dict) else None

    @property
    def enabled(self) -> bool:
        return self.kind is Kind.COMPUTE_QUOTA and self.body.get("ActivationState", "Enabled") == "Enabled"

    @property
    def live(self) -> bool:
        """Counts towards names and teams (not on its way out)."""
        return self.status not in ("Deleting", "Deleted")

    @property
    def holds(self) -> bool:
        """Counts towards capacity: live, and not a create that failed (it never took effect)."""
        return self.live and self.status not in ("CreateFailed", "CreateRollbackFailed")

    def describe(self) -> dict[str, Any]:
        prefix = "ComputeQuota" if self.kind is Kind.COMPUTE_QUOTA else "ClusterSchedulerConfig"
        out: dict[str, Any] = {
            f"{prefix}Arn": self.arn,
            f"{prefix}Id": self.resource_id,
            "Name": self.name,
            f"{prefix}Version": self.version,
            "Status": self.status,
            "ClusterArn": self.cluster_arn,
            "CreationTime": self.created,
            "LastModifiedTime": self.modified,
            **copy.deepcopy(self.body),
        }
        if self.description is not None:
            out["Description"] = self.description
        if self.failure_reason:
            out["FailureReason"] = self.failure_reason
        return out

    def summary(self) -> dict[str, Any]:
        full = self.describe()
        full.pop("Description", None)
        full.pop("FailureReason", None)
        if self.kind is Kind.SCHEDULER_CONFIG:
            full.pop("SchedulerConfig", None)
        return full

    def record_history(self) -> None:
        self.history[self.version] = self.describe()

    def settle(self) -> None:
        """Complete the pending transition now."""
        if self.pending is None:
            return
        p, self.pending = self.pending, None
        self.status = p.final_status
        self.failure_reason = p.failure_reason
        if p.restore_body is not None:
            self.body = p.restore_body
        self.record_history()

    def on_describe(self) -> None:
        """One Describe call seen: count down the pending transition."""
        if self.pending is None:
            return
        if self.pending.reads_left <= 0:
            self.settle()
        else:
            self.pending.reads_left -= 1
