"""What a planning run produces: per-team allocations, the changes with their reasons, and the API requests in the
order they must be applied. Shared by the CLI, the Lambdas, the simulator and the audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Operation = Literal["UpdateComputeQuota", "CreateComputeQuota"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Change(Frozen):
    """One team's allocation of one pool moving from `before` to `after`, and why."""

    team: str
    instance_type: str
    resource: Literal["accelerators", "vcpu", "memory_gib", "partitions"]
    mig_profile: str | None = None
    before: float
    after: float
    reason: str

    @property
    def delta(self) -> float:
        return self.after - self.before


class QuotaRequest(Frozen):
    """One API call, with exactly the parameters boto3 takes (`client.update_compute_quota(**parameters)`)."""

    operation: Operation
    team: str
    parameters: dict[str, Any]


class Plan(Frozen):
    cluster_name: str
    cluster_arn: str
    taken_at: datetime
    mode: Literal["auto", "approve", "dry-run"]
    # allocations[team][instance type or MIG pool][resource] = amount
    allocations: dict[str, dict[str, dict[str, float]]] = Field(default_factory=dict)
    changes: tuple[Change, ...] = ()
    requests: tuple[QuotaRequest, ...] = ()
    requires_approval: bool = False
    approval_reasons: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.requests

    @property
    def applies(self) -> bool:
        """Whether anything would be written (a dry run never writes)."""
        return bool(self.requests) and self.mode != "dry-run"

    def moved(self, resource: str = "accelerators") -> float:
        """Total amount of `resource` taken from teams in this plan (each unit moved counted once)."""
        return sum(-c.delta for c in self.changes if c.resource == resource and c.delta < 0)

    def output(self) -> dict[str, Any]:
        """The documented JSON output of `rebalancer plan --format json`."""
        return {
            "cluster": self.cluster_name,
            "allocations": self.allocations,
            "changes": [c.model_dump(mode="json", exclude_none=True) for c in self.changes],
            "requests": [{"operation": r.operation, "parameters": r.parameters} for r in self.requests],
            "requires_approval": self.requires_approval,
            "approval_reasons": list(self.approval_reasons),
            "warnings": list(self.warnings),
        }
