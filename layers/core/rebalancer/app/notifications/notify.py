"""The Notify step: build the message for what happened in the run, send it on every channel at most once, record
the outcome. A failure to notify is retried (TransientError when nothing went out) and never fails a rebalance."""

from __future__ import annotations

import contextlib
import json
from typing import Any, Protocol

from rebalancer.app.notifications.messages import Channel, DeliveryResult, Message
from rebalancer.app.workflow.audit import AuditLog, notified
from rebalancer.app.workflow.state import Artifacts, Kind, RunRef
from rebalancer.domain.plan import Plan
from rebalancer.domain.records import ApprovalRecord, ApprovalStatus
from rebalancer.errors import ApprovalNotPending, TransientError


class Deliveries(Protocol):
    """Which message of a run went out on which channel: rebalancer.adapters.dynamodb.deliveries;
    rebalancer_tools.memory_store.MemoryDeliveries."""

    def mark(self, execution: str, kind: str, channel: str) -> bool: ...
    def unmark(self, execution: str, kind: str, channel: str) -> None: ...


class ApprovalLookup(Protocol):
    """The part of rebalancer.app.approvals.decisions.ApprovalRecords an expiry and a message need."""

    def get(self, approval_id: str) -> ApprovalRecord | None: ...
    def decide(self, approval_id: str, status: ApprovalStatus, who: str) -> ApprovalRecord: ...


class DeliveriesAndRuns(Protocol):
    """Which messages of a run went out on which channel, and of the run its stored documents, the approvals its
    messages name and the audit log."""

    @property
    def artifacts(self) -> Artifacts: ...
    @property
    def approvals(self) -> ApprovalLookup: ...
    @property
    def deliveries(self) -> Deliveries: ...
    @property
    def audit(self) -> AuditLog: ...


def approval_id_of(execution_arn: str, approval_round: int = 1) -> str:
    """The approval a run asks for; a run whose approved plan went stale and was made again asks again, in a later
    round, under another id."""
    import hashlib

    key = execution_arn if approval_round <= 1 else f"{execution_arn}#{approval_round}"
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def approval_round(state: dict[str, Any]) -> int:
    """The round of approval the run is in, from the execution's state (the Plan step's output)."""
    plan = state.get("plan")
    found = plan.get("approval_round") if isinstance(plan, dict) else None
    return found if isinstance(found, int) and found > 0 else 1


def delivery_kind(kind: str, approval_round: int) -> str:
    """What a message's deliveries are marked under: its kind, and for a later round of approval the round, so the
    new request (and its outcome) goes out although the first round's did."""
    return kind if approval_round <= 1 else f"{kind}#{approval_round}"


def execution_url(execution_arn: str) -> str:
    region = execution_arn.split(":")[3]
    return (f"https://{region}.console.aws.amazon.com/states/home?region={region}"
            f"#/v2/executions/details/{execution_arn}")


def error_text(error: Any) -> str | None:
    """The one line people need from a Step Functions error object ({"Error", "Cause"})."""
    if not isinstance(error, dict):
        return None
    cause = error.get("Cause")
    try:
        parsed = json.loads(cause) if isinstance(cause, str) else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("errorMessage"):
        return f"{parsed.get('errorType', error.get('Error'))}: {parsed['errorMessage']}"
    return f"{error.get('Error')}: {cause}" if cause else str(error.get("Error"))


def message_for(kind: Kind, run: RunRef, plan: Plan | None, state: dict[str, Any],
                decided_by: str | None = None) -> Message:
    error = state.get("rollback_error") if kind == "rollback_failed" else state.get("error")
    return Message(kind=kind, cluster=run.cluster_name, execution_url=execution_url(run.execution_arn),
                   changes=plan.changes if plan else (), held=plan.held if plan else (),
                   field_changes=plan.field_changes if plan else (),
                   warnings=plan.warnings if plan else (),
                   approval_reasons=plan.approval_reasons if plan and kind == "approval_request" else (),
                   error=error_text(error) if kind in ("failed", "rolled_back", "rollback_failed") else None,
                   decided_by=decided_by, notes=recheck_notes(state))


def recheck_notes(state: dict[str, Any]) -> tuple[str, ...]:
    """What the check before the write said, when the approved plan was made again (the Plan step's `notes`)."""
    plan = state.get("plan")
    notes = plan.get("notes") if isinstance(plan, dict) else None
    return tuple(str(n) for n in notes) if isinstance(notes, list) else ()


def deliver(deliveries: Deliveries, channels: list[Channel], execution: str,
            message: Message, approval_round: int = 1) -> list[DeliveryResult]:
    """Each channel at most once per run, kind and round of approval, so a retry resends only what failed."""
    results = []
    kind = delivery_kind(message.kind, approval_round)
    for ch in channels:
        if not deliveries.mark(execution, kind, ch.name):
            results.append(DeliveryResult(ch.name, True, "already sent"))
            continue
        result = ch.send(message)
        if not result.ok:
            deliveries.unmark(execution, kind, ch.name)
        results.append(result)
    return results


def notify(kind: Kind, state: dict[str, Any], *, store: DeliveriesAndRuns, channels: list[Channel]) -> dict[str, Any]:
    run = RunRef.model_validate(state["run"])
    doc = store.artifacts.get(run.execution_name, "PLAN")
    plan = Plan.model_validate(doc) if doc else None
    rounds = approval_round(state)
    approval_id = approval_id_of(run.execution_arn, rounds)
    if kind == "expired":
        with contextlib.suppress(ApprovalNotPending):
            store.approvals.decide(approval_id, "expired", "timeout")
    # Who decided comes from the approval record: the store is the source of truth, not the task's output.
    # A plan made again after an approval may need none itself: the run's state says one was decided.
    asked = plan is not None and (plan.requires_approval or "approval" in state)
    approval = store.approvals.get(approval_id) if asked else None
    decided_by = approval.decided_by if approval and approval.status in ("approved", "rejected") else None
    results = deliver(store.deliveries, channels, run.execution_name, message_for(kind, run, plan, state, decided_by),
                      rounds)
    notified(store.audit, run, kind, results)
    failed = [r for r in results if not r.ok]
    if failed and len(failed) == len(results):
        raise TransientError("; ".join(r.error or r.channel for r in failed))
    return {"sent": [r.channel for r in results if r.ok], "failed": {r.channel: r.error for r in failed}}
