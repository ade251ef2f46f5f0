"""The plan use case of a rebalance run, as both entry points call it (the workflow's Plan step and the CLI's
`rebalancer apply`): the plan against the versions our earlier writes left (a quota at another version holds a
console edit) and the budget use metered so far, recorded as the run's plan with its audit record (the record's
shape is `app.workflow.audit`'s, like every other)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import Literal, NamedTuple, Protocol

from rebalancer.app import budgets, reservations
from rebalancer.app.workflow import audit
from rebalancer.app.workflow.state import Artifacts, RunRef, stored_snapshot
from rebalancer.domain.context import PlanningContext
from rebalancer.domain.plan import Plan
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.planning.context import planning_context
from rebalancer.planning.planner import make_plan
from rebalancer.planning.requests import setting_changes

Decision = Literal["no_change", "dry_run", "approve", "apply"]


class UnavailableNodes(Protocol):
    """Since when each node has been seen unavailable for now: rebalancer.adapters.dynamodb.sightings;
    rebalancer_tools.memory_store.MemorySightings."""

    def unavailable(self, cluster_name: str) -> dict[str, tuple[str, datetime]]: ...
    def record_unavailable(self, cluster_name: str, nodes: dict[str, tuple[str, datetime]]) -> None: ...


class KnownVersions(Protocol):
    """Per team the version our last applied write left (app.workflow.runs.Versions records them)."""

    def known(self, cluster_name: str) -> dict[str, int]: ...


class Store(audit.Records, Protocol):
    """A run's records, the versions our writes left, the metered use the plan's budgets are checked against, the
    reservations it honours and the nodes seen unavailable."""

    @property
    def versions(self) -> KnownVersions: ...

    @property
    def meter(self) -> budgets.MeterStore: ...
    @property
    def reservations(self) -> reservations.ReservationStore: ...
    @property
    def sightings(self) -> UnavailableNodes: ...


def load_snapshot(artifacts: Artifacts, run: RunRef) -> Snapshot:
    return Snapshot.model_validate(stored_snapshot(artifacts, run))


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
    return "approve" if plan.requires_approval else "apply"


class RunPlan(NamedTuple):
    plan: Plan
    context: PlanningContext  # what it was planned with beyond the snapshot: versions, period-to-date budget use

    @property
    def known_versions(self) -> dict[str, int]:
        """What the plan took for our own writes' versions."""
        return dict(self.context.known_versions or {})

    @property
    def decision(self) -> Decision:
        return decide(self.plan)


def make_run_plan(snapshot: Snapshot, policy: Policy, now: datetime, *, store: Store) -> RunPlan:
    """The plan against the versions our recorded writes left, the budget use metered so far, the cluster's
    reservations (those active at the snapshot's time), the nodes seen unavailable and, with a fair-share window,
    what each team received over it. Writes nothing."""
    cluster = snapshot.cluster.ClusterName
    context = planning_context(snapshot, policy,
                               known_versions=known_versions_for(store.versions.known(cluster), snapshot, policy),
                               metered=budgets.metered(store.meter, cluster, policy, snapshot.taken_at),
                               reservations=store.reservations.of_cluster(cluster),
                               unavailable_seen=store.sightings.unavailable(cluster),
                               trailing=budgets.trailing(store.meter, cluster, policy, snapshot.taken_at))
    return RunPlan(make_plan(snapshot, policy, now, context=context), context)


def advisory_key(line: str) -> str:
    """The key an advisory is announced under: its text, hashed to a short sort key."""
    return "advisory#" + hashlib.sha256(line.encode()).hexdigest()[:32]


def announce_advisories_once(planned: RunPlan, snapshot: Snapshot, meter: budgets.MeterStore) -> RunPlan:
    """The plan without the prerequisites' advisories an earlier run already announced (each is announced once, as
    a budget threshold is; `rebalancer doctor` lists them every time). A problem stays in every plan: it bears on
    what the plan could read."""
    advisories = set(snapshot.governance.advisories) if snapshot.governance is not None else set()
    if not advisories & set(planned.plan.warnings):
        return planned
    kept = tuple(w for w in planned.plan.warnings
                 if w not in advisories or meter.announce_once(snapshot.cluster.ClusterName, advisory_key(w)))
    return planned._replace(plan=planned.plan.model_copy(update={"warnings": kept}))


def record_plan(store: Store, run: RunRef, planned: RunPlan, *, who: str | None = None) -> None:
    """The plan becomes the run's (the apply reads it back) and its audit record; the nodes it saw unavailable
    are kept for the next run's grace."""
    store.artifacts.put(run.execution_name, "PLAN", planned.plan.model_dump(mode="json"))
    store.sightings.record_unavailable(run.cluster_name, dict(planned.context.unavailable_since))
    audit.planned(store.audit, run, planned.plan, decision=planned.decision, known_versions=planned.known_versions,
                  who=who)


def record_invalid_policy(store: audit.Records, run: RunRef, error: Exception) -> None:
    audit.invalid_policy(store.audit, run, error)
