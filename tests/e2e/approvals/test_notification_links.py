"""Mail scanners and chat unfurlers open every link in a message. Each link of the approval request, in the SNS text
and in the Slack blocks, is opened (GET) as they would; then nothing has changed: the run still waits, the approval
is pending, no decision is audited, the quotas are the same, and the real form still decides afterwards."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
from support.approval_page import review_form
from support.approval_stack import Waiting

pytestmark = pytest.mark.slow  # a stack deploy and a run on moto's interpreter: seconds

URL = re.compile(r"https?://[^\s<>|\"']+")


def _urls(node: Any) -> list[str]:
    """Every URL anywhere in a Slack payload: button `url`s and links inside texts."""
    if isinstance(node, dict):
        return [u for v in node.values() for u in _urls(v)]
    if isinstance(node, list):
        return [u for v in node for u in _urls(v)]
    return URL.findall(node) if isinstance(node, str) else []


def test_opening_every_link_of_the_approval_request_changes_nothing(waiting: Waiting) -> None:
    stack = waiting.stack
    before = waiting.quotas()
    links = set(URL.findall(str(waiting.message["Message"]))) | {u for p in waiting.slack.posts for u in _urls(p)}
    ours = {u for u in links if u.startswith(waiting.gateway.url)}
    assert set(waiting.links.values()) <= ours  # the SNS text's approve and reject links
    assert {urlsplit(u).netloc for u in links - ours} <= {"us-east-1.console.aws.amazon.com"}  # read-only pages

    statuses = {}
    for url in sorted(ours):
        statuses[url] = stack.http("GET", url)["statusCode"]
        statuses[url + " (HEAD)"] = stack.http("HEAD", url)["statusCode"]
    page = stack.http("GET", waiting.links["Approve"])["body"]
    action, fields = review_form(page)
    decision_url = urljoin(waiting.links["Approve"], action)
    statuses["decision address"] = stack.http("GET", decision_url)["statusCode"]

    assert set(statuses.values()) <= {200, 405}
    assert statuses["decision address"] == 405
    assert stack.describe(waiting.arn)["status"] == "RUNNING"
    assert stack.states_entered(waiting.arn)[-1] == "RequestApproval"
    assert waiting.approval().status == "pending"
    assert waiting.approval_audit() == []
    assert waiting.quotas() == before

    # The scanners consumed nothing: the page a person then opens still decides.
    decided = stack.http("POST", decision_url, form={**fields, "decision": "approve", "name": "alice"})
    assert decided["statusCode"] == 200, decided["body"]
    assert stack.wait(waiting.arn)["status"] == "SUCCEEDED"
    assert [(a["outcome"], a["who"]) for a in waiting.approval_audit()] == [("approved", "alice")]
