"""The approval API and the Slack endpoint under arbitrary requests, through the approval function's handler
(functions/approval/app.py) with API Gateway HTTP API (payload 2.0) events, on the local stack: whatever the method,
path, query, headers, body and base64 flag, the answer is a page below 500 and the table is unchanged. Only
behaviour is asserted, so these hold whatever routes the handler internally.

Slack requests are also sent correctly signed with arbitrary payloads (a signed payload of an unexpected shape gave a
500), and with bodies that are not UTF-8 (a 500 before the signature was checked)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest
from hypothesis import given
from hypothesis import strategies as st
from moto import mock_aws
from support.fuzz import JSON, fuzz

from rebalancer.app import wiring
from rebalancer.domain.records import ApprovalRecord
from rebalancer.errors import InvalidInput
from rebalancer_tools.fakes.ticking_clock import TickingClock
from rebalancer_tools.local.stack import LocalStack

CLUSTER = "ml-cluster"
POLICY = "teams:\n  a: {weight: 1}\n"
SLACK_SECRET = "fuzz-slack-signing-secret"
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
APPROVAL = "a" * 32
PATHS = st.sampled_from(["/", "/approvals", f"/approvals/{APPROVAL}", f"/approvals/{APPROVAL}/decision",
                         "/approvals/../decision", "/slack/interactions", "/approvals/x/decision/", "/%00",
                         f"/approvals/{'x' * 70}", "/approvals/\u00e9/decision"]) | st.text(max_size=40)
METHODS = st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"]) | st.text(max_size=8)
HEADERS = st.dictionaries(st.sampled_from(["content-type", "x-slack-signature", "x-slack-request-timestamp",
                                           "cookie", "host"]) | st.text(max_size=10), st.text(max_size=40),
                          max_size=4)
BODIES = st.text(max_size=200) | st.binary(max_size=200).map(lambda b: b.decode("latin-1"))
FORM_KEYS = st.sampled_from(["link", "expires", "sig", "nonce", "decision", "name", "comment", "payload"])
FORMS = st.dictionaries(FORM_KEYS, st.text(max_size=30), max_size=8).map(urlencode)


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    clock = TickingClock(T0)
    with mock_aws(), LocalStack(clusters={CLUSTER: POLICY}, slack_signing_secret=SLACK_SECRET, now=clock) as s:
        wiring.store().approvals.put(ApprovalRecord(
            APPROVAL, "token", f"arn:aws:states:us-east-1:123456789012:execution:rebalancer-rebalance:{CLUSTER}-1",
            CLUSTER, "pending", T0 + timedelta(hours=4)))
        yield s


def table(stack: LocalStack) -> list[dict[str, Any]]:
    items = boto3.resource("dynamodb", region_name=stack.region).Table(wiring.store().table_name).scan()["Items"]
    return sorted(items, key=lambda i: (str(i["pk"]), str(i["sk"])))


def event(method: str, path: str, *, headers: dict[str, str] | None = None, body: str | None = None,
          b64: bool = False, query: dict[str, str] | None = None) -> dict[str, Any]:
    """What API Gateway's HTTP API passes to the function for this request (payload format 2.0)."""
    e: dict[str, Any] = {
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": urlencode(query or {}),
        "headers": headers or {}, "isBase64Encoded": b64,
        "requestContext": {"http": {"method": method, "path": path, "sourceIp": "192.0.2.7", "protocol": "HTTP/1.1",
                                    "userAgent": "fuzz"}, "requestId": "r1", "stage": "$default"},
    }
    if query:
        e["queryStringParameters"] = query
    if body is not None:
        e["body"] = body
    return e


def answer(stack: LocalStack, request: dict[str, Any]) -> int:
    """The status, having checked it is below 500 and that nothing in the table changed."""
    before = table(stack)
    status = int(stack.invoke("approval", request)["statusCode"])
    assert status < 500, request
    assert table(stack) == before, request
    return status


def signed(body: str, now: datetime = T0) -> dict[str, str]:
    stamp = str(int(now.timestamp()))
    digest = hmac.new(SLACK_SECRET.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"x-slack-request-timestamp": stamp, "x-slack-signature": f"v0={digest}",
            "content-type": "application/x-www-form-urlencoded"}


@pytest.mark.parametrize(("what", "request_"), [
    ("Slack, not UTF-8", event("POST", "/slack/interactions", body=base64.b64encode(b"payload=\xff\xfe").decode(),
                                b64=True)),
    ("Slack, not base64", event("POST", "/slack/interactions", body="%%%", b64=True)),
    ("page, not UTF-8", event("POST", f"/approvals/{APPROVAL}/decision", body=base64.b64encode(b"\xff").decode(),
                               b64=True)),
    ("page, not base64", event("POST", f"/approvals/{APPROVAL}/decision", body="***", b64=True)),
    ("Slack, signed, user a string", event("POST", "/slack/interactions", headers=signed(
        p := urlencode({"payload": json.dumps({"actions": [{"action_id": "approve", "value": "x"}], "user": "u"})})),
        body=p)),
    ("Slack, signed, huge id", event("POST", "/slack/interactions", headers=signed(
        p := urlencode({"payload": json.dumps({"actions": [{"action_id": "approve", "value": "x" * 3000}]})})),
        body=p)),
    ("Slack, signed, id a number", event("POST", "/slack/interactions", headers=signed(
        p := urlencode({"payload": json.dumps({"actions": [{"action_id": "reject", "value": 7}]})})), body=p)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_the_requests_the_issue_found(stack: LocalStack, what: str, request_: dict[str, Any]) -> None:
    assert 400 <= answer(stack, request_) < 500 or what.startswith("Slack, signed")


@fuzz(max_examples=80)
@given(method=METHODS, path=PATHS, headers=HEADERS, body=st.none() | BODIES | FORMS, b64=st.booleans(),
       query=st.none() | st.dictionaries(st.sampled_from(["decision", "expires", "sig"]) | st.text(max_size=6),
                                         st.text(max_size=20), max_size=4))
def test_any_request_gets_a_page_below_500_and_changes_nothing(stack: LocalStack, method: str, path: str,
                                                                headers: dict[str, str], body: str | None, b64: bool,
                                                                query: dict[str, str] | None) -> None:
    answer(stack, event(method, path, headers=headers, body=body, b64=b64, query=query))


@fuzz(max_examples=80)
@given(payload=JSON | st.fixed_dictionaries({"actions": st.lists(
    st.fixed_dictionaries({"action_id": st.sampled_from(["approve", "reject", "other"]) | JSON,
                           "value": st.just(APPROVAL) | JSON}), max_size=2), "user": JSON}))
def test_a_signed_slack_payload_of_any_shape_is_answered_below_500(stack: LocalStack, payload: Any) -> None:
    """Signed, so past the signature check; the approval stays pending (any id the payload names is refused,
    or is the pending one with a decision that is not approve or reject)."""
    body = urlencode({"payload": json.dumps(payload)})
    if isinstance(payload, dict) and any(isinstance(a, dict) and a.get("action_id") in ("approve", "reject")
                                         and a.get("value") == APPROVAL for a in payload.get("actions") or []):
        body = urlencode({"payload": json.dumps({**payload, "actions": []})})
    answer(stack, event("POST", "/slack/interactions", headers=signed(body), body=body))


@fuzz(max_examples=40)
@given(body=st.binary(max_size=120))
def test_a_signed_slack_body_of_any_bytes_is_answered_below_500(stack: LocalStack, body: bytes) -> None:
    text = body.decode("utf-8", "replace")
    answer(stack, event("POST", "/slack/interactions", headers=signed(text), body=base64.b64encode(body).decode(),
                        b64=True))


@pytest.mark.parametrize("function", ["collect", "plan", "apply", "verify", "rollback", "notify"])
@pytest.mark.parametrize("given_", [{}, {"run": {"cluster_name": 7}, "attempt": -1, "kind": "x"}],
                         ids=["empty", "fields of the wrong shape"])
def test_a_malformed_step_input_is_an_invalid_input_through_each_handler(stack: LocalStack, function: str,
                                                                         given_: dict[str, Any]) -> None:
    """A PermanentError subclass (the ASL's Catch sends the run to its failure path; Retry matches only
    TransientError), raised before the step touches anything."""
    before = table(stack)
    with pytest.raises(InvalidInput, match=f"^{function} input: "):
        stack.invoke(function, given_)
    assert table(stack) == before
