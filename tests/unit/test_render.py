"""The plan table for people."""

from __future__ import annotations

from rich.console import Console
from support.clusters import T0, snapshot

from rebalancer.domain.policy import Policy
from rebalancer.planning.planner import make_plan
from rebalancer_tools.render import render_plan

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
