"""`/rebalancer why` on the whole stack: a real run collected the demo cluster and planned (it waits for approval),
then Slack's signed slash command reaches the approval function, which runs with its template role's policy enforced
and reads only the table: research's pending gang and its raise in the plan are in the answer."""

from __future__ import annotations

import hashlib
import hmac
import json
from urllib.parse import urlencode

import pytest
from support.approval_stack import CLUSTER, P5, waiting_stack

pytestmark = pytest.mark.slow
SECRET = "slash-secret"


def test_the_slash_command_answers_from_the_stored_run() -> None:
    with waiting_stack(slack_signing_secret=SECRET) as w:
        body = urlencode({"command": "/rebalancer", "text": "why research", "user_id": "U1", "team_id": "T1",
                          "response_url": "https://hooks.slack.com/commands/T1/1/x"})
        assert w.stack.now is not None
        ts = str(int(w.stack.now().timestamp()))
        sig = "v0=" + hmac.new(SECRET.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
        unsigned = w.stack.http("POST", "https://x/slack/commands", body=body)
        assert unsigned["statusCode"] == 401
        answer = w.stack.http("POST", "https://x/slack/commands", body=body,
                              headers={"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig})
        assert answer["statusCode"] == 200, answer
        doc = json.loads(answer["body"])
        assert doc["response_type"] == "ephemeral"
        assert doc["text"] == f"Why: research on {CLUSTER}: 1 pending"
        texts = [b["text"]["text"] for b in doc["blocks"] if b["type"] == "section"]
        planned = w.plan.allocations["research"][P5]["accelerators"]
        assert f"the latest plan makes it {planned:g}" in texts[0]
        # the plan step stored the run's outlook: the team's standing over the window, and when the gang may start
        assert texts[1].startswith("*Standing over the last 168 h*\n")
        assert texts[2].startswith(f"*workload pretrain on {P5}: 24 accelerators in 3 pods")
        assert "\n_When:_ " in texts[2]
