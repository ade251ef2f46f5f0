"""The approval HTTP API's pages against the template's table in moto: the review page decides nothing, the form's
POST decides once, and every other request gets a clear page, the right status and no change. Step Functions is a
recorder of SendTaskSuccess / SendTaskFailure (the real ASL round trip is in tests/e2e)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from support.approval_api import BASE, T0, Api, approval_api, slack_headers
from support.approval_page import has_form

from rebalancer.app.approvals.form_nonce import FormNonces
from rebalancer.app.notifications.messages import render_blocks, render_text
from rebalancer_tools.fakes.http_api import http_api_event


@pytest.fixture
def api() -> Iterator[Api]:
    with approval_api() as a:
        yield a


def test_the_review_page_shows_the_plan_and_decides_nothing(api: Api) -> None:
    page = api.call("GET", api.link())
    assert page["statusCode"] == 200
    body = page["body"]
    for text in ("c1", "node gpu-p5-0 Unhealthy (node-health)", "moves 16 accelerators, above 8",
                 "idle 90% of its quota", "3 jobs pending for 24 GPUs", "2026-11-30 13:00 UTC"):
        assert text in body
    assert "node gpu-p5-0 &lt;failed&gt; health check" in body  # escaped, not markup
    assert "ml.g5.8xlarge" in body
    assert "unchanged" in body
    assert page["headers"]["referrer-policy"] == "no-referrer"
    assert "form-action 'self'" in page["headers"]["content-security-policy"]
    api.call("GET", api.link("reject"))
    assert (api.status(), api.sfn.calls, api.approval_audit()) == ("pending", [], [])


def test_what_a_hold_keeps_back_is_in_the_approval_email_slack_and_the_page(api: Api) -> None:
    """The approval request shows the change a cooldown keeps back beside the ones it asks for: what the policy
    wants, what holds it and until when."""
    held = "wants 2 because demand 2 (2 running); gets 6 because cooldown until Mon 30 Nov 12:20 UTC"
    [message] = api.inbox.messages
    _, body = render_text(message)
    assert "Held back (what the policy wants and a hold keeps back):" in body
    assert f"  - training ml.g5.8xlarge accelerators: 6 -> 6, held, wants 2 ({held}" in body
    slack = "\n".join(str(b) for b in render_blocks(message))
    assert "*Held back:*" in slack
    assert "*6 → 6* (held, wants 2)" in slack
    assert held in slack
    page = api.call("GET", api.link())["body"]
    row = page[page.index("<td>training</td>"):]
    row = row[:row.index("</tr>")]
    assert "held, wants 2" in row
    assert held in row
    assert "16 accelerators taken from teams, 16 given" in page  # held rows move nothing


def test_approve_with_a_comment_decides_once_and_audits_it(api: Api) -> None:
    url, fields = api.page_form()
    done = api.call("POST", url, {**fields, "decision": "approve", "name": "alice", "comment": "ok <tonight>"})
    assert done["statusCode"] == 200, done["body"]
    assert "Approved" in done["body"]
    assert "console.aws.amazon.com" in done["body"]
    assert [c[0] for c in api.sfn.calls] == ["success"]
    assert api.sfn.calls[0][1]["taskToken"] == "token-1"
    [audit] = api.approval_audit()
    assert (audit["outcome"], audit["who"], audit["detail"]) == ("approved", "alice", {"comment": "ok <tonight>"})

    replay = api.call("POST", url, {**fields, "decision": "reject", "name": "mallory"})
    assert replay["statusCode"] == 409
    assert "already submitted" in replay["body"]
    later = api.call("GET", api.link("reject"))
    assert later["statusCode"] == 200
    assert "already approved by alice" in later["body"]
    assert not has_form(later["body"])
    assert len(api.sfn.calls) == 1
    assert api.status() == "approved"


def test_a_fresh_form_after_the_decision_changes_nothing(api: Api) -> None:
    url, first = api.page_form()
    _, second = api.page_form("reject")  # two tabs open: each page has its own nonce
    assert first["nonce"] != second["nonce"]
    assert api.call("POST", url, {**first, "decision": "reject"})["statusCode"] == 200
    late = api.call("POST", url, {**second, "decision": "approve"})
    assert late["statusCode"] == 409
    assert "already rejected" in late["body"]
    assert [c[0] for c in api.sfn.calls] == ["failure"]
    [audit] = api.approval_audit()
    assert audit["who"] == "approval page from 192.0.2.7"
    assert "detail" not in audit


@pytest.mark.parametrize(("change", "status", "says"), [
    ({"nonce": ""}, 403, "not issued for this approval"),
    ({"nonce": "00.11"}, 403, "not issued for this approval"),
    ({"sig": "0" * 64}, 403, "signature does not match"),
    ({"link": "reject"}, 403, "signature does not match"),
    ({"expires": "9999999999"}, 403, "signature does not match"),
    ({"decision": "maybe"}, 400, "named no decision"),
    ({"comment": "x" * 501}, 400, "limited to 500 characters"),
])
def test_a_bad_form_is_refused_and_consumes_nothing(api: Api, change: dict[str, str], status: int,
                                                     says: str) -> None:
    url, fields = api.page_form()
    form = {**fields, "decision": "approve", **change}
    answer = api.call("POST", url, form)
    assert (answer["statusCode"], says in answer["body"]) == (status, True)
    assert (api.status(), api.sfn.calls) == ("pending", [])
    assert api.call("POST", url, {**fields, "decision": "approve"})["statusCode"] == 200  # the real form still works


def test_a_nonce_of_another_approval_or_expiry_is_refused(api: Api) -> None:
    url, fields = api.page_form()
    nonces = FormNonces(api.approvals.signer.key)
    for nonce in (nonces.issue("another", int(fields["expires"])), nonces.issue(api.approval_id, 9_999_999_999)):
        answer = api.call("POST", url, {**fields, "nonce": nonce, "decision": "approve"})
        assert answer["statusCode"] == 403
        assert "not issued for this approval" in answer["body"]
    assert api.sfn.calls == []


def test_after_the_expiry_the_page_and_the_form_answer_410(api: Api) -> None:
    url, fields = api.page_form()
    api.clock.t = T0 + timedelta(hours=1)
    assert api.call("GET", api.link())["statusCode"] == 410
    answer = api.call("POST", url, {**fields, "decision": "approve"})
    assert answer["statusCode"] == 410
    assert "expired" in answer["body"]
    assert (api.status(), api.sfn.calls) == ("pending", [])


def test_wrong_methods_and_addresses_get_a_page_and_change_nothing(api: Api) -> None:
    url, fields = api.page_form()
    opened = api.call("GET", f"{url}?{urlencode({**fields, 'decision': 'approve'})}")
    assert (opened["statusCode"], opened["headers"]["allow"]) == (405, "POST")
    assert "changes nothing" in opened["body"]
    posted_to_link = api.call("POST", api.link(), {**fields, "decision": "approve"})
    assert (posted_to_link["statusCode"], posted_to_link["headers"]["allow"]) == (405, "GET")
    assert api.call("GET", f"{BASE}/approvals/nope?decision=approve&expires=1&sig=x")["statusCode"] == 403
    unknown = api.approvals.signer.link(BASE, "unknown1", "approve", T0 + timedelta(hours=1))
    assert api.call("GET", unknown)["statusCode"] == 404
    assert api.call("GET", f"{BASE}/elsewhere")["statusCode"] == 404
    assert (api.status(), api.sfn.calls) == ("pending", [])


def test_slack_buttons_and_the_page_share_one_decision(api: Api) -> None:
    """The page is open; a Slack rejection comes first; the page's Approve then finds the approval decided."""
    url, fields = api.page_form()
    api.http.slack_signing_secret = "slack-secret"
    payload = {"type": "block_actions", "user": {"id": "U1", "username": "bob"},
               "actions": [{"action_id": "reject", "value": api.approval_id}]}
    body = urlencode({"payload": json.dumps(payload)})
    slack = api.http.handle(http_api_event("POST", f"{BASE}/slack/interactions", body=body,
                                           headers=slack_headers(body, "slack-secret", api.clock.t)))
    assert "rejected" in json.loads(slack["body"])["text"]
    late = api.call("POST", url, {**fields, "decision": "approve", "name": "alice"})
    assert late["statusCode"] == 409
    assert "already rejected" in late["body"]
    page = api.call("GET", api.link())
    assert "already rejected by slack:bob" in page["body"]
    assert not has_form(page["body"])
    assert [c[0] for c in api.sfn.calls] == ["failure"]
    assert [a["who"] for a in api.approval_audit()] == ["slack:bob"]
