"""Whether a plan needs an admin before it is applied, and why: the policy's approval rules on its changes."""

from __future__ import annotations

from collections.abc import Sequence

from rebalancer.domain.plan import Change, FieldChange, taken
from rebalancer.domain.policy import Policy
from rebalancer.engine.allocation import EPS


def approval_reasons(policy: Policy, changes: Sequence[Change], fields: Sequence[FieldChange],
                     created: Sequence[str] = (), *, preempted: int = 0, preempted_gpu_hours: float = 0.0) -> list[str]:
    """One line per rule the plan trips; none when it may be applied as it is (or a dry run never applies).
    `created`: the teams the plan creates a quota for; `preempted`: how many running workloads its writes would make
    Kueue preempt, with `preempted_gpu_hours` of work at risk (rebalancer.planning.preemptions)."""
    if policy.mode == "dry-run" or not (changes or fields or created):
        return []
    if policy.mode == "approve":
        return ["mode is approve: every plan needs an admin"]
    rules = policy.approval
    reasons = []
    downs = [c for c in changes if c.after < c.before]
    moved = taken(downs)
    if moved > rules.moved_accelerators:
        reasons.append(f"moves {moved:g} accelerators, above approval.moved_accelerators {rules.moved_accelerators}")
    limit = rules.max_decrease_percent
    for c in [c for c in downs if c.before > 0 and (c.before - c.after) / c.before * 100 > limit + EPS]:
        before, after = c.before, c.after
        reasons.append(f"{c.team} loses {(before - after) / before:.0%} of {c.pool} "
                       f"({before:g} → {after:g}), above approval.max_decrease_percent {limit:g}")
    if rules.max_preempted_gpu_hours is not None and preempted_gpu_hours > rules.max_preempted_gpu_hours + EPS:
        reasons.append(f"preempts {preempted} running workload{'s' if preempted != 1 else ''} with "
                       f"{preempted_gpu_hours:.1f} GPU-hours of work at risk, above "
                       f"approval.max_preempted_gpu_hours {rules.max_preempted_gpu_hours:g}")
    if rules.console_edits:
        edited: dict[str, list[str]] = {}
        for f in fields:
            if f.console_edit:
                edited.setdefault(f.team, []).append(f.field)
        for team, names in edited.items():
            reasons.append(f"console edit will be replaced: {team} ({', '.join(names)}); "
                           "approval.console_edits is on")
    if rules.new_teams and created:
        many = len(set(created)) > 1
        reasons.append(f"new team{'s' if many else ''} {', '.join(sorted(set(created)))}: the plan creates "
                       f"{'their quotas' if many else 'its quota'}, and a quota's team name can never be changed; "
                       "approval.new_teams is on")
    return reasons
