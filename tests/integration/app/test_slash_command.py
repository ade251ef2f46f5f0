"""`/rebalancer why <team>` through the approval API, against the template's table in moto: Slack's signed form
posts (valid, bad signature, expired timestamp, unsigned), the ephemeral answer as Block Kit blocks that slack_sdk
parses back, and one line for bad text or an unknown team. Nothing but the table is read (no collect)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from slack_sdk.models.blocks import Block, ContextBlock, HeaderBlock, SectionBlock
from support.approval_api import BASE, Api, approval_api, slack_headers
from support.why_runs import P5, record_runs

from rebalancer.app.approvals.http import ApprovalApi
from rebalancer.app.notifications.messages import escaped
from rebalancer_tools.fakes.http_api import http_api_event

SECRET = "slack-secret"


@pytest.fixture
def api() -> Iterator[Api]:
    with approval_api(slack_signing_secret=SECRET) as a:
        record_runs(a.store)
        a.http = ApprovalApi(a.approvals, slack_signing_secret=SECRET, clusters=("test",), runs=a.approvals.store)
        yield a


def _form(text: str) -> str:
    """What Slack posts for a slash command (application/x-www-form-urlencoded)."""
    return urlencode({"token": "legacy", "team_id": "T1", "team_domain": "example", "channel_id": "C1",
                      "channel_name": "ml-infra", "user_id": "U1", "user_name": "bob", "command": "/rebalancer",
                      "text": text, "api_app_id": "A1", "is_enterprise_install": "false",
                      "response_url": "https://hooks.slack.com/commands/T1/1/x", "trigger_id": "1.2.3"})


def _post(api: Api, text: str, *, headers: dict[str, str] | None = None, base64_body: bool = False) -> dict[str, Any]:
    body = _form(text)
    signed = slack_headers(body, SECRET, api.clock.t) if headers is None else headers
    return api.http.handle(http_api_event("POST", f"{BASE}/slack/commands", body=body, headers=signed,
                                          base64_body=base64_body))


def _reply(answer: dict[str, Any]) -> dict[str, Any]:
    assert answer["statusCode"] == 200, answer
    assert answer["headers"]["content-type"] == "application/json"
    doc: dict[str, Any] = json.loads(answer["body"])
    assert doc["response_type"] == "ephemeral"
    return doc


@pytest.mark.parametrize("base64_body", [False, True])
def test_a_signed_command_gets_the_answer_as_blocks(api: Api, base64_body: bool) -> None:
    doc = _reply(_post(api, "why a", base64_body=base64_body))
    assert doc["text"] == "Why: a on test: 1 pending"
    blocks = [Block.parse(b) for b in doc["blocks"]]
    assert [type(b) for b in blocks] == [HeaderBlock, SectionBlock, SectionBlock, ContextBlock]
    assert [b.to_dict() for b in blocks if b is not None] == doc["blocks"]  # slack_sdk reads back what it wrote
    header, quota, gang, context = doc["blocks"]
    assert header["text"]["text"] == "Why: a on test"
    assert f"{P5}: quota 8, 8 in use; last changed 24→8" in quota["text"]["text"]
    assert "idle 90 % of its quota" in quota["text"]["text"]
    assert gang["text"]["text"].startswith(f"*workload pretrain on {P5}: 16 accelerators in 2 pods")
    assert "• borrow limit reached: it may borrow 4 beyond its quota, 16 needed" in gang["text"]["text"]
    assert gang["text"]["text"].endswith(f"_Would start with:_ a guarantee of 24 in {P5} (now 8) and 12 "
                                         "accelerators free up")
    assert context["elements"][0]["text"].startswith("snapshot 2026-11-30 12:00 UTC, run test-0002")


def test_the_cluster_may_be_named(api: Api) -> None:
    assert _reply(_post(api, "why b test"))["text"] == "Why: b on test: nothing pending"


@pytest.mark.parametrize(("text", "line"), [
    ("", "usage: /rebalancer why <team> [cluster]"),
    ("status a", "usage: /rebalancer why <team> [cluster]"),
    ("why", "usage: /rebalancer why <team> [cluster]"),
    ("why a " + "x" * 300, "usage: /rebalancer why <team> [cluster]"),
    ("why nobody", "team: no team 'nobody' in the latest snapshot of test (teams: a, b)"),
    ("why <@U2>", "team: not a team name (letters, digits and hyphens, at most 63)"),
    ("why a elsewhere", "cluster: this controller manages test"),
])
def test_bad_text_is_one_ephemeral_line(api: Api, text: str, line: str) -> None:
    """As Slack's mrkdwn escapes (`<team>` shows as typed; unescaped, Slack reads it as a link)."""
    assert _reply(_post(api, text)) == {"response_type": "ephemeral", "text": escaped(line)}


def test_a_bad_signature_is_refused(api: Api) -> None:
    headers = slack_headers(_form("why a"), "another-secret", api.clock.t)
    answer = _post(api, "why a", headers=headers)
    assert (answer["statusCode"], answer["body"]) == (401, "invalid Slack signature")


def test_an_expired_timestamp_is_refused(api: Api) -> None:
    """Signed correctly, six minutes ago: a replay."""
    headers = slack_headers(_form("why a"), SECRET, api.clock.t - timedelta(minutes=6))
    assert _post(api, "why a", headers=headers)["statusCode"] == 401


def test_unsigned_or_without_a_signing_secret_is_refused(api: Api) -> None:
    assert _post(api, "why a", headers={})["statusCode"] == 401
    api.http = ApprovalApi(api.approvals, slack_signing_secret=None, clusters=("test",), runs=api.approvals.store)
    assert _post(api, "why a")["statusCode"] == 401


def test_a_cluster_without_a_stored_run_is_one_line() -> None:
    with approval_api(slack_signing_secret=SECRET) as a:
        a.http = ApprovalApi(a.approvals, slack_signing_secret=SECRET, clusters=("test",), runs=a.approvals.store)
        assert _reply(_post(a, "why a"))["text"].startswith("no stored run of cluster test")


def test_several_clusters_need_one_named(api: Api) -> None:
    api.http = ApprovalApi(api.approvals, slack_signing_secret=SECRET, clusters=("test", "other"),
                           runs=api.approvals.store)
    assert _reply(_post(api, "why a"))["text"] == ("name the cluster: /rebalancer why a &lt;cluster&gt; (one of "
                                                   "test, other)")
