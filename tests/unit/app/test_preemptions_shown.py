"""What a plan would preempt, as every reader sees it: the plan's table (CLI), the SNS text (email), the Slack blocks
(within Slack's 50 blocks and 3,000 characters a section, however many), the approval page, and `why` for the team
that loses the work (its text, JSON and Slack answer)."""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from support.clusters import T0, policy
from support.preempting import OPEN, full, many

from rebalancer.app.approvals.review_page import Review, review_page, rows_of
from rebalancer.app.approvals.slash_command import message as slash_message
from rebalancer.app.notifications.messages import PREEMPTIONS_SHOWN, render_blocks, render_text
from rebalancer.app.notifications.notify import message_for
from rebalancer.app.workflow.state import RunRef
from rebalancer.domain.plan import Plan
from rebalancer.planning.planner import make_plan
from rebalancer.planning.why import explain
from rebalancer_tools.reports.render import PREEMPTIONS_SHOWN as TABLE_ROWS
from rebalancer_tools.reports.render import render_plan

RUN = RunRef(cluster_name="test", execution_name="e1",
             execution_arn="arn:aws:states:us-east-1:123456789012:execution:rebalance:e1")


def preempting() -> Plan:
    return make_plan(full(), policy({"a": {}, "b": {}}, approval=OPEN), T0)


def quiet() -> Plan:
    return make_plan(full((("b-old", 8, None),)), policy({"a": {}, "b": {}}, approval=OPEN), T0)


def table(plan: Plan) -> str:
    console = Console(width=100, record=True, color_system=None)
    render_plan(plan, console)
    return " ".join(console.export_text().split())


def test_the_plans_table_names_the_workload_its_team_pool_size_run_time_and_the_hours() -> None:
    out = table(preempting())
    assert "would preempt (8.0 GPU-hours of work at risk)" in out
    assert "│ b │ b-new │ ml.p5.48xlarge │ 8 │ 1h 00m │ 8 │" in out
    assert "would preempt" not in table(quiet())


def test_the_table_shows_the_largest_and_counts_the_rest() -> None:
    out = table(many(preempting(), TABLE_ROWS + 5, unlisted=3))
    assert "b-workload-0000" in out
    assert f"b-workload-{TABLE_ROWS - 1:04d}" in out
    assert f"b-workload-{TABLE_ROWS:04d}" not in out
    assert "…and 8 more" in out


def test_the_email_lists_them_under_the_changes() -> None:
    _, body = render_text(message_for("approval_request", RUN, preempting()))
    assert "Would preempt 1 running workload, 8.0 GPU-hours of work at risk:" in body
    assert "  - b/b-new on ml.p5.48xlarge: 8 accelerators, ran 1h 00m (8.0 GPU-hours)" in body
    _, none = render_text(message_for("approval_request", RUN, quiet()))
    assert "preempt" not in none


def test_slack_says_them_in_one_section() -> None:
    blocks = render_blocks(message_for("approval_request", RUN, preempting()))
    (section,) = [b for b in blocks if "preempt" in json.dumps(b)]
    assert section["text"]["text"].startswith("*:warning: Would preempt 1 running workload, 8.0 GPU-hours")
    assert "b/b-new on ml.p5.48xlarge" in section["text"]["text"]


@pytest.mark.parametrize("changes", [0, 60])
def test_slack_stays_within_its_limits_however_many_are_preempted(changes: int) -> None:
    plan = preempting()
    plan = plan.model_copy(update={"changes": plan.changes * changes or plan.changes})
    plan = many(plan, 100, unlisted=4000, name="w" * 240)  # names as long as Kubernetes allows
    blocks = render_blocks(message_for("approval_request", RUN, plan))
    assert len(blocks) <= 50
    assert all(len(b["text"]["text"]) <= 3000 for b in blocks if b["type"] == "section")
    text = next(b["text"]["text"] for b in blocks if "preempt" in json.dumps(b))
    assert "Would preempt 4100 running workloads" in text
    _, body = render_text(message_for("approval_request", RUN, plan))
    assert body.count("  - team-") == PREEMPTIONS_SHOWN
    assert f"…and {4100 - PREEMPTIONS_SHOWN} more" in body


def test_the_approval_page_has_a_table_of_them() -> None:
    plan = many(preempting(), 3, unlisted=2)
    review = Review(approval_id="id1", cluster="test", status="pending", decide_by=T0, now=T0, rows=rows_of(plan),
                    trigger="alarm", preemptions=plan.preemptions, preemptions_unlisted=plan.preemptions_unlisted,
                    preempted_gpu_hours=plan.preempted_gpu_hours)
    page = review_page(review)
    assert "This change preempts 5 running workloads, 50.0 GPU-hours of work at risk." in page
    assert page.count("<tr><td>team-") == 3
    assert "<td>b-workload-0000</td><td>ml.p5.48xlarge</td><td class='n'>8</td><td class='n'>3h 00m</td>" \
           "<td class='n'>24.0</td>" in page
    assert "…and 2 more" in page
    assert "preempt" not in review_page(Review(approval_id="id1", cluster="test", status="pending", decide_by=T0,
                                               now=T0, rows=rows_of(quiet()), trigger="alarm"))


def test_why_tells_the_team_that_loses_the_work_and_no_other() -> None:
    plan = preempting()
    b = explain(full(), plan, "b")
    assert b.preempted == plan.preemptions
    lines = b.lines()
    at = lines.index("  the latest plan would preempt 1 running workload, 8.0 GPU-hours of work at risk:")
    assert lines[at + 1] == "    - b/b-new on ml.p5.48xlarge: 8 accelerators, ran 1h 00m (8.0 GPU-hours)"
    assert b.model_dump(mode="json")["preempted"] == [{"team": "b", "workload": "b-new", "pool": "ml.p5.48xlarge",
                                                       "accelerators": 8.0, "ran_s": 3600.0}]
    a = explain(full(), plan, "a")
    assert a.preempted == ()
    assert not any("preempt" in line for line in a.lines())


def test_slacks_why_says_it_in_a_section_within_slacks_limits() -> None:
    plan = many(preempting(), 40, name="w" * 240).model_copy(update={"preemptions": tuple(
        p.model_copy(update={"team": "b"}) for p in many(preempting(), 40, name="w" * 240).preemptions)})
    blocks = slash_message(explain(full(), plan, "b"))["blocks"]
    (section,) = [b for b in blocks if "preempt" in json.dumps(b)]
    text = section["text"]["text"]
    assert text.startswith("*:warning: The latest plan would preempt 40 running workloads")
    assert len(text) <= 3000
    assert len(blocks) <= 50
    assert "preempt" not in json.dumps(slash_message(explain(full(), plan, "a")))
