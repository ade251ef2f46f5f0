"""What a planning run produces: per-team allocations, the changes with their reasons, and the API requests in the
order they must be applied. Shared by the CLI, the Lambdas, the simulator and the audit log."""

import functools
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
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
class Hold:
    """What keeps a team's amount in a pool from what the policy wants (rebalancer.engine.stability): the rule,
    the words that follow "gets A because" in the change's reason, and when it ends (None: no set time — min_step
    and protection last as long as their cause, max_move until the next run)."""

    rule: str  # the rule's name in rebalancer.engine.stability.RULES (cooldown, min_step, protected, max_move,
    # budget), "capacity" when the shrink cut it, "entries" when its quota would need more than 15 resource entries
    text: str
    until: datetime | None = None

    @property
    def label(self) -> str:
        """The hold in a few words, for a column or a summary: `cooldown until 10:42 UTC`, `min_step`."""
        return f"{self.rule} until {until_text(self.until)}" if self.until is not None else self.rule


def until_text(at: datetime) -> str:
    """When a hold ends, as reasons say it: `Wed 02 Dec 10:42 UTC`."""
    return f"{at.astimezone(UTC):%a %d %b %H:%M} UTC"


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
    # What the policy wants when a hold keeps the team from it (None: the change gets what the policy wants), and
    # that hold. A row of Plan.held has after == before: the hold keeps the whole change back.
    wanted: float | None = None
    hold: Hold | None = None

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


# The preemptions a plan lists (its record, every message and page show them): the largest by GPU-hours, the rest
# counted (Plan.preemptions_unlisted) and still in Plan.preempted_gpu_hours.
PREEMPTIONS_LISTED = 100


class Preemption(Frozen):
    """A running workload that the plan's writes would make Kueue preempt (rebalancer.planning.preemptions): its
    team, name, pool and accelerators, and how long it has run (its admission to the snapshot's time; None: not
    read). A preempted workload loses the work since its last checkpoint, which the controller cannot see: what it
    ran is what is at risk."""

    team: str
    workload: str
    pool: str
    accelerators: float
    ran_s: float | None = None

    @property
    def gpu_hours(self) -> float:
        """Accelerator-hours at risk: its accelerators times how long it has run (0 when that was not read)."""
        return self.accelerators * (self.ran_s or 0.0) / 3600


def ran_text(seconds: float | None) -> str:
    """How long a workload has run, as messages say it: `3h 20m`, `45m`, `unknown`."""
    if seconds is None:
        return "unknown"
    minutes = int(seconds // 60)
    return f"{minutes // 60}h {minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def preemption_line(p: Preemption) -> str:
    """`research/pretrain-7b on ml.p5.48xlarge: 8 accelerators, ran 3h 20m (26.7 GPU-hours)`."""
    return (f"{p.team}/{p.workload} on {p.pool}: {p.accelerators:g} accelerators, ran {ran_text(p.ran_s)} "
            f"({p.gpu_hours:.1f} GPU-hours)")


def preemption_summary(preemptions: Iterable[Preemption], unlisted: int, gpu_hours: float) -> str:
    """`3 running workloads, 42.5 GPU-hours of work at risk` (what follows "preempts"); empty when none."""
    n = len(list(preemptions)) + unlisted
    if not n:
        return ""
    return f"{n} running workload{'s' if n != 1 else ''}, {gpu_hours:.1f} GPU-hours of work at risk"


class Plan(Frozen):
    cluster_name: str
    cluster_arn: str
    taken_at: datetime
    mode: Literal["auto", "approve", "dry-run"]
    # allocations[team][instance type or MIG pool][resource] = amount
    allocations: dict[str, dict[str, dict[str, float]]] = Field(default_factory=dict)
    changes: tuple[Change, ...] = ()
    # What the policy wants and a hold keeps back entirely (after == before, `wanted` and `hold` set); a change a
    # hold keeps back in part is in `changes`, with its `wanted` and `hold`.
    held: tuple[Change, ...] = ()
    requests: tuple[QuotaRequest, ...] = ()
    requires_approval: bool = False
    approval_reasons: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    # Settings the quota requests above rewrite besides amounts (shown to the approver), and the cluster's
    # scheduler config: apply `scheduler_requests` (at most one) before the quota requests.
    field_changes: tuple[FieldChange, ...] = ()
    scheduler_requests: tuple[SchedulerRequest, ...] = ()
    # The running workloads Kueue would preempt once the requests are written, the largest by GPU-hours first (at
    # most PREEMPTIONS_LISTED; `preemptions_unlisted` counts the rest), and the GPU-hours at risk over all of them.
    preemptions: tuple[Preemption, ...] = ()
    preemptions_unlisted: int = 0
    preempted_gpu_hours: float = 0.0

    @property
    def preempted_teams(self) -> tuple[str, ...]:
        """The teams whose running work the plan would preempt (of the workloads it lists), sorted."""
        return tuple(sorted({p.team for p in self.preemptions}))

    @property
    def is_empty(self) -> bool:
        return not self.requests and not self.scheduler_requests

    @property
    def applies(self) -> bool:
        """Whether anything would be written (a dry run never writes)."""
        return not self.is_empty and self.mode != "dry-run"

    @property
    def wants_nothing(self) -> bool:
        """Whether the policy wants nothing changed: no change, none held back, no setting rewritten."""
        return not self.changes and not self.held and not self.field_changes and not self.scheduler_requests

    def headline(self) -> str | None:
        """The plan's one-line state when it changes no amount: `no change needed` only when nothing is wanted;
        `nothing changes now: 2 changes held back (cooldown until …)` when holds keep back all that is wanted."""
        if self.changes:
            return None
        if self.held:
            labels = ", ".join(dict.fromkeys(c.hold.label for c in self.held if c.hold is not None))
            n = len(self.held)
            return (f"{self.cluster_name}: nothing changes now: {n} change{'s' if n != 1 else ''} held back"
                    + (f" ({labels})" if labels else ""))
        return None if self.field_changes else f"{self.cluster_name}: no change needed"

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
            "held": [c.model_dump(mode="json", exclude_none=True) for c in self.held],
            "requests": [{"operation": r.operation, "parameters": r.parameters} for r in self.requests],
            "requires_approval": self.requires_approval,
            "approval_reasons": list(self.approval_reasons),
            "warnings": list(self.warnings),
            "preemptions": [p.model_dump(mode="json") for p in self.preemptions],
            "preempted_gpu_hours": round(self.preempted_gpu_hours, 3),
        }
        if self.preemptions_unlisted:
            out["preemptions_unlisted"] = self.preemptions_unlisted
        if self.field_changes:
            out["field_changes"] = [c.model_dump(mode="json") for c in self.field_changes]
        if self.scheduler_requests:
            out["scheduler_requests"] = [r.model_dump(mode="json") for r in self.scheduler_requests]
        return out

