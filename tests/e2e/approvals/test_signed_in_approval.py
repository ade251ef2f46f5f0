"""With the approval API's JWT authorizer (the template then sets APPROVAL_OIDC_ISSUER), a run waiting in
RequestApproval on moto's interpreter is approved by a signed-in person: the handler's page shows the token's
identity and no name field, the decision records that identity whatever name the form carries, and a request
without verified claims decides nothing."""

from __future__ import annotations

from urllib.parse import urljoin

import pytest
from support.approval_page import review_form
from support.approval_stack import waiting_stack

pytestmark = pytest.mark.slow  # a stack deploy and a run on moto's interpreter: seconds

ISSUER = "https://login.example.com/oauth2/default"
ALICE = {"iss": ISSUER, "sub": "00u1alice", "email": "alice@example.com", "aud": "rebalancer-approvals"}


def test_a_signed_in_approval_records_the_verified_identity() -> None:
    with waiting_stack(env={"APPROVAL_OIDC_ISSUER": ISSUER}) as waiting:
        stack, link = waiting.stack, waiting.links["Approve"]
        assert stack.http("GET", link)["statusCode"] == 401  # claims missing: nothing verified this caller
        page = stack.http("GET", link, claims=ALICE)
        assert page["statusCode"] == 200, page["body"]
        assert "Signed in as <strong>alice@example.com</strong>" in page["body"]
        assert "id='name'" not in page["body"]
        action, fields = review_form(page["body"])
        decision_url = urljoin(link, action)
        assert stack.http("POST", decision_url, form={**fields, "decision": "approve"})["statusCode"] == 401
        assert waiting.approval().status == "pending"

        decided = stack.http("POST", decision_url, form={**fields, "decision": "approve", "name": "mallory"},
                             claims=ALICE)
        assert decided["statusCode"] == 200, decided["body"]
        assert stack.wait(waiting.arn)["status"] == "SUCCEEDED"
        [audit] = waiting.approval_audit()
        assert (audit["outcome"], audit["who"]) == ("approved", "alice@example.com")
        assert audit["detail"]["identity"] == {"via": "oidc", "issuer": ISSUER, "subject": "00u1alice"}
        assert "Decided by: alice@example.com" in {m["kind"]: m for m in stack.sns_messages()}["applied"]["Message"]
