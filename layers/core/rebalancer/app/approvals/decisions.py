"""Approvals: RequestApproval stores the task token under an approval id and sends approve / reject controls; a
decision (the review page's form or a Slack button, both in rebalancer.app.approvals.http) calls SendTaskSuccess /
SendTaskFailure exactly once. Replays and late decisions change nothing. The approver goes into the audit log."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from rebalancer.adapters.dynamodb.store import ApprovalRecord, ApprovalStatus, RunContext, Store
from rebalancer.adapters.stepfunctions import TaskTokens
from rebalancer.app.approvals.signing import Decision, LinkSigner
from rebalancer.app.notifications.messages import Channel, Message
from rebalancer.app.notifications.notify import approval_id_of, deliver, execution_url
from rebalancer.app.workflow.state import RunRef, load_plan
from rebalancer.domain.clock import Clock
from rebalancer.errors import ApprovalRejected, DecisionNotDelivered, RebalancerError, RunNotWaiting


@dataclass
class Approvals:
    store: Store
    tasks: TaskTokens
    signer: LinkSigner
    channels: list[Channel]
    clock: Clock

    # --- RequestApproval (invoked by the state machine with a task token) -------------------------------------------
    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        run = RunRef.model_validate(payload["run"])
        plan = load_plan(self.store, run)
        approval_id = approval_id_of(run.execution_arn)
        timeout = int(payload["plan"]["approval_timeout_seconds"])
        decide_by = self.clock() + timedelta(seconds=timeout)
        created = self.store.put_approval(ApprovalRecord(
            approval_id=approval_id, task_token=payload["task_token"], execution_arn=run.execution_arn,
            cluster_name=run.cluster_name, status="pending", decide_by=decide_by))
        existing = self.store.get_approval(approval_id)
        assert existing is not None
        base = str(payload["base_url"])
        message = Message(
            kind="approval_request", cluster=run.cluster_name, execution_url=execution_url(run.execution_arn),
            changes=plan.changes, field_changes=plan.field_changes, warnings=plan.warnings,
            approval_reasons=plan.approval_reasons,
            approval_id=approval_id, expires=existing.decide_by.isoformat(timespec="seconds"),
            approve_url=self.signer.link(base, approval_id, "approve", existing.decide_by),
            reject_url=self.signer.link(base, approval_id, "reject", existing.decide_by))
        results = deliver(self.store, self.channels, run.execution_name, message)
        self.store.put_run_context(approval_id, RunContext(trigger=run.trigger, started_at=run.started_at),
                                   existing.decide_by)
        if created:
            self.store.audit(run.cluster_name, run.execution_name, "approval-requested", outcome="pending",
                             detail={"approval_id": approval_id, "decide_by": decide_by.isoformat(),
                                     "sent": {r.channel: r.error or "ok" for r in results}})
        return {"approval_id": approval_id, "sent": [r.channel for r in results if r.ok]}

    # --- a decision --------------------------------------------------------------------------------------------
    def decide(self, approval_id: str, decision: Decision, who: str, comment: str | None = None,
               identity: Mapping[str, str] | None = None) -> str:
        """The sentence for the page once the run has the decision. The comment and how `who` was verified (the
        token's issuer and subject, the Slack user id), if any, go into the audit record. Raises ApprovalNotPending
        for a replayed or late decision, RunNotWaiting when the run has moved on (both change nothing)."""
        status: ApprovalStatus = "approved" if decision == "approve" else "rejected"
        rec = self.store.decide_approval(approval_id, status, who)
        execution = rec.execution_arn.rsplit(":", 1)[-1]
        try:
            if decision == "approve":
                self.tasks.succeed(rec.task_token, {"decided_by": who, "decided_at": self.clock().isoformat()})
            else:
                self.tasks.fail(rec.task_token, ApprovalRejected.__name__, f"rejected by {who}")
        except RunNotWaiting as e:
            self._not_delivered(rec, who, e.code)
            raise
        except RebalancerError as e:  # throttled past botocore's retries, or refused: the run will expire
            self._not_delivered(rec, who, type(e).__name__)
            raise DecisionNotDelivered(type(e).__name__) from e
        detail = {**({"comment": comment} if comment else {}), **({"identity": dict(identity)} if identity else {})}
        self.store.audit(rec.cluster_name, execution, "approval", outcome=status, who=who, detail=detail or None)
        return f"Thank you: the change was {status}."

    def _not_delivered(self, rec: ApprovalRecord, who: str, code: str) -> None:
        self.store.audit(rec.cluster_name, rec.execution_arn.rsplit(":", 1)[-1], "approval",
                         outcome=f"not-delivered:{code}", who=who)
