"""What a planning run produces: per-team allocations, the changes with their reasons, and the API requests in the
order they must be applied. Shared by the CLI, the Lambdas, the simulator and the audit log."""

import functools
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import ConfigDict, Field, TypeAdapter
from pydantic.dataclasses import dataclass

from rebalancer.domain.frozen import Frozen
from rebalancer.domain.pools import pool_name

Operation = Literal["UpdateComputeQuota", "CreateComputeQuota"]
SchedulerOperation = Literal["CreateClusterSchedulerConfig", "UpdateClusterSchedulerConfig"]
CLUSTER = "(cluster)"  # FieldChange.team of a scheduler-config field


# Not Frozen (a dataclass, see its docstring): the decorator freezes it; its amounts come from the engine, not a file.


class Amounts(Protocol):
    """A change of one amount: a plan's Change, a row of the review page."""

    @property
    def resource(self) -> str: ...
    @property
    def before(self) -> float: ...
    @property
    def after(self) -> float: ...


RESOURCE_ORDER = ("accelerators", "partitions", "vcpu", "memory_gib")
UNITS = {"accelerators": "accelerators", "partitions": "MIG partitions", "vcpu": "vCPUs", "memory_gib": "GiB"}


def taken(changes: Iterable[Amounts], resource: str = "accelerators") -> float:
    """What the changes take from teams in `resource`: the figure approval.moved_accelerators is compared with."""
    return sum(c.before - c.after for c in changes if c.resource == resource and c.after < c.before)


def movement(changes: Iterable[Amounts]) -> str:
    """Both directions per resource, the threshold's figure first: `56 accelerators taken from teams, 12 given`;
    the approval page, Slack and the email all show this line."""
    changes = list(changes)
    parts = []
    for resource in sorted({c.resource for c in changes}, key=lambda r: (RESOURCE_ORDER.index(r)
                                                                          if r in RESOURCE_ORDER else 99, r)):
        down = taken(changes, resource)
        up = sum(c.after - c.before for c in changes if c.resource == resource and c.after > c.before)
        if down or up:
            parts.append(f"{down:g} {UNITS.get(resource, resource)} taken from teams, {up:g} given")
    return "; ".join(parts) or "nothing"


@dataclass(frozen=True, slots=True, kw_only=True, config=ConfigDict(extra="forbid"))
class Change:
    """One team's allocation of one pool moving from `before` to `after`, and why.

    A validated dataclass rather than a model: a plan at 1,000 teams × 15 types carries ~11k of them, which as
    models cost twice the validation time and three objects each for the garbage collector. The plan's JSON is the
    same; `model_dump` and `model_copy` keep the models' calls."""

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

    @property
    def pool(self) -> str:
        return pool_name(self.instance_type, self.mig_profile)

    def model_dump(self, **options: Any) -> dict[str, Any]:
        """The change as a dict, as BaseModel.model_dump (`mode="json"`, `exclude_none=True`, …)."""
        dumped: dict[str, Any] = _change_adapter().dump_python(self, **options)
        return dumped

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> "Change":
        """A copy with some fields replaced, validated."""
        return replace(self, **(update or {}))


@functools.cache
def _change_adapter() -> TypeAdapter[Change]:
    return TypeAdapter(Change)


class QuotaRequest(Frozen):
    """One API call, with exactly the parameters boto3 takes (`client.update_compute_quota(**parameters)`)."""

    operation: Operation
    team: str
    parameters: dict[str, Any]


class FieldChange(Frozen):
    """A setting other than an allocation amount that the plan rewrites: a quota field (sharing, preemption,
    fair-share weight, explicit vCPU / memory, activation, the quota's existence) or a scheduler-config field.
    `field` is the API path (`ComputeQuotaConfig.ResourceSharingConfig.BorrowLimit`); None means absent."""

    team: str  # CLUSTER for the scheduler config
    field: str
    before: Any = None
    after: Any = None
    console_edit: bool = False  # the value was set outside the rebalancer and will be replaced
    reason: str = ""


class SchedulerRequest(Frozen):
    """One Create/UpdateClusterSchedulerConfig call, with exactly the parameters boto3 takes."""

    operation: SchedulerOperation
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
    # Settings the quota requests above rewrite besides amounts (shown to the approver), and the cluster's
    # scheduler config: apply `scheduler_requests` (at most one) before the quota requests.
    field_changes: tuple[FieldChange, ...] = ()
    scheduler_requests: tuple[SchedulerRequest, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.requests and not self.scheduler_requests

    @property
    def applies(self) -> bool:
        """Whether anything would be written (a dry run never writes)."""
        return not self.is_empty and self.mode != "dry-run"

    @property
    def console_edits(self) -> tuple[FieldChange, ...]:
        return tuple(c for c in self.field_changes if c.console_edit)

    def moved(self, resource: str = "accelerators") -> float:
        """Total amount of `resource` taken from teams in this plan (each unit moved counted once)."""
        return taken(self.changes, resource)

    def output(self) -> dict[str, Any]:
        """The documented JSON output of `rebalancer plan --format json`."""
        out: dict[str, Any] = {
            "cluster": self.cluster_name,
            "allocations": self.allocations,
            "changes": [c.model_dump(mode="json", exclude_none=True) for c in self.changes],
            "requests": [{"operation": r.operation, "parameters": r.parameters} for r in self.requests],
            "requires_approval": self.requires_approval,
            "approval_reasons": list(self.approval_reasons),
            "warnings": list(self.warnings),
        }
        if self.field_changes:
            out["field_changes"] = [c.model_dump(mode="json") for c in self.field_changes]
        if self.scheduler_requests:
            out["scheduler_requests"] = [r.model_dump(mode="json") for r in self.scheduler_requests]
        return out

