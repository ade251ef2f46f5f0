"""The plan use case of a rebalance run, as every entry point calls it (the workflow's Plan step, the CLI's
`rebalancer apply`, and `rebalancer plan` / `snapshot --context-output` given the table): the plan against what
the store knows (`context_for`: the versions our earlier writes left, so a quota at another version holds a console
edit; the budget use metered so far; the approved reservations; the nodes seen unavailable and since when; what
each team received over the fair-share window), recorded as the run's plan with its audit record (the record's
shape is `app.workflow.audit`'s, like every other) and the context it was planned with (what `rebalancer plan
--snapshot S --context C` plans from again)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal, Protocol

from rebalancer.app import budgets, reservations
from rebalancer.app.workflow import audit
from rebalancer.app.workflow.state import Artifacts, RunRef, stored_snapshot
from rebalancer.domain.basis import PlanBasis
from rebalancer.domain.context import PlanningContext
from rebalancer.domain.plan import Plan
from rebalancer.domain.policy import Policy
from rebalancer.domain.recorded_context import RecordedContext
from rebalancer.domain.snapshot import Snapshot
from rebalancer.planning.basis import basis_of
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan
from rebalancer.planning.requests import setting_changes

Decision = Literal["no_change", "dry_run", "approve", "notice", "apply"]


class UnavailableNodes(Protocol):
    """Since when each node has been seen unavailable for now: rebalancer.adapters.dynamodb.sightings;
    rebalancer_tools.fakes.memory_store.MemorySightings."""

    def unavailable(self, cluster_name: str) -> dict[str, tuple[str, datetime]]: ...
    def record_unavailable(self, cluster_name: str, nodes: dict[str, tuple[str, datetime]]) -> None: ...


class KnownVersions(Protocol):
    """Per team the version our last applied write left (app.workflow.runs.Versions records them)."""

    def known(self, cluster_name: str) -> dict[str, int]: ...


class Sources(Protocol):
    """What the planning context is read from (`context_for`): the versions our writes left, the metered use the
    plan's budgets and fair-share window are checked against, the reservations it honours and the nodes seen
    unavailable."""

    @property
    def versions(self) -> KnownVersions: ...
    @property
    def meter(self) -> budgets.MeterRecords: ...
    @property
    def reservations(self) -> reservations.ReservationRecords: ...
    @property
    def sightings(self) -> UnavailableNodes: ...


class RecordsAndSources(audit.Records, Sources, Protocol):
    """A run's records, and what its planning context is read from."""


def load_snapshot(artifacts: Artifacts, run: RunRef, *, again: bool = False) -> Snapshot:
    return Snapshot.model_validate(stored_snapshot(artifacts, run, again=again))


def known_versions_for(recorded: Mapping[str, int], snapshot: Snapshot, policy: Policy) -> dict[str, int]:
    """The versions to plan with: what our applied writes left (`recorded`, from the store), and for a quota we
    never wrote, its current version, so its amounts are ordinary rebalancing, unless the policy would rewrite one
    of its settings: then nothing is known and the plan marks it a console edit (it may be one)."""
    suspect = {f.team for f in setting_changes(snapshot, policy)}
    known = dict(recorded)
    for q in snapshot.quotas:
        if q.team not in known and q.team not in suspect:
            known[q.team] = q.ComputeQuotaVersion
    return known


def decide(plan: Plan) -> Decision:
    if plan.is_empty:
        return "no_change"
    if plan.mode == "dry-run":
        return "dry_run"
    if plan.requires_approval:
        return "approve"
    # a plan that would preempt running work tells its teams first (app.workflow.notice)
    return "notice" if plan.preemptions or plan.preemptions_unlisted else "apply"


@dataclass(frozen=True, slots=True)
class RunPlan:
    plan: Plan
    context: PlanningContext  # what it was planned with beyond the snapshot: versions, period-to-date budget use
    basis: PlanBasis  # what it was made from, for a write long after it to compare with the cluster then
    recorded: RecordedContext  # the context, as the document stored beside the run's snapshot (replayed offline)

    @property
    def known_versions(self) -> dict[str, int]:
        """What the plan took for our own writes' versions."""
        return dict(self.context.known_versions or {})

    @property
    def decision(self) -> Decision:
        return decide(self.plan)


def context_for(snapshot: Snapshot, policy: Policy, *, store: Sources) -> PlanningContext:
    """The planning context every caller with the table plans with (`planning_context` over what the store holds
    at the snapshot's time): the versions our recorded writes left, the budget use metered so far, the cluster's
    reservations (those approved and active at the snapshot's time), the nodes seen unavailable and since when and,
    with a fair-share window, what each team received over it. Reads only."""
    cluster = snapshot.cluster.ClusterName
    return planning_context(snapshot, policy,
                            known_versions=known_versions_for(store.versions.known(cluster), snapshot, policy),
                            metered=budgets.metered(store.meter, cluster, policy, snapshot.taken_at),
                            reservations=store.reservations.of_cluster(cluster),
                            unavailable_seen=store.sightings.unavailable(cluster),
                            trailing=budgets.trailing(store.meter, cluster, policy, snapshot.taken_at))


def advisory_key(line: str) -> str:
    """The key an advisory is announced under: its text, hashed to a short sort key."""
    return "advisory#" + hashlib.sha256(line.encode()).hexdigest()[:32]


def announce_advisories_once(planned: RunPlan, snapshot: Snapshot, meter: budgets.MeterRecords, run: str) -> RunPlan:
    """The plan without the prerequisites' advisories an earlier run already announced (each is claimed by the first
    run whose plan says it, as a budget threshold is; `rebalancer doctor` lists them every time). A problem stays in
    every plan: it bears on what the plan could read."""
    advisories = set(snapshot.governance.advisories) if snapshot.governance is not None else set()
    if not advisories & set(planned.plan.warnings):
        return planned
    kept = tuple(w for w in planned.plan.warnings
                 if w not in advisories or meter.claim(snapshot.cluster.ClusterName, advisory_key(w), run))
    return replace(planned, plan=planned.plan.model_copy(update={"warnings": kept}))


def make_run_plan(snapshot: Snapshot, policy: Policy, now: datetime, *, store: Sources) -> RunPlan:
    """The plan with the context `context_for` reads from the store. Writes nothing."""
    context = context_for(snapshot, policy, store=store)
    return RunPlan(make_plan(snapshot, policy, now, context=context), context, basis_of(snapshot, policy, context),
                   RecordedContext.of(snapshot, policy, now, context))


def record_plan(store: RecordsAndSources, run: RunRef, planned: RunPlan, *, who: str | None = None,
                decision: str | None = None) -> None:
    """The plan becomes the run's (the apply reads it back, with what it was made from) and its audit record (its
    outcome the decision, or `decision` when the caller decides otherwise: a plan made again after an approval);
    the nodes it saw unavailable are kept for the next run's grace."""
    store.artifacts.put(run.execution_name, "PLAN", planned.plan.model_dump(mode="json"))
    store.artifacts.put(run.execution_name, "BASIS", planned.basis.model_dump(mode="json"))
    store.artifacts.put(run.execution_name, "CONTEXT", planned.recorded.model_dump(mode="json"))
    store.sightings.record_unavailable(run.cluster_name, dict(planned.context.unavailable_since))
    audit.planned(store.audit, run, planned.plan, decision=decision or planned.decision,
                  known_versions=planned.known_versions, who=who)


def record_invalid_policy(store: audit.Records, run: RunRef, error: Exception) -> None:
    audit.invalid_policy(store.audit, run, error)
