"""Approvals: RequestApproval stores the task token under an approval id and sends approve / reject controls; a
decision (the review page's form or a Slack button, both in rebalancer.app.approvals.http) calls SendTaskSuccess /
SendTaskFailure exactly once. Replays and late decisions change nothing. The approver goes into the audit log."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from botocore.exceptions import ClientError

from rebalancer.adapters.dynamodb.store import ApprovalNotPending, ApprovalRecord, ApprovalStatus, RunContext, Store
from rebalancer.app.approvals.review_page import COMMENT_MAX
from rebalancer.app.approvals.signing import Decision, LinkSigner
from rebalancer.app.notifications.messages import Channel, Message
from rebalancer.app.notifications.notify import approval_id_of, deliver, execution_url
from rebalancer.app.workflow.state import RunRef, load_plan
from rebalancer.parsing.text import clean_text

REJECTED_ERROR = "ApprovalRejected"
WHO_MAX = 512  # a role-session ARN from STS, "slack:" + a name, or "approval page from <address>"


@dataclass
class Approvals:
    store: Store
    sfn: Any
    signer: LinkSigner
    channels: list[Channel]

    # --- RequestApproval (invoked by the state machine with a task token) -------------------------------------------
    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        run = RunRef.model_validate(payload["run"])
        plan = load_plan(self.store, run)
        approval_id = approval_id_of(run.execution_arn)
        timeout = int(payload["plan"]["approval_timeout_seconds"])
        decide_by = self.store.now() + timedelta(seconds=timeout)
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
               identity: Mapping[str, str] | None = None) -> tuple[int, str]:
        """(HTTP status, sentence for the page). The comment and how `who` was verified (the token's issuer and
        subject, the Slack user id), if any, go into the audit record."""
        status: ApprovalStatus = "approved" if decision == "approve" else "rejected"
        # Every caller (the page, Slack, the CLI) cleans at its entry; this holds for one that forgets.
        who = clean_text(who, WHO_MAX) or "unknown"
        comment = clean_text(comment, COMMENT_MAX) or None
        identity = {clean_text(k, 64): clean_text(v, WHO_MAX) for k, v in (identity or {}).items()} or None
        try:
            rec = self.store.decide_approval(approval_id, status, who)
        except ApprovalNotPending as e:
            return 409, {"approved": "This change was already approved.",
                         "rejected": "This change was already rejected.",
                         "expired": "This approval has expired; nothing was changed.",
                         "unknown": "There is no such approval."}.get(e.status, f"This approval is {e.status}.")
        try:
            if decision == "approve":
                self.sfn.send_task_success(taskToken=rec.task_token, output=json.dumps(
                    {"decided_by": who, "decided_at": self.store.now().isoformat()}))
            else:
                self.sfn.send_task_failure(taskToken=rec.task_token, error=REJECTED_ERROR, cause=f"rejected by {who}")
        except ClientError as e:
            code = e.response["Error"]["Code"]
            self.store.audit(rec.cluster_name, rec.execution_arn.rsplit(":", 1)[-1], "approval",
                             outcome=f"not-delivered:{code}", who=who)
            return 410, "The run is no longer waiting for this decision (it expired or ended); nothing was changed."
        detail = {**({"comment": comment} if comment else {}), **({"identity": dict(identity)} if identity else {})}
        self.store.audit(rec.cluster_name, rec.execution_arn.rsplit(":", 1)[-1], "approval", outcome=status, who=who,
                         detail=detail or None)
        return 200, f"Thank you: the change was {status}."
