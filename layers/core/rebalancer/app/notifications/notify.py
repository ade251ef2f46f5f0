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


class Store(Protocol):
    @property
    def artifacts(self) -> Artifacts: ...
    @property
    def approvals(self) -> ApprovalLookup: ...
    @property
    def deliveries(self) -> Deliveries: ...
    @property
    def audit(self) -> AuditLog: ...


def approval_id_of(execution_arn: str) -> str:
    import hashlib

    return hashlib.sha256(execution_arn.encode()).hexdigest()[:24]


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
                   decided_by=decided_by)


def deliver(deliveries: Deliveries, channels: list[Channel], execution: str,
            message: Message) -> list[DeliveryResult]:
    """Each channel at most once per run and kind, so a retry resends only what failed."""
    results = []
    for ch in channels:
        if not deliveries.mark(execution, message.kind, ch.name):
            results.append(DeliveryResult(ch.name, True, "already sent"))
            continue
        result = ch.send(message)
        if not result.ok:
            deliveries.unmark(execution, message.kind, ch.name)
        results.append(result)
    return results


def notify(kind: Kind, state: dict[str, Any], *, store: Store, channels: list[Channel]) -> dict[str, Any]:
    run = RunRef.model_validate(state["run"])
    doc = store.artifacts.get(run.execution_name, "PLAN")
    plan = Plan.model_validate(doc) if doc else None
    approval_id = approval_id_of(run.execution_arn)
    if kind == "expired":
        with contextlib.suppress(ApprovalNotPending):
            store.approvals.decide(approval_id, "expired", "timeout")
    # Who decided comes from the approval record: the store is the source of truth, not the task's output.
    approval = store.approvals.get(approval_id) if plan and plan.requires_approval else None
    decided_by = approval.decided_by if approval and approval.status in ("approved", "rejected") else None
    results = deliver(store.deliveries, channels, run.execution_name, message_for(kind, run, plan, state, decided_by))
    notified(store.audit, run, kind, results)
    failed = [r for r in results if not r.ok]
    if failed and len(failed) == len(results):
        raise TransientError("; ".join(r.error or r.channel for r in failed))
    return {"sent": [r.channel for r in results if r.ok], "failed": {r.channel: r.error for r in failed}}
