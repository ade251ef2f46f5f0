"""The app layer's part of issue 7: which versions a run plans with (console edit vs our own change), and how
setting changes and console edits are shown in SNS text, Slack blocks and the review page."""

from __future__ import annotations

from datetime import timedelta

from support.clusters import T0, policy, snapshot

from rebalancer.app.approvals.review_page import Review, review_page, rows_of
from rebalancer.app.notifications.messages import Message, field_line, render_blocks, render_text
from rebalancer.app.workflow.run_plan import known_versions_for
from rebalancer.domain.plan import CLUSTER, FieldChange, Plan
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan

P5 = "ml.p5.48xlarge"
LEND = {"sharing": {"strategy": "Lend"}}
EDIT = FieldChange(team="b", field="ComputeQuotaConfig.ResourceSharingConfig.Strategy", before="DontLend",
                   after="Lend", console_edit=True, reason="console edit will be replaced")
POLICY_CHANGE = FieldChange(team=CLUSTER, field="SchedulerConfig.FairShare", before="Disabled", after="Enabled",
                            reason="policy changed")


def test_a_quota_we_never_wrote_is_ours_unless_the_policy_would_rewrite_its_settings() -> None:
    snap = snapshot({P5: 2}, quotas={"a": {P5: 8}, "b": {P5: 8}}, in_use={"a": {P5: 8}, "b": {P5: 8}})
    want = policy({"a": {}, "b": LEND})
    known = known_versions_for({}, snap, want)
    assert known == {"a": 1}  # b's sharing differs from the policy: it may be a console edit
    plan = make_plan(snap, want, T0, context=planning_context(snap, want, known_versions=known))
    assert {f.team for f in plan.console_edits} == {"b"}
    assert plan.requires_approval


def test_a_recorded_version_makes_a_policy_change_an_ordinary_change() -> None:
    snap = snapshot({P5: 2}, quotas={"a": {P5: 8}, "b": {P5: 8}}, in_use={"a": {P5: 8}, "b": {P5: 8}})
    want = policy({"a": {}, "b": LEND})
    known = known_versions_for({"b": 1}, snap, want)
    plan = make_plan(snap, want, T0, context=planning_context(snap, want, known_versions=known))
    assert plan.requests
    assert not plan.console_edits
    assert not plan.requires_approval
    known = known_versions_for({"b": 0}, snap, want)
    stale = make_plan(snap, want, T0, context=planning_context(snap, want, known_versions=known))
    assert stale.console_edits  # version 1 was written after ours


def test_sns_text_and_slack_blocks_show_each_setting_and_flag_console_edits() -> None:
    m = Message(kind="approval_request", cluster="c1", field_changes=(EDIT, POLICY_CHANGE))
    _subject, body = render_text(m)
    assert "Settings (before -> after):\n" \
           "  - b ComputeQuotaConfig.ResourceSharingConfig.Strategy: DontLend -> Lend " \
           "(console edit will be replaced)\n" \
           "  - (cluster) SchedulerConfig.FairShare: Disabled -> Enabled (policy changed)\n" in body
    sections = [b["text"]["text"] for b in render_blocks(m) if b["type"] == "section"]
    assert sections == [
        "`b` ComputeQuotaConfig.ResourceSharingConfig.Strategy: *DontLend → Lend*\n"
        ":pencil2: _console edit will be replaced_",
        "`(cluster)` SchedulerConfig.FairShare: *Disabled → Enabled*\n_policy changed_"]


def test_field_line_shows_absent_and_structured_values() -> None:
    assert field_line(FieldChange(team="a", field="ComputeQuotaConfig.ResourceSharingConfig.BorrowLimit",
                                  before=50, after=None, reason="policy changed")) == \
        "a ComputeQuotaConfig.ResourceSharingConfig.BorrowLimit: 50 -> (none) (policy changed)"
    assert field_line(FieldChange(team=CLUSTER, field="SchedulerConfig.PriorityClasses", before=None,
                                  after=[{"Name": "x", "Weight": 1}])).endswith(
        '(none) -> [{"Name": "x", "Weight": 1}] (policy)')


def test_review_page_lists_settings_with_console_edits_flagged_and_escaped() -> None:
    plan = Plan(cluster_name="c1", cluster_arn="arn", taken_at=T0, mode="auto")
    evil = EDIT.model_copy(update={"after": "<b>x</b>"})
    page = review_page(Review(approval_id="id", cluster="c1", status="pending", decide_by=T0 + timedelta(hours=1),
                              now=T0, rows=rows_of(plan), trigger="alarm", settings=(evil, POLICY_CHANGE)))
    settings = page.split("<ul id='settings'>", 1)[1].split("</ul>", 1)[0]
    assert settings.count("<li") == 2
    assert settings.count("Console edit will be replaced:") == 1
    assert "<b>x</b>" not in settings
    assert "&lt;b&gt;x&lt;/b&gt;" in settings
    assert "(cluster) SchedulerConfig.FairShare: Disabled -&gt; Enabled (policy changed)" in settings
    assert "<ul id='settings'>" not in review_page(Review(
        approval_id="id", cluster="c1", status="pending", decide_by=T0, now=T0, rows=(), trigger="alarm"))
