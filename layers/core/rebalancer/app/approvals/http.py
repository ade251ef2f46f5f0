"""The approval HTTP API (payload format 2.0) on Powertools' APIGatewayHttpResolver:

  GET  /approvals/{id}?decision&expires&sig   the review page (a signed link from the message). Changes nothing.
  POST /approvals/{id}/decision               the page's form: the link's signed token, a per-page nonce, the
                                              pressed button (approve | reject), a comment and, without an
                                              authorizer, the name the person types.
  POST /slack/interactions                    Slack's Approve / Reject buttons, verified with the app's signing secret.
  POST /slack/commands                        Slack's slash command `/rebalancer why <team>`, verified the same way,
                                              answered from the stored documents (rebalancer.app.why) as an
                                              ephemeral message.

Mail scanners and chat unfurlers GET every link they see, so only the POST decides, and only with a nonce from a
page this API rendered. Anything else gets a page saying why, with the HTTP status that fits, and changes nothing:
routes raise the error kinds of rebalancer.errors and the exception handlers below (one per kind) make the page, or
Slack's reply, in one place.

Who decides. With the API's optional JWT authorizer (template parameters ApprovalOidcIssuer and ApprovalOidcAudience,
the function then gets APPROVAL_OIDC_ISSUER), API Gateway has verified the caller's token and passes its claims: the
page shows that identity, the decision records it, and there is no name to type. Without it the claims are never
read (nothing verified them), the link is the credential, and the name is what the person typed. Slack decisions
record the Slack user of the signed payload.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response

from rebalancer.app.approvals.decisions import Approvals
from rebalancer.app.approvals.form_nonce import FormNonces
from rebalancer.app.approvals.review_page import (
    COMMENT_MAX,
    NAME_MAX,
    SECURITY_HEADERS,
    Review,
    message_page,
    review_page,
    rows_of,
    trigger_text,
)
from rebalancer.app.approvals.signing import DECISIONS, Decision, slack_request_is_valid
from rebalancer.app.notifications.messages import escaped
from rebalancer.app.notifications.notify import execution_url
from rebalancer.app.workflow.state import RunRef, load_plan
from rebalancer.domain.records import ApprovalRecord
from rebalancer.errors import (
    BadLink,
    ConflictError,
    DecisionNotDelivered,
    FormAlreadySubmitted,
    InvalidInput,
    LinkExpired,
    MethodNotAllowed,
    NotFound,
    RecordUnreadable,
    RunNotWaiting,
    SignInRequired,
    TransientError,
    UnknownApproval,
)
from rebalancer.parsing.text import clean_text

if TYPE_CHECKING:  # the slash command's use case loads the explanation, only when a command comes
    from rebalancer.app.why import RunsAndReservations

APPROVAL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
IDENTITY_CLAIMS = ("email", "preferred_username", "sub")  # the first one the token has names the approver
MAX_FORM_FIELDS = 16  # the form has 8; a body with more is not from our page
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
SLACK_PATH = "/slack/interactions"
SLASH_PATH = "/slack/commands"
SLASH_MAX_FIELDS = 40  # Slack sends about 15 (token, team_id, channel_id, user_id, command, text, response_url, …)

app = APIGatewayHttpResolver()
# Powertools keeps the current event on the resolver's class. Lambda runs one invocation at a time per process; the
# local stack's loopback gateway serves requests on threads, so they take turns.
_one_at_a_time = threading.Lock()


@dataclass(frozen=True, slots=True)
class Approver:
    """Who decides, as verified by the API's JWT authorizer."""

    name: str  # what the audit log and the run's output record as `who`
    identity: Mapping[str, str]  # how it was verified: issuer and subject of the token


@dataclass
class ApprovalApi:
    approvals: Approvals
    slack_signing_secret: str | None = None
    oidc_issuer: str | None = None  # set when the API's JWT authorizer is on (only then are claims believed)
    clusters: tuple[str, ...] = ()  # the clusters the stack manages: what `/rebalancer why` may name
    runs: RunsAndReservations | None = None  # what `/rebalancer why` reads

    def handle(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]:
        with _one_at_a_time:
            app.append_context(api=self)  # type: ignore[no-untyped-call]
            return app.resolve(event, context)

    @property
    def nonces(self) -> FormNonces:
        return FormNonces(self.approvals.signer.key)

    def approver(self) -> Approver | None:
        """The verified caller when the authorizer is on; None when the link is the credential."""
        if not self.oidc_issuer:
            return None
        claims = _claims()
        name = next((n for n in (clean_text(claims.get(c), NAME_MAX) for c in IDENTITY_CLAIMS) if n), "")
        if claims.get("iss") != self.oidc_issuer or not name:
            raise SignInRequired("This approval page needs you signed in with your organisation's account; nothing "
                                 "was changed.")
        return Approver(name, {"via": "oidc", "issuer": self.oidc_issuer,
                               "subject": clean_text(claims.get("sub"), NAME_MAX)})

    # --- GET: the review page --------------------------------------------------------------------------------------
    def review(self, approval_id: str, params: dict[str, str]) -> Response[str]:
        approver = self.approver()
        store = self.approvals.store
        now = self.approvals.clock()
        decision = self.approvals.signer.check(approval_id, params, now)
        rec = _approval(self.approvals, approval_id)
        context = store.approvals.context(approval_id)
        plan = load_plan(store.artifacts, _run_of(rec))
        status = "expired" if rec.status == "pending" and rec.decide_by <= now else rec.status
        expires = params["expires"]
        form = {"link": decision, "expires": expires, "sig": params["sig"],
                "nonce": self.nonces.issue(approval_id, int(expires))}
        view = Review(approval_id=approval_id, cluster=rec.cluster_name, status=status, decide_by=rec.decide_by,
                      now=now, rows=rows_of(plan), trigger=trigger_text(context.trigger),
                      started_at=context.started_at, approval_reasons=plan.approval_reasons, warnings=plan.warnings,
                      settings=plan.field_changes, decided_by=rec.decided_by,
                      execution_url=execution_url(rec.execution_arn), form=form, action=f"{approval_id}/decision",
                      signed_in_as=approver.name if approver else None, preemptions=plan.preemptions,
                      preemptions_unlisted=plan.preemptions_unlisted,
                      preempted_gpu_hours=plan.preempted_gpu_hours)
        return _html(200, review_page(view))

    # --- POST: the decision ----------------------------------------------------------------------------------------
    def decide(self, approval_id: str) -> Response[str]:
        approver = self.approver()
        store = self.approvals.store
        now = self.approvals.clock()
        form = _form(_body())
        link = {"decision": form.get("link", ""), "expires": form.get("expires", ""), "sig": form.get("sig", "")}
        self.approvals.signer.check(approval_id, link, now)
        expires = int(link["expires"])
        nonce_id = self.nonces.check(approval_id, expires, form.get("nonce", ""), now)
        chosen = form.get("decision", "")
        comment = form.get("comment", "").strip()
        # With a verified identity a typed name is ignored; a typed one is recorded as one safe line.
        name = "" if approver else form.get("name", "").strip()
        if chosen not in DECISIONS:
            raise InvalidInput("The form named no decision (approve or reject).", value=chosen)
        if len(comment) > COMMENT_MAX or len(name) > NAME_MAX:
            raise InvalidInput(f"The comment is limited to {COMMENT_MAX} characters and the name to {NAME_MAX}.")
        comment, name = clean_text(comment, COMMENT_MAX), clean_text(name, NAME_MAX)
        rec = _approval(self.approvals, approval_id)
        url = execution_url(rec.execution_arn)
        app.append_context(execution_url=url)  # type: ignore[no-untyped-call]  # what a refusal's page links to
        if not store.approvals.claim_nonce(approval_id, nonce_id, datetime.fromtimestamp(expires, UTC)):
            raise FormAlreadySubmitted("This form was already submitted; open the link from the message again to see "
                                       "where the approval stands.")
        source = app.current_event.request_context.http.source_ip or "unknown address"
        who = approver.name if approver else name or f"approval page from {source}"
        decision: Decision = "approve" if chosen == "approve" else "reject"
        text = self.approvals.decide(approval_id, decision, who, comment=comment or None,
                                     identity=approver.identity if approver else None)
        title = "Approved" if decision == "approve" else "Rejected"
        then = (" The run goes on to apply the plan." if decision == "approve"
                else " The run ends without changing any quota.")
        return _html(200, message_page(title, text + then, execution_url=url, ok=True))

    # --- POST: a Slack button --------------------------------------------------------------------------------------
    def slack_signed(self, body: str) -> bool:
        """Whether the request is Slack's, signed with the app's signing secret (buttons and commands alike)."""
        headers = dict(app.current_event.headers or {})
        return bool(self.slack_signing_secret) and slack_request_is_valid(
            self.slack_signing_secret or "", body, headers, self.approvals.clock())

    def slack(self) -> Response[str]:
        body = _body()
        if not self.slack_signed(body):
            return _text(401, "invalid Slack signature")
        try:
            decision, approval_id, user, team = _slack_action(body)
        except ValueError:
            return _text(400, "unexpected Slack payload")
        if decision not in DECISIONS:
            return _text(200, "")
        if not APPROVAL_ID.fullmatch(approval_id):
            raise UnknownApproval("There is no such approval.")
        shown = (clean_text(user.get(k), NAME_MAX) for k in ("username", "name", "id"))
        who = f"slack:{next((n for n in shown if n), 'unknown')}"
        identity = {k: v for k, v in (("via", "slack"), ("user_id", clean_text(user.get("id"), NAME_MAX)),
                                      ("team_id", clean_text(team.get("id"), NAME_MAX))) if v}
        return _slack_reply(self.approvals.decide(approval_id, "approve" if decision == "approve" else "reject", who,
                                                  identity=identity))


    # --- POST: the slash command ----------------------------------------------------------------------------------
    def command(self) -> Response[str]:
        """Reads the table only (the latest run's documents, the audit log): no collect, no AWS call beyond
        DynamoDB, so the answer is within Slack's three seconds."""
        body = _body()
        if not self.slack_signed(body):
            return _text(401, "invalid Slack signature")
        from rebalancer.app.approvals.slash_command import answer

        try:
            form = dict(parse_qsl(body, keep_blank_values=True, max_num_fields=SLASH_MAX_FIELDS))
        except ValueError:
            raise InvalidInput("The command's form has more fields than Slack sends.") from None
        if self.runs is None:
            raise NotFound("The slash command is not wired to the controller's table.")
        return _json(answer(self.runs, self.clusters, form.get("text", "")))


def _claims() -> Mapping[str, Any]:
    """The verified token's claims, or {} when the authorizer passed none or something that is not an object."""
    try:
        claims = app.current_event.request_context.authorizer.jwt_claim
    except (AttributeError, KeyError, TypeError):
        return {}
    return claims if isinstance(claims, Mapping) else {}


# --- routes ------------------------------------------------------------------------------------------------------
def _api() -> ApprovalApi:
    api: ApprovalApi = app.context["api"]
    return api


@app.get("/approvals/<approval_id>")
def review(approval_id: str) -> Response[str]:
    return _api().review(_known_shape(approval_id), dict(app.current_event.query_string_parameters or {}))


@app.route("/approvals/<approval_id>", method=[m for m in METHODS if m != "GET"])
def review_address_posted(approval_id: str) -> Response[str]:
    _known_shape(approval_id)
    raise MethodNotAllowed("Open the link from the message and press Approve or Reject there; nothing was changed.",
                           allow="GET")


@app.post("/approvals/<approval_id>/decision")
def decide(approval_id: str) -> Response[str]:
    return _api().decide(_known_shape(approval_id))


@app.route("/approvals/<approval_id>/decision", method=[m for m in METHODS if m != "POST"])
def decision_address_opened(approval_id: str) -> Response[str]:
    _known_shape(approval_id)
    raise MethodNotAllowed("Decisions are made with the Approve and Reject buttons of the review page; opening this "
                           "address changes nothing.", allow="POST")


@app.post(SLACK_PATH)
def slack_interaction() -> Response[str]:
    return _api().slack()


@app.post(SLASH_PATH)
def slack_command() -> Response[str]:
    return _api().command()


# --- error kinds become pages (or Slack's reply), here and only here ------------------------------------------------
# Powertools picks the handler of the raised class or, failing that, of its nearest base.
def _refusal(status: int, title: str, e: Exception, *, allow: str | None = None,
             to_slack: bool = False) -> Response[str]:
    """The page saying why nothing changed. A decision's outcome (`to_slack`) asked for by a Slack button is Slack's
    reply instead: Slack shows a reply's text, not its status. A slash command's refusal is always its one-line
    ephemeral reply (Slack shows a non-200 answer as "failed")."""
    if app.current_event.path == SLASH_PATH:
        from rebalancer.app.approvals.slash_command import one_line

        return _json(one_line(escaped(str(e))))
    if to_slack and app.current_event.path == SLACK_PATH:
        return _slack_reply(escaped(str(e)))
    return _html(status, message_page(title, str(e), execution_url=app.context.get("execution_url")), allow=allow)


# kind → status, page title, and whether a Slack button's request gets Slack's reply instead (its decision's outcome).
REFUSALS: tuple[tuple[type[Exception], int, str, bool], ...] = (
    (InvalidInput, 400, "Nothing changed", False),
    (BadLink, 403, "Link not valid", False),
    (LinkExpired, 410, "Link expired", False),
    (SignInRequired, 401, "Sign-in required", False),
    (MethodNotAllowed, 405, "Use the review page", False),
    (NotFound, 404, "Not found", False),
    (UnknownApproval, 404, "No such approval", True),
    (ConflictError, 409, "Nothing changed", True),  # ApprovalNotPending (decided, expired), FormAlreadySubmitted
    (RunNotWaiting, 410, "Nothing changed", True),
    (DecisionNotDelivered, 502, "Not delivered", True),
    (RecordUnreadable, 409, "Recorded by an older version", True),  # a stored plan, snapshot or approval
    (TransientError, 503, "Try again in a moment", True),  # the table throttled past the SDK's retries
)


def _register(kind: type[Exception], status: int, title: str, to_slack: bool) -> None:
    def refuse(e: Exception) -> Response[str]:
        return _refusal(status, title, e, allow=getattr(e, "allow", None), to_slack=to_slack)

    app.exception_handler(kind)(refuse)


for _kind, _status, _title, _to_slack in REFUSALS:
    _register(_kind, _status, _title, _to_slack)


@app.not_found
def not_found(_e: Exception) -> Response[str]:
    return _html(404, message_page("Not found", "There is no page here."))


# --- helpers -------------------------------------------------------------------------------------------------------
def _html(status: int, body: str, *, allow: str | None = None) -> Response[str]:
    return Response(status_code=status, body=body, headers={**SECURITY_HEADERS, **({"allow": allow} if allow else {})})


def _slack_reply(text: str) -> Response[str]:
    return Response(status_code=200, headers={"content-type": "application/json"},
                    body=json.dumps({"replace_original": False, "text": text}))


def _json(document: Mapping[str, Any]) -> Response[str]:
    return Response(status_code=200, headers={"content-type": "application/json"}, body=json.dumps(document))


def _text(status: int, body: str) -> Response[str]:
    return Response(status_code=status, body=body, headers={"content-type": "text/plain; charset=utf-8"})


def _body() -> str:
    """The request's body as text, decoded once (API Gateway base64-encodes form posts)."""
    try:
        return app.current_event.decoded_body or ""
    except ValueError:  # not base64, or not UTF-8
        raise InvalidInput("The request's body could not be read.") from None


def _form(body: str) -> dict[str, str]:
    try:
        return dict(parse_qsl(body, keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS))
    except ValueError:
        raise InvalidInput("The form has more fields than the review page sends.") from None


def _known_shape(approval_id: str) -> str:
    if not APPROVAL_ID.fullmatch(approval_id):
        raise NotFound("There is no page here.")
    return approval_id


def _approval(approvals: Approvals, approval_id: str) -> ApprovalRecord:
    rec = approvals.store.approvals.get(approval_id)
    if rec is None:
        raise UnknownApproval("There is no approval with this id.")
    return rec


def _run_of(rec: ApprovalRecord) -> RunRef:
    return RunRef(cluster_name=rec.cluster_name, execution_name=rec.execution_arn.rsplit(":", 1)[-1],
                  execution_arn=rec.execution_arn)


def _slack_action(body: str) -> tuple[str, str, dict[str, str], dict[str, str]]:
    """(action id, its value: the approval id, the user, the workspace) of a signed block_actions payload. Raises
    ValueError for any other shape."""
    try:
        payload = json.loads(dict(parse_qsl(body, max_num_fields=MAX_FORM_FIELDS))["payload"])
    except KeyError:
        raise ValueError("no payload") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("actions"), list) or not payload["actions"]:
        raise ValueError("no actions")
    action = payload["actions"][0]
    if not isinstance(action, dict) or not isinstance(action.get("action_id"), str) \
            or not isinstance(action.get("value"), str):
        raise ValueError("an action without action_id and value")
    user, team = (payload[k] if payload.get(k) is not None else {} for k in ("user", "team"))
    if not isinstance(user, dict) or not isinstance(team, dict):
        raise ValueError("user or team is not an object")
    return (action["action_id"], action["value"], {k: str(v) for k, v in user.items() if isinstance(v, str)},
            {k: str(v) for k, v in team.items() if isinstance(v, str)})
