"""The approval HTTP API's pages (payload format 2.0):

  GET  /approvals/{id}?decision&expires&sig   the review page (a signed link from the message). Changes nothing.
  POST /approvals/{id}/decision               the page's form: the link's signed token, a per-page nonce, the
                                              pressed button (approve | reject), optional name and comment.

Mail scanners and chat unfurlers GET every link they see, so only the POST decides, and only with a nonce from a
page this API rendered. Anything else gets a page saying why, with the HTTP status that fits, and changes nothing.
Slack buttons arrive at /slack/interactions (Approvals.http) and end in the same Approvals.decide.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from rebalancer.app.form_nonce import FormNonces, claim_nonce
from rebalancer.app.notify import execution_url
from rebalancer.app.review_page import (
    COMMENT_MAX,
    NAME_MAX,
    SECURITY_HEADERS,
    Review,
    message_page,
    review_page,
    rows_of,
    trigger_text,
)
from rebalancer.app.signing import DECISIONS, BadLink, Decision, LinkExpired
from rebalancer.app.steps import RunRef, load_plan
from rebalancer.app.store import KEY, SORT, TTL, ApprovalRecord, Store

if TYPE_CHECKING:
    from rebalancer.app.approvals import Approvals

ROUTE = re.compile(r"/approvals/(?P<id>[A-Za-z0-9_-]{1,64})(?P<decision>/decision)?/?$")
CONTEXT_RETENTION = timedelta(days=90)


def page(status: int, body: str, **headers: str) -> dict[str, Any]:
    return {"statusCode": status, "headers": {**SECURITY_HEADERS, **headers}, "body": body}


def remember_run(store: Store, approval_id: str, run: RunRef, decide_by_epoch: int) -> None:
    """What the review page shows besides the plan: what triggered the run and when it started."""
    store.table.put_item(Item={KEY: f"APPROVAL#{approval_id}", SORT: "CONTEXT",
                               "trigger": json.dumps(run.trigger, sort_keys=True, default=str),
                               "started_at": run.started_at or "",
                               TTL: decide_by_epoch + int(CONTEXT_RETENTION.total_seconds())})


def _run_context(store: Store, approval_id: str) -> tuple[dict[str, Any], str | None]:
    item = store.table.get_item(Key={KEY: f"APPROVAL#{approval_id}", SORT: "CONTEXT"},
                                ConsistentRead=True).get("Item")
    if item is None:
        return {}, None
    trigger = json.loads(str(item.get("trigger") or "{}"))
    return (trigger if isinstance(trigger, dict) else {}), (str(item.get("started_at") or "") or None)


class BadBody(ValueError):
    """The request's body is not UTF-8 text (or not base64 where the event says it is)."""


def request_body(event: dict[str, Any]) -> str:
    body = event.get("body") or ""
    try:
        return base64.b64decode(body, validate=True).decode() if event.get("isBase64Encoded") else str(body)
    except ValueError:  # binascii.Error and UnicodeDecodeError are both ValueErrors
        raise BadBody("the request body is not UTF-8 text") from None


@dataclass
class ApprovalPages:
    approvals: Approvals

    @property
    def store(self) -> Store:
        return self.approvals.store

    @property
    def nonces(self) -> FormNonces:
        return FormNonces(self.approvals.signer.key)

    def handle(self, event: dict[str, Any]) -> dict[str, Any]:
        method = event.get("requestContext", {}).get("http", {}).get("method", "GET")
        match = ROUTE.search(event.get("rawPath", ""))
        approval_id = (event.get("pathParameters") or {}).get("id") or (match["id"] if match else "")
        if not match or not approval_id:
            return page(404, message_page("Not found", "There is no page here."))
        if match["decision"]:
            if method != "POST":
                return page(405, message_page(
                    "Use the review page", "Decisions are made with the Approve and Reject buttons of the review "
                    "page; opening this address changes nothing."), allow="POST")
            return self.decide(approval_id, event)
        if method != "GET":
            return page(405, message_page("Use the review page", "Open the link from the message and press "
                                          "Approve or Reject there; nothing was changed."), allow="GET")
        return self.review(approval_id, dict(event.get("queryStringParameters") or {}))

    # --- GET: the review page --------------------------------------------------------------------------------------
    def review(self, approval_id: str, params: dict[str, str]) -> dict[str, Any]:
        now = self.store.now()
        try:
            decision = self.approvals.signer.check(approval_id, params, now)
        except BadLink as e:
            return _refused(e)
        rec = self.store.get_approval(approval_id)
        if rec is None:
            return page(404, message_page("No such approval", "There is no approval with this id."))
        trigger, started_at = _run_context(self.store, approval_id)
        plan = load_plan(self.store, _run_of(rec))
        status = "expired" if rec.status == "pending" and rec.decide_by <= now else rec.status
        expires = params["expires"]
        form = {"link": decision, "expires": expires, "sig": params["sig"],
                "nonce": self.nonces.issue(approval_id, int(expires))}
        view = Review(approval_id=approval_id, cluster=rec.cluster_name, status=status, decide_by=rec.decide_by,
                      now=now, rows=rows_of(plan), trigger=trigger_text(trigger), started_at=started_at,
                      approval_reasons=plan.approval_reasons, warnings=plan.warnings,
                      settings=plan.field_changes, decided_by=rec.decided_by,
                      execution_url=execution_url(rec.execution_arn), form=form,
                      action=f"{approval_id}/decision")
        return page(200, review_page(view))

    # --- POST: the decision ----------------------------------------------------------------------------------------
    def decide(self, approval_id: str, event: dict[str, Any]) -> dict[str, Any]:
        now = self.store.now()
        try:
            form = dict(parse_qsl(request_body(event), keep_blank_values=True))
        except BadBody:
            return page(400, message_page("Nothing changed", "The form could not be read (not UTF-8 text)."))
        link = {"decision": form.get("link", ""), "expires": form.get("expires", ""), "sig": form.get("sig", "")}
        try:
            self.approvals.signer.check(approval_id, link, now)
            self.nonces.check(approval_id, int(link["expires"]), form.get("nonce", ""), now)
        except BadLink as e:
            return _refused(e)
        chosen = form.get("decision", "")
        comment = form.get("comment", "").strip()
        name = form.get("name", "").strip()
        if chosen not in DECISIONS:
            return page(400, message_page("Nothing changed", "The form named no decision (approve or reject)."))
        if len(comment) > COMMENT_MAX or len(name) > NAME_MAX:
            return page(400, message_page("Nothing changed", f"The comment is limited to {COMMENT_MAX} characters "
                                          f"and the name to {NAME_MAX}."))
        rec = self.store.get_approval(approval_id)
        if rec is None:
            return page(404, message_page("No such approval", "There is no approval with this id."))
        url = execution_url(rec.execution_arn)
        if not claim_nonce(self.store, approval_id, form["nonce"], int(link["expires"])):
            return page(409, message_page("Nothing changed", "This form was already submitted; open the link from "
                                          "the message again to see where the approval stands.",
                                          execution_url=url))
        source = event.get("requestContext", {}).get("http", {}).get("sourceIp", "unknown address")
        who = name or f"approval page from {source}"
        decision: Decision = "approve" if chosen == "approve" else "reject"
        status, text = self.approvals.decide(approval_id, decision, who, comment=comment or None)
        if status == 200:
            title = "Approved" if decision == "approve" else "Rejected"
            then = (" The run goes on to apply the plan." if decision == "approve"
                    else " The run ends without changing any quota.")
            return page(200, message_page(title, text + then, execution_url=url, ok=True))
        return page(status, message_page("Nothing changed", text, execution_url=url))


def _run_of(rec: ApprovalRecord) -> RunRef:
    return RunRef(cluster_name=rec.cluster_name, execution_name=rec.execution_arn.rsplit(":", 1)[-1],
                  execution_arn=rec.execution_arn)


def _refused(e: BadLink) -> dict[str, Any]:
    if isinstance(e, LinkExpired):
        return page(410, message_page("Link expired", str(e)))
    return page(403, message_page("Link not valid", str(e)))
