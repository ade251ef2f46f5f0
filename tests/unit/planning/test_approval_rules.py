"""The approval rules on their own: a plan's changes and rewritten settings in, the reasons an admin must look."""

from __future__ import annotations

from support.clusters import policy

from rebalancer.domain.plan import Change, FieldChange
from rebalancer.planning.approval import approval_reasons

P5, C5 = "ml.p5.48xlarge", "ml.c5.4xlarge"
TEAMS: dict[str, dict[str, object]] = {"a": {}, "b": {}}


def change(team: str, before: float, after: float, *, instance_type: str = P5, profile: str | None = None,
           resource: str = "accelerators") -> Change:
    return Change(team=team, instance_type=instance_type, resource=resource, mig_profile=profile, before=before,
                  after=after, reason="demand")


def test_only_accelerators_taken_from_teams_count_as_moved() -> None:
    rules = policy(TEAMS, approval={"moved_accelerators": 8, "max_decrease_percent": 100})
    moves = [change("a", 16, 8), change("b", 8, 16), change("b", 64, 0, instance_type=C5, resource="vcpu")]
    assert approval_reasons(rules, moves, []) == []  # 8 taken, not above 8; vCPUs are not accelerators
    reasons = approval_reasons(rules, [*moves, change("b", 4, 3)], [])
    assert reasons == ["moves 9 accelerators, above approval.moved_accelerators 8"]


def test_a_large_decrease_names_the_team_and_the_pool() -> None:
    rules = policy(TEAMS, approval={"moved_accelerators": 100, "max_decrease_percent": 50})
    reasons = approval_reasons(rules, [change("a", 14, 2, profile="mig-1g.10gb", resource="partitions"),
                                       change("b", 8, 4)], [])
    assert reasons == [f"a loses 86% of {P5}:mig-1g.10gb (14 → 2), above approval.max_decrease_percent 50"]


def test_console_edits_are_listed_per_team_unless_the_rule_is_off() -> None:
    edits = [FieldChange(team="a", field="ComputeQuotaConfig.PreemptTeamTasks", console_edit=True),
             FieldChange(team="b", field="ComputeQuotaTarget.FairShareWeight"),
             FieldChange(team="a", field="ComputeQuotaTarget.FairShareWeight", console_edit=True)]
    assert approval_reasons(policy(TEAMS), [], edits) == [
        "console edit will be replaced: a (ComputeQuotaConfig.PreemptTeamTasks, ComputeQuotaTarget.FairShareWeight); "
        "approval.console_edits is on"]
    assert approval_reasons(policy(TEAMS, approval={"console_edits": False}), [], edits) == []


def test_the_mode_decides_before_the_thresholds() -> None:
    small = [change("a", 8, 7)]
    assert approval_reasons(policy(TEAMS, mode="approve"), small, []) == ["mode is approve: every plan needs an admin"]
    assert approval_reasons(policy(TEAMS, mode="approve"), [], []) == []  # nothing to approve
    assert approval_reasons(policy(TEAMS, mode="dry-run", approval={"moved_accelerators": 0}), small, []) == []
