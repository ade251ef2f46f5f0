"""What the table keeps about a run besides its documents: the approval record and the run's context shown on the
review page, and the answer to taking the per-cluster lock. Plain values, shared by the DynamoDB repositories and
the in-memory ones. NamedTuples: every handler defines them at cold start, and the repositories write them field by
field, never as a whole."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, NamedTuple

# superseded: approved, but the plan went stale before it was written and was made again beyond what was approved;
# a new approval was asked for the new plan.
ApprovalStatus = Literal["pending", "approved", "rejected", "expired", "superseded"]


class ApprovalRecord(NamedTuple):
    approval_id: str
    task_token: str
    execution_arn: str
    cluster_name: str
    status: ApprovalStatus
    decide_by: datetime
    decided_by: str | None = None


class RunContext(NamedTuple):
    """What the review page shows about the run besides its plan."""

    trigger: dict[str, Any]
    started_at: str | None = None


class LockResult(NamedTuple):
    acquired: bool
    holder: str
    acquired_at: datetime
