"""Approvals: RequestApproval stores the task token under an approval id and sends approve / reject controls; a
decision (the review page's form or a Slack button, both in rebalancer.app.approvals.http) calls SendTaskSuccess /
SendTaskFailure exactly once. Replays and late decisions change nothing. The approver goes into the audit log."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from rebalancer.adapters.stepfunctions import TaskTokens
from rebalancer.app.approvals.review_page import COMMENT_MAX
from rebalancer.app.approvals.signing import Decision, LinkSigner
from rebalancer.app.notifications.messages import Channel, Message
from rebalancer.app.notifications.notify import Deliveries, approval_id_of, deliver, execution_url, preempting
from rebalancer.app.workflow import audit
from rebalancer.app.workflow.audit import AuditLog
from rebalancer.app.workflow.state import ApprovalRequest, Artifacts, load_plan
from rebalancer.domain.clock import Clock
from rebalancer.domain.records import ApprovalRecord, ApprovalStatus, RunContext
from rebalancer.errors import ApprovalRejected, DecisionNotDelivered, RebalancerError, RunNotWaiting
from rebalancer.parsing.text import clean_text

WHO_MAX = 512  # a role-session ARN from STS, "slack:" + a name, or "approval page from <address>"


class ApprovalRecords(Protocol):
    """Pending approvals (decided once), their runs' context and the review forms' nonces:
    rebalancer.adapters.dynamodb.approvals; rebalancer_tools.fakes.memory_store.MemoryApprovals."""

    def put(self, rec: ApprovalRecord) -> bool: ...
    def get(self, approval_id: str) -> ApprovalRecord | None: ...
    def decide(self, approval_id: str, status: ApprovalStatus, who: str) -> ApprovalRecord: ...
    def supersede(self, approval_id: str, why: str) -> bool: ...
    def put_context(self, approval_id: str, context: RunContext, decide_by: datetime) -> None: ...
    def context(self, approval_id: str) -> RunContext: ...
    def claim_nonce(self, approval_id: str, nonce_id: str, expires: datetime) -> bool: ...


class ApprovalsAndRuns(Protocol):
    """The approval records, and of the runs they belong to the stored plans, the deliveries and the audit log; the
    table's clock."""

    @property
    def approvals(self) -> ApprovalRecords: ...
    @property
    def artifacts(self) -> Artifacts: ...
    @property
    def deliveries(self) -> Deliveries: ...
    @property
    def audit(self) -> AuditLog: ...
    def now(self) -> datetime: ...


class Approvals:
    __slots__ = ("channels", "clock", "signer", "store", "tasks")

    def __init__(self, *, store: ApprovalsAndRuns, tasks: TaskTokens, signer: LinkSigner, channels: list[Channel],
                 clock: Clock) -> None:
        self.store = store
        self.tasks = tasks
        self.signer = signer
        self.channels = channels
        self.clock = clock

    # --- RequestApproval (invoked by the state machine with a task token) -------------------------------------------
    def request(self, asked: ApprovalRequest) -> dict[str, Any]:
        run = asked.run
        plan = load_plan(self.store.artifacts, run)
        rounds = asked.approval_round
        approval_id = approval_id_of(run.execution_arn, rounds)
        decide_by = self.clock() + timedelta(seconds=asked.approval_timeout_seconds)
        created = self.store.approvals.put(ApprovalRecord(
            approval_id=approval_id, task_token=asked.task_token, execution_arn=run.execution_arn,
            cluster_name=run.cluster_name, status="pending", decide_by=decide_by))
        existing = self.store.approvals.get(approval_id)
        assert existing is not None
        base = asked.base_url
        message = Message(
            kind="approval_request", cluster=run.cluster_name, execution_url=execution_url(run.execution_arn),
            changes=plan.changes, held=plan.held, field_changes=plan.field_changes, warnings=plan.warnings,
            approval_reasons=plan.approval_reasons,
            approval_id=approval_id, expires=existing.decide_by.isoformat(timespec="seconds"),
            approve_url=self.signer.link(base, approval_id, "approve", existing.decide_by),
            reject_url=self.signer.link(base, approval_id, "reject", existing.decide_by),
            notes=asked.notes, **preempting(plan))
        results = deliver(self.store.deliveries, self.channels, run.execution_name, message, rounds)
        self.store.approvals.put_context(approval_id, RunContext(trigger=run.trigger, started_at=run.started_at),
                                   existing.decide_by)
        if created:
            audit.approval_requested(self.store.audit, run, approval_id, decide_by, results)
        return {"approval_id": approval_id, "sent": [r.channel for r in results if r.ok]}

    # --- a decision --------------------------------------------------------------------------------------------
    def decide(self, approval_id: str, decision: Decision, who: str, comment: str | None = None,
               identity: Mapping[str, str] | None = None) -> str:
        """The sentence for the page once the run has the decision. The comment and how `who` was verified (the
        token's issuer and subject, the Slack user id), if any, go into the audit record. Raises ApprovalNotPending
        for a replayed or late decision, RunNotWaiting when the run has moved on (both change nothing)."""
        status: ApprovalStatus = "approved" if decision == "approve" else "rejected"
        # Every caller (the page, Slack, the CLI) cleans at its entry; this holds for one that forgets.
        who = clean_text(who, WHO_MAX) or "unknown"
        comment = clean_text(comment, COMMENT_MAX) or None
        identity = {clean_text(k, 64): clean_text(v, WHO_MAX) for k, v in (identity or {}).items()} or None
        rec = self.store.approvals.decide(approval_id, status, who)
        try:
            if decision == "approve":
                self.tasks.succeed(rec.task_token, {"decided_by": who, "decided_at": self.clock().isoformat()})
            else:
                self.tasks.fail(rec.task_token, ApprovalRejected.__name__, f"rejected by {who}")
        except RunNotWaiting as e:
            audit.approval_not_delivered(self.store.audit, rec.cluster_name, _execution(rec), e.code, who)
            raise
        except RebalancerError as e:  # throttled past botocore's retries, or refused: the run will expire
            audit.approval_not_delivered(self.store.audit, rec.cluster_name, _execution(rec), type(e).__name__, who)
            raise DecisionNotDelivered(type(e).__name__) from e
        audit.approval_decided(self.store.audit, rec.cluster_name, _execution(rec), status, who, comment=comment,
                               identity=identity)
        return f"Thank you: the change was {status}."


def _execution(rec: ApprovalRecord) -> str:
    return rec.execution_arn.rsplit(":", 1)[-1]
