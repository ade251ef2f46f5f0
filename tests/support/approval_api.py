"""The approval HTTP API against the template's table in moto, for the integration tests: an approval requested and
waiting, the API object in front of it, and helpers to call it as API Gateway would. Step Functions is a recorder of
SendTaskSuccess / SendTaskFailure (the real ASL round trip is in tests/e2e)."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode, urljoin

import boto3
from moto import mock_aws

from rebalancer.adapters.dynamodb.store import Store
from rebalancer.adapters.stepfunctions import TaskTokens
from rebalancer.app.approvals.decisions import Approvals
from rebalancer.app.approvals.http import ApprovalApi
from rebalancer.app.approvals.signing import LinkSigner
from rebalancer.app.notifications.messages import DeliveryResult, Message
from rebalancer.app.workflow.state import ApprovalRequest
from rebalancer.domain.plan import Change, Hold, Plan
from rebalancer_tools.fakes.http_api import http_api_event
from rebalancer_tools.fakes.ticking_clock import TickingClock
from support.approval_page import review_form
from support.clock import T0, ticking
from support.template import create_table

ARN = "arn:aws:states:us-east-1:123456789012:execution:rebalancer-rebalance:c1-node-health-0001"
BASE = "https://api.example"


@dataclass
class Sfn:
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def send_task_success(self, **kw: Any) -> None:
        self.calls.append(("success", kw))

    def send_task_failure(self, **kw: Any) -> None:
        self.calls.append(("failure", kw))


@dataclass
class Inbox:
    name: str = "inbox"
    messages: list[Message] = field(default_factory=list)

    def send(self, message: Message) -> DeliveryResult:
        self.messages.append(message)
        return DeliveryResult(self.name, True)


PLAN = Plan(
    cluster_name="c1", cluster_arn="arn:aws:sagemaker:us-east-1:123456789012:cluster/c1", taken_at=T0,
    mode="approve", requires_approval=True, approval_reasons=("moves 16 accelerators, above 8",),
    warnings=("node gpu-p5-0 <failed> health check",),
    allocations={"research": {"ml.p5.48xlarge": {"accelerators": 24.0}},
                 "inference": {"ml.p5.48xlarge": {"accelerators": 8.0}},
                 "platform": {"ml.g5.8xlarge": {"accelerators": 2.0}},
                 "training": {"ml.g5.8xlarge": {"accelerators": 6.0}}},
    changes=(Change(team="inference", instance_type="ml.p5.48xlarge", resource="accelerators", before=24, after=8,
                    reason="idle 90% of its quota"),
             Change(team="research", instance_type="ml.p5.48xlarge", resource="accelerators", before=8, after=24,
                    reason="3 jobs pending for 24 GPUs")),
    held=(Change(team="training", instance_type="ml.g5.8xlarge", resource="accelerators", before=6, after=6,
                 wanted=2, reason="wants 2 because demand 2 (2 running); gets 6 because cooldown until Mon 30 Nov "
                                  "12:20 UTC (last changed 10 min ago, cooldown 30 min)",
                 hold=Hold(rule="cooldown", text="cooldown until Mon 30 Nov 12:20 UTC (last changed 10 min ago, "
                                                 "cooldown 30 min)", until=T0.replace(minute=20))),))


@dataclass
class Api:
    http: ApprovalApi
    sfn: Sfn
    inbox: Inbox
    clock: TickingClock
    store: Store

    @property
    def approvals(self) -> Approvals:
        return self.http.approvals

    @property
    def approval_id(self) -> str:
        return str(self.inbox.messages[0].approval_id)

    def link(self, decision: str = "approve") -> str:
        m = self.inbox.messages[0]
        return str(m.approve_url if decision == "approve" else m.reject_url)

    def call(self, method: str, url: str, form: dict[str, str] | None = None,
             claims: dict[str, str] | None = None) -> dict[str, Any]:
        body = urlencode(form) if form is not None else None  # as API Gateway passes a form body: base64
        return self.http.handle(http_api_event(method, url, body=body, base64_body=True, source_ip="192.0.2.7",
                                               claims=claims))

    def page_form(self, decision: str = "approve", claims: dict[str, str] | None = None) -> tuple[str, dict[str, str]]:
        """(where the review page's form posts, its hidden fields), from a GET of the link (signed in: `claims`)."""
        page = self.call("GET", self.link(decision), claims=claims)
        assert page["statusCode"] == 200, page["body"]
        action, fields = review_form(page["body"])
        return urljoin(self.link(decision), action), fields

    def status(self) -> str:
        rec = self.store.approvals.get(self.approval_id)
        assert rec is not None
        return rec.status

    def approval_audit(self) -> list[dict[str, Any]]:
        return [a for a in self.store.audit.records("c1") if a["kind"] == "approval"]


@contextmanager
def approval_api(*, oidc_issuer: str | None = None, slack_signing_secret: str | None = None) -> Iterator[Api]:
    """In moto: the template's table, the plan stored, and an approval requested (its message in the inbox)."""
    with mock_aws():
        create_table(boto3.client("dynamodb", region_name="us-east-1"))
        clock, sfn, inbox = ticking(), Sfn(), Inbox()
        store = Store("t", now=clock)
        store.artifacts.put("c1-node-health-0001", "PLAN", PLAN.model_dump(mode="json"))
        approvals = Approvals(store=store, tasks=TaskTokens(sfn), signer=LinkSigner(b"k" * 32), channels=[inbox],
                              clock=clock)
        run = {"cluster_name": "c1", "execution_name": "c1-node-health-0001", "execution_arn": ARN,
               "trigger": {"kind": "node-health", "summary": "node gpu-p5-0 Unhealthy"},
               "started_at": T0.isoformat()}
        approvals.request(ApprovalRequest.model_validate({
            "action": "request", "run": run, "approval_round": 1, "approval_timeout_seconds": 3600,
            "task_token": "token-1", "base_url": BASE}))
        yield Api(ApprovalApi(approvals, slack_signing_secret=slack_signing_secret, oidc_issuer=oidc_issuer),
                  sfn, inbox, clock, store)


def slack_headers(body: str, secret: str, now: datetime) -> dict[str, str]:
    """Slack's v0 signature headers for this body at this time."""
    ts = str(int(now.timestamp()))
    sig = "v0=" + hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig}
