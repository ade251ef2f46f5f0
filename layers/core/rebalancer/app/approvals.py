"""Approvals: RequestApproval stores the task token under an approval id and sends approve / reject controls; a
decision (signed link or Slack button) calls SendTaskSuccess / SendTaskFailure exactly once. Replays, forgeries and
expired links get a clear page and change nothing. The approver goes into the audit log."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any
from urllib.parse import parse_qsl

from botocore.exceptions import ClientError
from pydantic import BaseModel, Field, StringConstraints, ValidationError

from rebalancer.app.approval_http import ApprovalPages, BadBody, remember_run, request_body
from rebalancer.app.notifications import Channel, Message
from rebalancer.app.notify import approval_id_of, deliver, execution_url
from rebalancer.app.signing import Decision, LinkSigner, slack_request_is_valid
from rebalancer.app.steps import RunRef, load_plan
from rebalancer.app.store import ApprovalNotPending, ApprovalRecord, ApprovalStatus, Store

REJECTED_ERROR = "ApprovalRejected"


@dataclass
class Approvals:
    store: Store
    sfn: Any
    signer: LinkSigner
    channels: list[Channel]
    slack_signing_secret: str | None = None

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
        remember_run(self.store, approval_id, run, int(existing.decide_by.timestamp()))
        if created:
            self.store.audit(run.cluster_name, run.execution_name, "approval-requested", outcome="pending",
                             detail={"approval_id": approval_id, "decide_by": decide_by.isoformat(),
                                     "sent": {r.channel: r.error or "ok" for r in results}})
        return {"approval_id": approval_id, "sent": [r.channel for r in results if r.ok]}

    # --- a decision --------------------------------------------------------------------------------------------
    def decide(self, approval_id: str, decision: Decision, who: str, comment: str | None = None) -> tuple[int, str]:
        """(HTTP status, sentence for the page). The comment, if any, goes into the audit record."""
        status: ApprovalStatus = "approved" if decision == "approve" else "rejected"
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
        self.store.audit(rec.cluster_name, rec.execution_arn.rsplit(":", 1)[-1], "approval", outcome=status, who=who,
                         detail={"comment": comment} if comment else None)
        return 200, f"Thank you: the change was {status}."

    # --- HTTP API (payload format 2.0) -------------------------------------------------------------------------
    def http(self, event: dict[str, Any]) -> dict[str, Any]:
        method = event.get("requestContext", {}).get("http", {}).get("method", "GET")
        path = event.get("rawPath", "")
        if path.endswith("/slack/interactions") and method == "POST":
            return self._slack(event)
        return ApprovalPages(self).handle(event)

    def _slack(self, event: dict[str, Any]) -> dict[str, Any]:
        try:
            body = request_body(event)
        except BadBody:
            return {"statusCode": 400, "body": "the request body is not UTF-8 text"}
        if not self.slack_signing_secret or not slack_request_is_valid(
                self.slack_signing_secret, body, event.get("headers") or {}, self.store.now()):
            return {"statusCode": 401, "body": "invalid Slack signature"}
        try:
            payload = _SlackPayload.model_validate_json(dict(parse_qsl(body))["payload"])
        except (KeyError, ValidationError):
            return {"statusCode": 400, "body": "unexpected Slack payload"}
        action, user = payload.actions[0], payload.user
        if action.action_id not in ("approve", "reject"):
            return {"statusCode": 200, "body": ""}
        decision: Decision = "approve" if action.action_id == "approve" else "reject"
        approval_id = action.value
        who = f"slack:{user.username or user.name or user.id or 'unknown'}"
        _, text = self.decide(approval_id, decision, who)
        return {"statusCode": 200, "headers": {"content-type": "application/json"},
                "body": json.dumps({"replace_original": False, "text": text})}


class _SlackAction(BaseModel):
    action_id: str
    value: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]  # an approval id


class _SlackUser(BaseModel):
    username: str | None = None
    name: str | None = None
    id: str | None = None


class _SlackPayload(BaseModel):
    """The part of a Slack block_actions payload a decision reads; any other shape is a 400."""

    actions: Annotated[list[_SlackAction], Field(min_length=1)]
    user: _SlackUser = _SlackUser()

