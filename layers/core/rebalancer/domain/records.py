"""What the table keeps about a run besides its documents: the approval record and the run's context shown on the
review page, and the answer to taking the per-cluster lock. Plain values, shared by the DynamoDB repositories and
the in-memory ones; the repositories write them field by field, never as a whole."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

# superseded: approved, but the plan went stale before it was written and was made again beyond what was approved;
# a new approval was asked for the new plan.
ApprovalStatus = Literal["pending", "approved", "rejected", "expired", "superseded"]


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    approval_id: str
    task_token: str
    execution_arn: str
    cluster_name: str
    status: ApprovalStatus
    decide_by: datetime
    decided_by: str | None = None


@dataclass(frozen=True, slots=True)
class RunContext:
    """What the review page shows about the run besides its plan."""

    trigger: dict[str, Any]
    started_at: str | None = None


@dataclass(frozen=True, slots=True)
class LockResult:
    """The per-cluster lock as it stands after an attempt to take it (or to release it)."""

    acquired: bool
    holder: str  # a controller run's execution name, or a CLI command's run name
    acquired_at: datetime
    expires_at: datetime | None = None
    run_arn: str | None = None  # a controller run's execution ARN (whether it still runs is Step Functions' answer)
    by: str | None = None  # a lease taken from the command line: who holds it (their AWS identity)
    followup: str | None = None  # why a run must follow the holder's (a change came during it)
    followup_machine: str | None = None  # the state machine that follow-up runs on, as the trigger asked for it
    followup_lease_seconds: int | None = None  # and the lock's time-to-live for that run
