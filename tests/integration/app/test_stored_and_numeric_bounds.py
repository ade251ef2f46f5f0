"""What the approval API reads is held to a bound: Slack's timestamp header and a link's expiry are parsed only as
a few ASCII digits (thousands of digits were a 500 from int()), and a stored document this version cannot read (a
plan, a snapshot, an approval record written by an older version) is answered as "recorded by an older version"
(a 409 page, Slack's reply, the slash command's one line), never a 500. The table is moto's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from support.approval_api import BASE, Api, approval_api, slack_headers
from support.why_runs import SECOND, record_runs

from rebalancer.adapters.dynamodb.table import KEY, SORT
from rebalancer.app.approvals.http import ApprovalApi
from rebalancer_tools.fakes.http_api import http_api_event

SECRET = "slack-secret"


@pytest.fixture
def api() -> Iterator[Api]:
    with approval_api(slack_signing_secret=SECRET) as a:
        yield a


def _slack_button(api: Api, timestamp: str | None = None) -> dict[str, Any]:
    body = urlencode({"payload": json.dumps({"user": {"id": "U1"}, "actions": [
        {"action_id": "approve", "value": api.approval_id}]})})
    headers = slack_headers(body, SECRET, api.clock.t)
    if timestamp is not None:
        headers["X-Slack-Request-Timestamp"] = timestamp
    return api.http.handle(http_api_event("POST", f"{BASE}/slack/interactions", body=body, headers=headers))


def test_a_slack_timestamp_of_thousands_of_digits_is_401_not_500(api: Api) -> None:
    """(Every other shape of the header: tests/unit/app/test_signing.py.)"""
    answer = _slack_button(api, "9" * 5000)
    assert (answer["statusCode"], answer["body"]) == (401, "invalid Slack signature")
    assert api.status() == "pending"


def test_a_link_whose_expiry_has_thousands_of_digits_is_a_403_page_not_a_500(api: Api) -> None:
    answer = api.call("GET", api.link().replace("expires=", f"expires={'9' * 5000}"))
    assert answer["statusCode"] == 403
    assert "This link is malformed." in answer["body"]


def _plan_of_an_older_version(api: Api) -> None:
    """The run's stored plan as an older version might have left it: a field this version requires is missing."""
    doc = api.store.artifacts.get("c1-node-health-0001", "PLAN")
    del doc["changes"][0]["reason"]
    api.store.artifacts.put("c1-node-health-0001", "PLAN", doc)


def test_a_stored_plan_that_no_longer_validates_is_a_409_page_naming_it(api: Api) -> None:
    _plan_of_an_older_version(api)
    answer = api.call("GET", api.link())
    assert answer["statusCode"] == 409
    assert "Recorded by an older version" in answer["body"]
    assert "the plan of run c1-node-health-0001 was recorded by an older version; this version cannot read it " \
           "(changes.0.reason: Field required)" in answer["body"]
    assert api.status() == "pending"


def test_an_approval_record_that_no_longer_reads_is_a_slack_reply_and_a_page(api: Api) -> None:
    api.store.table.table.update_item(Key={KEY: f"APPROVAL#{api.approval_id}", SORT: "APPROVAL"},
                                      UpdateExpression="SET decide_by = :d", ExpressionAttributeValues={":d": "soon"})
    answer = _slack_button(api)
    assert answer["statusCode"] == 200
    text = json.loads(answer["body"])["text"]
    assert text.startswith(f"approval {api.approval_id} was recorded by an older version; this version cannot read it")
    assert api.call("GET", api.link())["statusCode"] == 409
    assert api.sfn.calls == []


def test_a_stored_snapshot_that_no_longer_validates_is_the_slash_commands_one_line(api: Api) -> None:
    record_runs(api.store)
    doc = api.store.artifacts.get(SECOND, "SNAPSHOT")
    doc["cluster"]["InstanceGroups"] = "<!channel> not a list"
    api.store.artifacts.put(SECOND, "SNAPSHOT", doc)
    api.http = ApprovalApi(api.approvals, slack_signing_secret=SECRET, clusters=("test",), runs=api.store)
    body = urlencode({"command": "/rebalancer", "text": "why a"})
    answer = api.http.handle(http_api_event("POST", f"{BASE}/slack/commands", body=body,
                                            headers=slack_headers(body, SECRET, api.clock.t)))
    assert answer["statusCode"] == 200
    reply = json.loads(answer["body"])
    assert reply["response_type"] == "ephemeral"
    assert reply["text"].startswith(f"the snapshot of run {SECOND} was recorded by an older version; this version "
                                    "cannot read it (cluster.InstanceGroups: ")
    assert "`rebalancer why --live` answers now" in reply["text"]
    assert "<!channel>" not in reply["text"]
