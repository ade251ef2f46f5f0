"""The state machine's task steps: collect, plan, apply, verify, rollback. Each takes the run reference the state
machine passes, does one thing through injected ports, records what it did in the store (artifacts + audit log) and
returns a small JSON-able result for the execution's state (big documents stay in DynamoDB)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from rebalancer.adapters.outcomes import ApplyReport
from rebalancer.errors import ApplyFailed, PermanentError, TransientError
from rebalancer.models import ComputeQuota, Snapshot
from rebalancer.plan import Change, Plan, QuotaRequest
from rebalancer.planning import make_plan
from rebalancer.policy import Policy

Decision = Literal["no_change", "dry_run", "approve", "apply"]


class VerifyTimedOut(PermanentError):
    """The changed quotas did not reach Created/Updated within the verify bound."""


class RollbackFailed(PermanentError):
    """The rollback could not restore every quota; a person must look."""


class RunRef(BaseModel):
    """What the state machine's Begin state passes to every step."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    cluster_name: str
    execution_name: str
    execution_arn: str
    trigger: dict[str, Any] = {}
    started_at: str | None = None


class Writer(Protocol):
    """rebalancer.adapters.quota_writer.QuotaWriter."""

    def apply(self, cluster_arn: str, requests: Sequence[QuotaRequest], before: Sequence[ComputeQuota], *,
              rollback_on_failure: bool = True) -> ApplyReport: ...

    def verify(self, quota_ids: Iterable[str]) -> dict[str, str]: ...

    def rollback(self, cluster_arn: str, before: Sequence[ComputeQuota], *, created_ids: Sequence[str] = (),
                 expected_versions: dict[str, int] | None = None) -> ApplyReport: ...


class Store(Protocol):
    def put_artifact(self, execution: str, kind: Any, document: Any) -> None: ...
    def get_artifact(self, execution: str, kind: Any) -> Any: ...
    def audit(self, cluster_name: str, execution: str, kind: str, *, outcome: str, who: str | None = None,
              before: Any = None, after: Any = None, detail: Any = None) -> None: ...
    def record_team_change(self, cluster_name: str, team: str, execution: str) -> None: ...


def load_snapshot(store: Store, run: RunRef) -> Snapshot:
    doc = store.get_artifact(run.execution_name, "SNAPSHOT")
    if doc is None:
        raise PermanentError(f"no snapshot stored for execution {run.execution_name}")
    return Snapshot.model_validate(doc)


def load_plan(store: Store, run: RunRef) -> Plan:
    doc = store.get_artifact(run.execution_name, "PLAN")
    if doc is None:
        raise PermanentError(f"no plan stored for execution {run.execution_name}")
    return Plan.model_validate(doc)


def load_report(store: Store, run: RunRef) -> ApplyReport | None:
    doc = store.get_artifact(run.execution_name, "APPLY")
    return None if doc is None else ApplyReport.model_validate(doc)


def by_team(changes: Iterable[Change], side: Literal["before", "after"]) -> dict[str, dict[str, float]]:
    """team → pool → amount, for the audit log (a team may change in several pools at once)."""
    out: dict[str, dict[str, float]] = {}
    for c in changes:
        pool = f"{c.instance_type}:{c.mig_profile}" if c.mig_profile else c.instance_type
        out.setdefault(c.team, {})[pool] = c.before if side == "before" else c.after
    return out


def changes_table(plan: Plan) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json", exclude_none=True) for c in plan.changes]


# --- collect -----------------------------------------------------------------------------------------------------
def collect(run: RunRef, *, store: Store, read_snapshot: Callable[[str], Snapshot]) -> dict[str, Any]:
    snapshot = read_snapshot(run.cluster_name)
    store.put_artifact(run.execution_name, "SNAPSHOT", snapshot.model_dump(mode="json"))
    return {"taken_at": snapshot.taken_at.isoformat(), "cluster_arn": snapshot.cluster.ClusterArn,
            "nodes": len(snapshot.nodes), "quotas": len(snapshot.quotas)}


# --- plan --------------------------------------------------------------------------------------------------------
def decide(plan: Plan) -> Decision:
    if plan.is_empty:
        return "no_change"
    if plan.mode == "dry-run":
        return "dry_run"
    return "approve" if plan.requires_approval else "apply"


def plan(run: RunRef, *, store: Store, load_policy: Callable[[str], Policy], now: datetime,
         mode_override: str = "") -> dict[str, Any]:
    snapshot = load_snapshot(store, run)
    try:
        policy = load_policy(run.cluster_name)
    except PermanentError as e:
        store.audit(run.cluster_name, run.execution_name, "plan", outcome="invalid-policy", detail={"error": str(e)})
        raise
    if mode_override:
        policy = policy.model_copy(update={"mode": mode_override})
    result = make_plan(snapshot, policy, now)
    store.put_artifact(run.execution_name, "PLAN", result.model_dump(mode="json"))
    decision = decide(result)
    store.audit(run.cluster_name, run.execution_name, "plan", outcome=decision,
                before=by_team(result.changes, "before"),
                after=by_team(result.changes, "after"),
                detail={"changes": changes_table(result), "warnings": list(result.warnings),
                        "approval_reasons": list(result.approval_reasons), "trigger": run.trigger})
    return {"decision": decision, "changes": len(result.changes), "requests": len(result.requests),
            "moved_accelerators": result.moved(), "approval_timeout_seconds": policy.approval.timeout_minutes * 60,
            "approval_reasons": list(result.approval_reasons), "warnings": list(result.warnings)}


# --- apply -------------------------------------------------------------------------------------------------------
def apply(run: RunRef, *, store: Store, writer: Writer, approved_by: str | None = None) -> dict[str, Any]:
    """Writes the plan (decreases first, waiting for each to settle before an increase). On failure the report is
    stored for the Rollback step, which the state machine runs next; the error's class name routes it there."""
    the_plan = load_plan(store, run)
    snapshot = load_snapshot(store, run)
    report = writer.apply(the_plan.cluster_arn, the_plan.requests, snapshot.quotas, rollback_on_failure=False)
    store.put_artifact(run.execution_name, "APPLY", report.model_dump(mode="json"))
    store.audit(run.cluster_name, run.execution_name, "apply", outcome="applied" if report.succeeded else "failed",
                who=approved_by, before=by_team(the_plan.changes, "before"),
                after=by_team(the_plan.changes, "after"),
                detail={"outcomes": report.lines()})
    if not report.succeeded:
        raise ApplyFailed(report.error or "apply failed")
    for team in sorted({r.team for r in the_plan.requests}):
        store.record_team_change(run.cluster_name, team, run.execution_name)
    written = [o.quota_id for o in report.outcomes if o.result == "applied" and o.quota_id]
    return {"quota_ids": written, "outcomes": [o.line() for o in report.outcomes]}


# --- verify ------------------------------------------------------------------------------------------------------
def verify(attempt: int, quota_ids: Sequence[str], *, writer: Writer, poll_seconds: int,
           max_attempts: int) -> dict[str, Any]:
    """One poll (the writer is built with a zero-length poll bound). Not settled yet ⇒ done False and the state
    machine waits and calls again; a *Failed status raises ApplyFailed; too many polls raise VerifyTimedOut."""
    attempt += 1
    try:
        statuses = writer.verify(quota_ids)
    except TransientError as e:
        if attempt >= max_attempts:
            raise VerifyTimedOut(f"quotas not settled after {attempt} polls: {e}") from None
        return {"done": False, "attempt": attempt, "wait_seconds": poll_seconds}
    return {"done": True, "attempt": attempt, "wait_seconds": poll_seconds, "statuses": statuses}


# --- rollback ----------------------------------------------------------------------------------------------------
def rollback(run: RunRef, error: dict[str, Any] | None, *, store: Store, writer: Writer) -> dict[str, Any]:
    """Restore every quota the plan touched to its snapshot state. With the stored apply report, a quota someone
    else changed after our write is left alone (and reported); quotas we created are deleted."""
    the_plan = load_plan(store, run)
    snapshot = load_snapshot(store, run)
    report = load_report(store, run)
    touched = {r.team for r in the_plan.requests}
    before = [q for q in snapshot.quotas if q.team in touched]
    before_ids = {q.ComputeQuotaId for q in before}
    expected: dict[str, int] | None = None
    created: list[str] = []
    if report is not None:
        expected = {o.quota_id: o.version for o in report.outcomes
                    if o.result == "applied" and o.quota_id in before_ids and o.version is not None}
        created = [o.quota_id for o in report.outcomes
                   if o.operation == "CreateComputeQuota" and o.result == "applied" and o.quota_id]
    undo = writer.rollback(the_plan.cluster_arn, before, created_ids=created, expected_versions=expected or None)
    store.audit(run.cluster_name, run.execution_name, "rollback",
                outcome="restored" if undo.succeeded else "incomplete",
                before=by_team(the_plan.changes, "after"),
                after=by_team(the_plan.changes, "before"),
                detail={"cause": (error or {}).get("Error"), "outcomes": undo.lines()})
    if not undo.succeeded:
        raise RollbackFailed(undo.error or "rollback incomplete: " + "; ".join(undo.lines()))
    return {"restored": [o.quota_id for o in undo.outcomes if o.quota_id],
            "outcomes": [o.line() for o in undo.outcomes]}
