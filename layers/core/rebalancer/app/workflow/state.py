"""What the state machine carries between its task steps: the run every step is given (`RunRef`), each step's input
read through a model (a malformed input is an InvalidInput naming the step and the field: a PermanentError, which
the ASL's Catch routes to the failure path and nothing retries, never a KeyError from deep inside a step), the small
result each step returns for the later states to read (`PlanResult`, `ApplyResult`, `VerifyResult`), the kinds of
message the notify step is asked for, the run's stored plan and the quotas it started from read back, and the bound
on a list in the execution's state (Step Functions allows 256 KB; big documents stay in DynamoDB).

A state passes a step only what that step's input model reads, and a step returns only what a later state reads:
tests/unit/test_state_machine_data_flow.py holds statemachines/rebalance.asl.json to these models."""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, NonNegativeInt, PositiveInt, StringConstraints, model_validator

from rebalancer.domain.plan import Plan
from rebalancer.domain.quotas import ClusterSchedulerConfig, ComputeQuota
from rebalancer.errors import InvalidInput, PermanentError
from rebalancer.parsing.text import bounded_lines
from rebalancer.parsing.validation import load_model, stored_model

if TYPE_CHECKING:

    # Recorded here, read whole only by the planner (run_plan.load_snapshot).
    from rebalancer.domain.snapshot import Snapshot

Kind = Literal["approval_request", "notice", "applied", "dry_run", "rejected", "expired", "rolled_back",
               "rollback_failed", "failed", "budget", "budget_summary", "reservation_started", "reservation_ended"]
# What a Notify state asks for: the message of the run's end, or (`news`) the run's NEWS (app.workflow.news).
NotifyKind = Literal["notice", "applied", "dry_run", "rejected", "expired", "rolled_back", "rollback_failed", "failed",
                     "news"]
MAX_STATE_LINES = 20  # console edits named in the execution's state (the whole list is in the stored plan)
MAX_STATE_LINE_BYTES = 1024


class RunRef(BaseModel):
    """One run: what the state machine's Begin state passes to every step, or what the CLI makes for itself."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    cluster_name: str
    execution_name: str
    execution_arn: str
    trigger: dict[str, Any] = {}
    started_at: str | None = None
    source: str = "controller"  # who ran it, in every audit record: "controller" (the workflow) or "cli"


class Artifacts(Protocol):
    """A run's stored documents (SNAPSHOT, RECHECK, CONTEXT, PLAN, BASIS, APPLY, SCHEDULER, OUTLOOK, NEWS):
    rebalancer.adapters.dynamodb.artifacts;
    rebalancer_tools.fakes.memory_store.MemoryArtifacts."""

    def put(self, execution: str, kind: Any, document: Any) -> None: ...
    def get(self, execution: str, kind: Any) -> Any: ...


class Started(BaseModel):
    """What the writing steps (apply, rollback) read of a run's stored snapshot: the quotas and the scheduler config
    as they were when the run started. The rest (nodes, demand) is the planner's: at 1,000 teams a snapshot holds
    ~22,000 nodes that these steps would validate for nothing, and its two dozen models stay off their cold start."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    quotas: tuple[ComputeQuota, ...] = ()
    scheduler_config: ClusterSchedulerConfig | None = None


def record_snapshot(artifacts: Artifacts, run: RunRef, snapshot: "Snapshot", *, again: bool = False) -> None:
    """The run's SNAPSHOT, what its plan is made from; `again`: the cluster read again before an approved plan is
    written (RECHECK), kept apart so that the snapshot stays the one beside the plan's recorded context (a plan
    found fresh is written as planned, and replays offline from that pair)."""
    artifacts.put(run.execution_name, "RECHECK" if again else "SNAPSHOT", snapshot.model_dump(mode="json"))


def stored_snapshot(artifacts: Artifacts, run: RunRef, *, again: bool = False) -> Any:
    """The run's SNAPSHOT; `again`: the cluster read again (RECHECK) when it was, else the SNAPSHOT."""
    doc = (again and artifacts.get(run.execution_name, "RECHECK")) or artifacts.get(run.execution_name, "SNAPSHOT")
    if doc is None:
        raise PermanentError(f"no snapshot stored for execution {run.execution_name}")
    return doc


def load_started(artifacts: Artifacts, run: RunRef) -> Started:
    return Started.model_validate(stored_snapshot(artifacts, run))


def load_plan(artifacts: Artifacts, run: RunRef) -> Plan:
    doc = artifacts.get(run.execution_name, "PLAN")
    if doc is None:
        raise PermanentError(f"no plan stored for execution {run.execution_name}")
    return stored_model(Plan, doc, f"the plan of run {run.execution_name}",
                        "the cluster's next run records one it reads (`rebalancer history` shows this one's outcome)")


Name = Annotated[str, StringConstraints(min_length=1, max_length=80)]
M = TypeVar("M", bound=BaseModel)


class StepInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class RunInput(StepInput):
    """Collect, Apply: `run` from the Begin state; every step's input holds it (the logs' correlation id), and the
    rest a step reads comes from its store."""

    run: RunRef

    @model_validator(mode="after")
    def _names(self) -> "RunInput":
        for field in ("cluster_name", "execution_name", "execution_arn"):
            value = getattr(self.run, field)
            if not value or len(value) > 2048:
                raise ValueError(f"run.{field} must be a non-empty name (got {value[:60]!r})")
        return self


class Recheck(StepInput):
    """Plan, run again once an approval arrives: compare the approved plan with the cluster collected again."""

    approval_round: PositiveInt = 1  # the round of approval that was decided


class CollectInput(RunInput):
    """`again`: the Recollect state's, the cluster read again after an approval or a notice (record_snapshot);
    `written`: the Observe state's, the cluster read once the write is verified, to see what Kueue preempted
    (app.workflow.preempted)."""

    again: bool = False
    written: bool = False


class PlanInput(RunInput):
    recheck: Recheck | None = None


class RollbackInput(RunInput):
    error: dict[str, Any] | None = None  # the error that sent the run there ({"Error", "Cause"})


class VerifyApply(StepInput):
    """What the Apply step wrote, as its result (ApplyResult) says."""

    quota_ids: tuple[Name, ...] = ()
    scheduler_config_id: Name | None = None


class VerifyInput(RunInput):
    attempt: NonNegativeInt
    apply: VerifyApply


class NotifyInput(RunInput):
    """`approval_round` and `notes` as the Plan step's result says them (defaults: the run asked no approval, or
    failed before it planned); `error` the one that sent the run to this state."""

    kind: NotifyKind
    approval_round: PositiveInt = 1
    notes: tuple[str, ...] = ()
    error: dict[str, Any] | None = None


class ApprovalRequest(RunInput):
    """RequestApproval's payload: the task token to store, the round of approval the Plan step's result is in, how
    long an approver has, what the messages say about a recheck, the approval API's address."""

    action: Literal["request"]
    task_token: Annotated[str, StringConstraints(min_length=1)]
    approval_round: PositiveInt
    approval_timeout_seconds: PositiveInt
    notes: tuple[str, ...] = ()
    base_url: Annotated[str, StringConstraints(min_length=1)]


# --- what the steps return into the execution's state (the later states read every field) -------------------------
class StepResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def as_state(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class PlanResult(StepResult):
    """Decide routes on `decision` and Announce on `news` (the lines of the run's NEWS); RequestApproval waits
    `approval_timeout_seconds` and, with Recheck and the Notify states, reads the `approval_round` and the `notes`
    (what a recheck found, summarised); WaitForNotice waits `notice_seconds` once the teams a plan preempts were
    told (`notice`)."""

    decision: Literal["no_change", "dry_run", "approve", "notice", "apply", "stale"]
    approval_round: PositiveInt
    approval_timeout_seconds: PositiveInt
    notice_seconds: NonNegativeInt
    notes: list[str]
    news: NonNegativeInt


class ApplyResult(StepResult):
    """What Verify polls."""

    quota_ids: list[str]
    scheduler_config_id: str | None


class VerifyResult(StepResult):
    """Verified routes on `done`, WaitBeforeVerify waits `wait_seconds`, Verify counts `attempt`."""

    done: bool
    attempt: PositiveInt
    wait_seconds: NonNegativeInt


def parse(model: type[M], event: Any, step: str) -> M:
    if not isinstance(event, dict):
        raise InvalidInput(f"expected an object, got {type(event).__name__}", source=f"{step} input")
    return load_model(model, event, f"{step} input")


def run_of(event: Any, step: str) -> RunRef:
    return parse(RunInput, event, step).run


def summarised(lines: Sequence[str], limit: int = MAX_STATE_LINES) -> list[str]:
    """At most `limit` lines for the execution's state (Step Functions allows 256 KB), each once and cut to
    MAX_STATE_LINE_BYTES, the last one counting the rest: a list in the state is at most `limit` × that, whatever
    the plan holds. The stored plan and apply report keep every line."""
    return bounded_lines(lines, limit=limit, line_bytes=MAX_STATE_LINE_BYTES,
                         rest="… and {n} more (all of them are in the run's stored record)")


