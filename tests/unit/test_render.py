"""The plan table for people."""

from __future__ import annotations

from datetime import timedelta

from rich.console import Console
from support.clusters import T0, snapshot

from rebalancer.app.notifications.messages import render_text
from rebalancer.app.notifications.notify import message_for
from rebalancer.app.workflow.state import RunRef
from rebalancer.domain.plan import Plan
from rebalancer.domain.policy import Policy
from rebalancer.planning.planner import make_plan
from rebalancer_tools.reports.render import render_plan

G5 = "ml.g5.12xlarge"


def rendered(policy: dict[str, object], **snap: object) -> str:
    console = Console(width=80, record=True, color_system=None)
    render_plan(make_plan(snapshot({G5: 2}, **snap), Policy.model_validate(policy), T0), console)  # type: ignore[arg-type]
    return console.export_text()


def test_no_change_says_so() -> None:
    out = rendered({"teams": {"a": {}}}, quotas={"a": {G5: 4}}, pending={"a": {G5: 4}})
    assert "no change needed" in out


def test_dry_run_says_nothing_will_be_applied_and_long_reasons_wrap_within_80_columns() -> None:
    out = rendered({"mode": "dry-run", "teams": {"a": {"weight": 3}, "b": {}}},
                   quotas={"a": {G5: 8}}, pending={"b": {G5: 8}}, in_use={"a": {G5: 2}})
    assert "dry run: nothing will be applied" in out
    assert "8 → 2" in out
    assert "0 → 6" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_approval_reasons_are_listed() -> None:
    out = rendered({"mode": "approve", "teams": {"a": {}, "b": {}}}, quotas={"a": {G5: 8}}, pending={"b": {G5: 8}})
    assert "needs approval" in out
    assert "mode is approve" in out


def test_a_change_a_cooldown_keeps_back_is_shown_with_what_is_wanted_and_when_it_ends() -> None:
    """`no change needed` only when nothing is wanted; a change a hold keeps back is a row, with its hold."""
    pol = {"stability": {"cooldown_minutes": 120}, "teams": {"a": {}, "b": {}}}
    out = rendered(pol, quotas={"a": {G5: 8}, "b": {G5: 0}}, in_use={"a": {G5: 2}},
                   modified={"a": T0 - timedelta(minutes=10)})
    assert "no change needed" not in out
    assert "8 → 8 acc" in out
    assert "held, wants 2" in out
    words = " ".join(out.split())
    assert "cooldown until Mon 30 Nov 13:50 UTC" in words
    assert "test: nothing changes now: 1 change held back (cooldown until Mon 30 Nov 13:50 UTC)" in words
    assert max(len(line) for line in out.splitlines()) <= 80


def test_the_json_and_the_notify_message_carry_the_held_changes() -> None:
    snap = snapshot({G5: 2}, quotas={"a": {G5: 8}}, in_use={"a": {G5: 2}}, modified={"a": T0 - timedelta(minutes=10)})
    plan = make_plan(snap, Policy.model_validate({"stability": {"cooldown_minutes": 120}, "teams": {"a": {}}}), T0)
    [held] = plan.output()["held"]
    assert held == {"team": "a", "instance_type": G5, "resource": "accelerators", "before": 8.0, "after": 8.0,
                    "wanted": 2.0, "reason": plan.held[0].reason,
                    "hold": {"rule": "cooldown", "until": "2026-11-30T13:50:00Z",
                             "text": "cooldown until Mon 30 Nov 13:50 UTC (last changed 10 min ago, cooldown 120 min)"}}
    assert Plan.model_validate(plan.model_dump(mode="json")) == plan
    run = RunRef(cluster_name="test", execution_name="e", execution_arn="arn:aws:states:us-east-1:1:execution:m:e")
    message = message_for("dry_run", run, plan)
    assert message.held == plan.held
    assert "Held back (what the policy wants and a hold keeps back):" in render_text(message)[1]
