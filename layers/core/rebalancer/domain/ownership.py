"""Who owns a quota. What the rebalancer creates carries a Description and a `managed-by` tag naming it; a quota
CloudFormation created (its `aws:cloudformation:stack-name` tag) is never rewritten: the stack would put its own
values back on the next update, or report drift. Plans hold such a quota outside the policy (its amounts count as
taken, like a team the policy does not name), and `rebalancer diff` says why."""

from __future__ import annotations

from typing import Any

from rebalancer.domain.policy import Policy
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.domain.snapshot import Snapshot

MANAGED_BY_KEY = "managed-by"
MANAGED_BY = "hyperpod-rebalancer"
CLOUDFORMATION_STACK_TAG = "aws:cloudformation:stack-name"
QUOTA_DESCRIPTION = ("Created by hyperpod-rebalancer from its policy; its amounts and settings follow the policy "
                     "(edits are reported, and replaced on the next apply).")
SCHEDULER_DESCRIPTION = ("Created by hyperpod-rebalancer from the policy's cluster section; the fields the policy "
                         "states follow it.")


def tags() -> list[dict[str, str]]:
    """The Tags of a Create request."""
    return [{"Key": MANAGED_BY_KEY, "Value": MANAGED_BY}]


def stack_of(snapshot: Snapshot, quota: ComputeQuota) -> str | None:
    """The CloudFormation stack that created `quota`, from the tags collect read; None when none (or unknown)."""
    return snapshot.quota_tags.get(quota.ComputeQuotaId, {}).get(CLOUDFORMATION_STACK_TAG)


def stack_owned(snapshot: Snapshot) -> dict[str, str]:
    """Team → stack, for the quotas CloudFormation created."""
    out: dict[str, str] = {}
    if not snapshot.quota_tags:  # tags not read: nothing is known to be a stack's (and 1,000 quotas need no pass)
        return out
    for q in snapshot.quotas:
        stack = stack_of(snapshot, q)
        if stack:
            out[q.team] = stack
    return out


def why_held(team: str, stack: str) -> str:
    return (f"{team}: its quota was created by CloudFormation stack {stack}: held outside the policy and never "
            "rewritten (the stack would revert it or report drift); change it in the stack")


def held_outside(snapshot: Snapshot, policy: Policy) -> tuple[Policy, list[str]]:
    """The policy without the teams whose quota CloudFormation owns, and why each is left out."""
    owned = {t: s for t, s in stack_owned(snapshot).items() if t in policy.teams}
    if not owned:
        return policy, []
    teams: dict[str, Any] = {t: tp for t, tp in policy.teams.items() if t not in owned}
    return policy.model_copy(update={"teams": teams}), [why_held(t, s) for t, s in sorted(owned.items())]
