"""A plan's planning context as a document: what the plan step stores beside a run's snapshot (the run's CONTEXT
artifact), what `rebalancer snapshot --context-output` and `rebalancer history --snapshot-of RUN --context-output`
write, and what `rebalancer plan --snapshot S --context C` plans from. With the run's snapshot and its policy it
gives the controller's plan again, offline and exactly: the same context, the same planning time, the same mode.

The context itself (rebalancer.domain.context.PlanningContext) is what the planner reads beyond the snapshot;
this record adds what a replay needs to be exact and to say when it cannot be: the cluster and the snapshot's time
it belongs to, when the plan was made (cooldowns read it), and which policy it was made under (its digest, the
mode aside, and the mode: a deployment's ModeOverride changes only the mode)."""

import hashlib
import json
from typing import Any, Literal

from pydantic import AwareDatetime, Field

from rebalancer.domain.budget import BudgetUsage
from rebalancer.domain.context import PlanningContext, RecentChange
from rebalancer.domain.frozen import Frozen
from rebalancer.domain.policy import Policy
from rebalancer.domain.reservation import Reservation
from rebalancer.domain.snapshot import Snapshot


def policy_digest(policy: Policy) -> str:
    """The policy's SHA-256 over its canonical JSON, the mode aside: the same policy read from YAML, JSON, SSM or
    AppConfig has the same digest."""
    doc = json.loads(policy.model_dump_json(exclude={"mode"}))  # a fifth of model_dump(mode="json")'s time
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class RecordedContext(Frozen):
    """One plan's context (the fields of PlanningContext, as they were) and what it was planned at and under."""

    cluster: str
    taken_at: AwareDatetime  # the snapshot's
    planned_at: AwareDatetime  # the plan's `now`
    policy_sha256: str
    mode: Literal["auto", "approve", "dry-run"]
    known_versions: dict[str, int] | None = None
    budget_usage: dict[str, BudgetUsage] = Field(default_factory=dict)
    recent_changes: tuple[RecentChange, ...] = ()
    last_changed: dict[str, AwareDatetime] = Field(default_factory=dict)
    pending_since: dict[str, dict[str, AwareDatetime]] = Field(default_factory=dict)
    reservations: tuple[Reservation, ...] = ()
    ended: tuple[Reservation, ...] = ()
    unavailable_since: dict[str, tuple[str, AwareDatetime]] = Field(default_factory=dict)
    trailing_usage: dict[str, dict[str, float]] = Field(default_factory=dict)

    @classmethod
    def of(cls, snapshot: Snapshot, policy: Policy, planned_at: Any, context: PlanningContext) -> "RecordedContext":
        return cls(cluster=snapshot.cluster.ClusterName, taken_at=snapshot.taken_at, planned_at=planned_at,
                   policy_sha256=policy_digest(policy), mode=policy.mode,
                   known_versions=None if context.known_versions is None else dict(context.known_versions),
                   budget_usage=dict(context.budget_usage), recent_changes=context.recent_changes,
                   last_changed=dict(context.last_changed),
                   pending_since={team: dict(pools) for team, pools in context.pending_since.items()},
                   reservations=context.reservations, ended=context.ended,
                   unavailable_since=dict(context.unavailable_since),
                   trailing_usage={team: dict(types) for team, types in context.trailing_usage.items()})

    def context(self) -> PlanningContext:
        """The planning context as the plan read it."""
        return PlanningContext(
            known_versions=self.known_versions, budget_usage=self.budget_usage, recent_changes=self.recent_changes,
            last_changed=self.last_changed, pending_since=self.pending_since, reservations=self.reservations,
            ended=self.ended, unavailable_since=self.unavailable_since, trailing_usage=self.trailing_usage)
