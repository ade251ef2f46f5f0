"""The approver sees the figure the threshold used: the approval reason, the review page, the Slack message and the
email all count what the plan takes from teams, and show what it gives beside it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from rebalancer.app.approvals.review_page import Review, review_page, rows_of
from rebalancer.app.notifications.messages import Message, render_blocks, render_text
from rebalancer.domain.plan import Change, Plan
from rebalancer.domain.policy import Policy
from rebalancer.planning.approval import approval_reasons

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
P5 = "ml.p5.48xlarge"
# 56 accelerators taken (40 + 16), 12 given: the rest of what was taken is left idle (surplus: idle).
CHANGES = (Change(team="a", instance_type=P5, resource="accelerators", before=48, after=8, reason="idle"),
           Change(team="b", instance_type=P5, resource="accelerators", before=16, after=0, reason="idle"),
           Change(team="c", instance_type=P5, resource="accelerators", before=4, after=16, reason="demand 16"))
FIGURE = "56 accelerators taken from teams, 12 given"


def test_the_threshold_page_slack_and_email_show_one_figure() -> None:
    policy = Policy.model_validate({"mode": "auto", "approval": {"moved_accelerators": 16, "max_decrease_percent": 100},
                                    "teams": {"a": {}, "b": {}, "c": {}}})
    [reason] = approval_reasons(policy, CHANGES, [])
    assert reason.startswith("moves 56 accelerators, above approval.moved_accelerators 16")

    plan = Plan(cluster_name="c1", cluster_arn="arn:aws:sagemaker:us-east-1:1:cluster/c1", taken_at=NOW,
                mode="auto", allocations={t: {P5: {"accelerators": c.after}} for t, c in zip("abc", CHANGES,
                                                                                               strict=True)},
                changes=list(CHANGES))
    assert plan.moved() == 56
    page = review_page(Review(approval_id="id1", cluster="c1", status="pending", decide_by=NOW + timedelta(hours=1),
                              now=NOW, rows=rows_of(plan), trigger="alarm", approval_reasons=(reason,),
                              form={"nonce": "n"}, action="id1/decision"))
    assert f"Moves</dt><dd>{FIGURE}</dd>" in page

    message = Message(kind="approval_request", cluster="c1", changes=CHANGES, approval_reasons=(reason,))
    _, email = render_text(message)
    assert f"Moves: {FIGURE}\n" in email
    slack = json.dumps(render_blocks(message))
    assert f"*Moves:* {FIGURE}" in slack
