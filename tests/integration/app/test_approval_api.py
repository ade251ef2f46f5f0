"""The approval API's edges, through its resolver against the template's table in moto: routes and methods, bodies
that cannot be read, who the approver is with and without the JWT authorizer, and Slack payloads. Whatever comes
in, the answer is a page or a Slack reply with a 4xx or 200, and nothing is decided that should not be."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from botocore.exceptions import ClientError
from support.approval_api import BASE, Api, approval_api, slack_headers
from support.approval_page import has_form

from rebalancer_tools.fakes.http_api import http_api_event

ISSUER = "https://login.example.com/oauth2/default"
ALICE = {"iss": ISSUER, "sub": "00u1alice", "email": "alice@example.com", "aud": "rebalancer-approvals"}
SLACK_SECRET = "slack-secret"


@pytest.fixture
def api() -> Iterator[Api]:
    with approval_api(slack_signing_secret=SLACK_SECRET) as a:
        yield a


@pytest.fixture
def signed_in() -> Iterator[Api]:
    with approval_api(oidc_issuer=ISSUER, slack_signing_secret=SLACK_SECRET) as a:
        yield a


def _unchanged(api: Api) -> None:
    assert (api.status(), api.sfn.calls, api.approval_audit()) == ("pending", [], [])


# --- routes and methods -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/", "/elsewhere", "/approvals", "/approvals/", "/approvals/x/y/z",
                                  "/approvals/has%20space", f"/approvals/{'a' * 65}", "/slack", "/favicon.ico"])
def test_an_unknown_address_gets_the_not_found_page(api: Api, path: str) -> None:
    answer = api.call("GET", f"{BASE}{path}")
    assert answer["statusCode"] == 404
    assert "<h1>Not found</h1>" in answer["body"]
    assert answer["headers"]["content-type"] == "text/html; charset=utf-8"
    _unchanged(api)


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
def test_any_method_but_get_on_the_review_address_is_405_allow_get(api: Api, method: str) -> None:
    answer = api.call(method, api.link(), {"decision": "approve"})
    assert (answer["statusCode"], answer["headers"]["allow"]) == (405, "GET")
    _unchanged(api)


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
def test_any_method_but_post_on_the_decision_address_is_405_allow_post(api: Api, method: str) -> None:
    url, fields = api.page_form()
    answer = api.call(method, url, {**fields, "decision": "approve"})
    assert (answer["statusCode"], answer["headers"]["allow"]) == (405, "POST")
    assert "changes nothing" in answer["body"]
    _unchanged(api)


def test_get_on_the_slack_address_is_not_found(api: Api) -> None:
    assert api.call("GET", f"{BASE}/slack/interactions")["statusCode"] == 404


# --- bodies that cannot be read -----------------------------------------------------------------------------------
@pytest.mark.parametrize("event_body", [
    {"body": "%%% not base64 %%%", "isBase64Encoded": True},
    {"body": "//79", "isBase64Encoded": True},  # base64 of bytes that are not UTF-8
])
def test_a_form_body_that_cannot_be_read_is_400_and_consumes_nothing(api: Api, event_body: dict[str, Any]) -> None:
    url, fields = api.page_form()
    event = {**http_api_event("POST", url), **event_body}
    answer = api.http.handle(event)
    assert answer["statusCode"] == 400
    assert "could not be read" in answer["body"]
    _unchanged(api)
    assert api.call("POST", url, {**fields, "decision": "approve"})["statusCode"] == 200


def test_a_form_with_more_fields_than_the_page_sends_is_400(api: Api) -> None:
    url, fields = api.page_form()
    answer = api.call("POST", url, {**fields, "decision": "approve", **{f"x{i}": "1" for i in range(20)}})
    assert answer["statusCode"] == 400
    _unchanged(api)


# --- who decides: no authorizer, the link is the credential and the name is typed --------------------------------
def test_without_the_authorizer_claims_in_the_event_are_never_believed(api: Api) -> None:
    """A deployment without the JWT authorizer has nothing that verified a token: whatever claims an event carries,
    the page asks for a name and the typed name is what is recorded."""
    page = api.call("GET", api.link(), claims=ALICE)
    assert "id='name'" in page["body"]
    assert "alice@example.com" not in page["body"]
    url, fields = api.page_form()
    done = api.call("POST", url, {**fields, "decision": "approve", "name": "bob"}, claims=ALICE)
    assert done["statusCode"] == 200, done["body"]
    [audit] = api.approval_audit()
    assert (audit["who"], audit.get("detail")) == ("bob", None)
    assert json.loads(api.sfn.calls[0][1]["output"])["decided_by"] == "bob"


# --- who decides: the JWT authorizer verified the caller -----------------------------------------------------------
def test_with_the_authorizer_the_page_shows_the_verified_identity_and_no_name_field(signed_in: Api) -> None:
    page = signed_in.call("GET", signed_in.link(), claims=ALICE)
    assert page["statusCode"] == 200, page["body"]
    assert "Signed in as <strong>alice@example.com</strong>" in page["body"]
    assert "id='name'" not in page["body"]
    assert has_form(page["body"])


def test_with_the_authorizer_the_decision_records_the_token_not_a_typed_name(signed_in: Api) -> None:
    url, fields = signed_in.page_form(claims=ALICE)
    done = signed_in.call("POST", url, {**fields, "decision": "approve", "name": "mallory", "comment": "ok"},
                          claims=ALICE)
    assert done["statusCode"] == 200, done["body"]
    [audit] = signed_in.approval_audit()
    assert audit["who"] == "alice@example.com"
    assert audit["detail"] == {"comment": "ok", "identity": {"via": "oidc", "issuer": ISSUER,
                                                             "subject": "00u1alice"}}
    assert json.loads(signed_in.sfn.calls[0][1]["output"])["decided_by"] == "alice@example.com"
    assert "already approved by alice@example.com" in signed_in.call("GET", signed_in.link(), claims=ALICE)["body"]


@pytest.mark.parametrize(("claims", "who"), [
    ({"iss": ISSUER, "sub": "00u2", "preferred_username": "carol"}, "carol"),
    ({"iss": ISSUER, "sub": "00u3"}, "00u3"),
    ({"iss": ISSUER, "sub": "00u4", "email": "  "}, "00u4"),
])
def test_the_identity_is_the_first_claim_the_token_has(signed_in: Api, claims: dict[str, str], who: str) -> None:
    page = signed_in.call("GET", signed_in.link(), claims=claims)
    assert f"Signed in as <strong>{who}</strong>" in page["body"]


@pytest.mark.parametrize("claims", [None, {}, {"iss": "https://evil.example", "sub": "x", "email": "a@b"},
                                    {"iss": ISSUER}])
def test_with_the_authorizer_a_request_without_a_verified_identity_is_401(signed_in: Api,
                                                                          claims: dict[str, str] | None) -> None:
    """API Gateway lets no such request through; should one reach the function anyway (a route added without the
    authorizer), it decides nothing."""
    page = signed_in.call("GET", signed_in.link(), claims=claims)
    assert page["statusCode"] == 401
    assert "signed in" in page["body"]
    url, fields = signed_in.page_form(claims=ALICE)
    assert signed_in.call("POST", url, {**fields, "decision": "approve"}, claims=claims)["statusCode"] == 401
    _unchanged(signed_in)


# --- Slack ---------------------------------------------------------------------------------------------------------
def _slack(api: Api, payload: Any, *, signed: bool = True, raw: str | None = None) -> dict[str, Any]:
    body = raw if raw is not None else urlencode({"payload": json.dumps(payload)})
    headers = slack_headers(body, SLACK_SECRET, api.clock.t) if signed else {}
    return api.http.handle(http_api_event("POST", f"{BASE}/slack/interactions", body=body, headers=headers))


def test_a_slack_decision_records_the_slack_user_of_the_signed_payload(api: Api) -> None:
    payload = {"type": "block_actions", "user": {"id": "U1", "username": "bob", "team_id": "T1"},
               "team": {"id": "T1", "domain": "example"},
               "actions": [{"action_id": "approve", "value": api.approval_id}]}
    answer = _slack(api, payload)
    assert answer["statusCode"] == 200
    assert "approved" in json.loads(answer["body"])["text"]
    [audit] = api.approval_audit()
    assert audit["who"] == "slack:bob"
    assert audit["detail"] == {"identity": {"via": "slack", "user_id": "U1", "team_id": "T1"}}


def test_the_slack_user_is_the_signed_one_even_when_the_page_is_signed_in(signed_in: Api) -> None:
    """Slack's endpoint sits outside the JWT authorizer (Slack sends no token): its signature is its proof."""
    payload = {"user": {"id": "U9"}, "actions": [{"action_id": "reject", "value": signed_in.approval_id}]}
    assert _slack(signed_in, payload)["statusCode"] == 200
    assert [a["who"] for a in signed_in.approval_audit()] == ["slack:U9"]


@pytest.mark.parametrize("payload", [
    [], "text", 7, {}, {"actions": {}}, {"actions": []}, {"actions": ["approve"]},
    {"actions": [{"action_id": 1, "value": "x"}]}, {"actions": [{"action_id": "approve"}]},
    {"actions": [{"action_id": "approve", "value": ["x"]}]},
    {"user": "bob", "actions": [{"action_id": "approve", "value": "x"}]},
    {"team": [], "actions": [{"action_id": "approve", "value": "x"}]},
])
def test_a_signed_slack_payload_of_another_shape_is_400_and_decides_nothing(api: Api, payload: Any) -> None:
    answer = _slack(api, payload)
    assert (answer["statusCode"], answer["body"]) == (400, "unexpected Slack payload")
    _unchanged(api)


@pytest.mark.parametrize("raw", ["", "payload=%7Bnot json", "other=1"])
def test_a_signed_slack_body_that_is_no_payload_is_400(api: Api, raw: str) -> None:
    assert _slack(api, None, raw=raw)["statusCode"] == 400
    _unchanged(api)


def test_an_unsigned_or_unreadable_slack_body_decides_nothing(api: Api) -> None:
    payload = {"actions": [{"action_id": "approve", "value": api.approval_id}]}
    assert _slack(api, payload, signed=False)["statusCode"] == 401
    unreadable = {**http_api_event("POST", f"{BASE}/slack/interactions"), "body": "//79", "isBase64Encoded": True}
    assert api.http.handle(unreadable)["statusCode"] == 400
    _unchanged(api)


@pytest.mark.parametrize("value", ["", "x" * 65, "APPROVAL#1", "../decision"])
def test_a_slack_button_naming_no_approval_answers_and_decides_nothing(api: Api, value: str) -> None:
    answer = _slack(api, {"actions": [{"action_id": "approve", "value": value}]})
    assert answer["statusCode"] == 200
    assert json.loads(answer["body"])["text"] == "There is no such approval."
    _unchanged(api)


# --- when Step Functions does not take the decision ------------------------------------------------------------------
def _refusing(api: Api, code: str) -> None:
    """The recorder of SendTask* answers as Step Functions does for `code`: a ClientError."""
    def refuse(**_kw: Any) -> None:
        raise ClientError({"Error": {"Code": code, "Message": "no"}, "ResponseMetadata": {"HTTPStatusCode": 400}},
                          "SendTaskSuccess")

    api.sfn.send_task_success = refuse  # type: ignore[method-assign]
    api.sfn.send_task_failure = refuse  # type: ignore[method-assign]


@pytest.mark.parametrize("code", ["TaskTimedOut", "TaskDoesNotExist", "InvalidToken"])
def test_a_run_that_no_longer_waits_gets_410_on_the_page_and_in_slack_and_the_audit_says_so(api: Api,
                                                                                           code: str) -> None:
    _refusing(api, code)
    url, fields = api.page_form()
    page = api.call("POST", url, {**fields, "decision": "approve"})
    assert page["statusCode"] == 410
    assert "no longer waiting for this decision" in page["body"]
    assert [a["outcome"] for a in api.approval_audit()] == [f"not-delivered:{code}"]


def test_a_slack_decision_the_run_no_longer_waits_for_is_a_slack_reply(api: Api) -> None:
    _refusing(api, "TaskTimedOut")
    answer = _slack(api, {"user": {"id": "U1"}, "actions": [{"action_id": "reject", "value": api.approval_id}]})
    assert answer["statusCode"] == 200
    assert "no longer waiting" in json.loads(answer["body"])["text"]


@pytest.mark.parametrize(("code", "kind"), [("ThrottlingException", "TransientError"),
                                            ("AccessDeniedException", "PermanentError")])
def test_a_decision_step_functions_fails_to_take_is_502_naming_the_kind(api: Api, code: str, kind: str) -> None:
    _refusing(api, code)
    url, fields = api.page_form()
    page = api.call("POST", url, {**fields, "decision": "approve"})
    assert page["statusCode"] == 502
    assert f"could not be passed on to the run ({kind})" in page["body"]
    assert [a["outcome"] for a in api.approval_audit()] == [f"not-delivered:{kind}"]


# --- identities cleaned where they enter (issue 25 item 5) ---------------------------------------------------------
FORGED = "eve\n2026-11-30 12:00 approval approved by admin\x1b[31m\u202e"


def test_a_typed_name_with_line_breaks_and_escapes_is_recorded_as_one_clean_line(api: Api) -> None:
    url, fields = api.page_form()
    done = api.call("POST", url, {**fields, "decision": "approve", "name": FORGED, "comment": "ok\n\x1b[2J"})
    assert done["statusCode"] == 200
    [audit] = api.approval_audit()
    assert audit["who"] == "eve 2026-11-30 12:00 approval approved by admin[31m"
    assert audit["detail"] == {"comment": "ok [2J"}
    [(_, sent)] = api.sfn.calls
    assert json.loads(sent["output"])["decided_by"] == audit["who"]


@pytest.mark.parametrize("claims", [
    {**ALICE, "email": ["alice@example.com", "admin@example.com"]},
    {**ALICE, "email": {"x": 1}, "preferred_username": 7},
    {**ALICE, "email": "alice@example.com\n\u2066admin", "sub": ["x"]},
])
def test_login_claims_of_any_type_are_a_page_below_500_and_only_strings_name_the_approver(
        signed_in: Api, claims: dict[str, Any]) -> None:
    page = signed_in.call("GET", signed_in.link(), claims=claims)
    assert page["statusCode"] < 500
    url, fields = signed_in.page_form(claims=claims)
    done = signed_in.call("POST", url, {**fields, "decision": "approve"}, claims=claims)
    assert done["statusCode"] == 200
    [audit] = signed_in.approval_audit()
    assert "\n" not in audit["who"]
    assert "\u2066" not in audit["who"]
    assert audit["who"] in ("alice@example.com admin", "00u1alice")


@pytest.mark.parametrize("claims", [[], "alice", {"iss": ["x"], "email": "a@b"}])
def test_claims_that_are_no_object_or_a_list_issuer_are_401(signed_in: Api, claims: Any) -> None:
    page = signed_in.http.handle(http_api_event("GET", signed_in.link(), claims=claims))
    assert page["statusCode"] == 401


def test_a_slack_username_with_escapes_is_recorded_clean(api: Api) -> None:
    payload = {"user": {"id": "U1\n", "username": "bob\x1b]0;pwned\x07\nslack:admin"},
               "actions": [{"action_id": "approve", "value": api.approval_id}]}
    assert _slack(api, payload)["statusCode"] == 200
    [audit] = api.approval_audit()
    assert audit["who"] == "slack:bob]0;pwned slack:admin"
    assert audit["detail"] == {"identity": {"via": "slack", "user_id": "U1"}}
