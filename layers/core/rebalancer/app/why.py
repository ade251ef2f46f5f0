"""`why`: a team's quotas, the reason of each one's last change, its standing over the fair-share window, and why
its pending work waits and when it is estimated to start, from what the controller stored only (the latest run's
snapshot, plan and outlook, the audit log): never a live read, so the CLI and the
Slack command answer the same and the Slack command answers within Slack's three seconds.
The explanation itself is rebalancer.planning.why."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from rebalancer.app.workflow.audit import AuditLog
from rebalancer.app.workflow.state import Artifacts
from rebalancer.domain.outlook import Outlook
from rebalancer.domain.plan import Plan
from rebalancer.domain.pools import holdings
from rebalancer.domain.reservation import Reservation
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import InvalidInput, NotFound
from rebalancer.parsing.validation import stored_model
from rebalancer.planning.why import Explanation, LastChange, explain

if TYPE_CHECKING:  # the policy only when a caller has one (`why --live --policy`)
    from rebalancer.domain.policy import Policy

TEAM = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")  # a team name is part of the quota's EntityName
TEAMS_NAMED = 20  # an unknown team's error names this many of the known ones
# A year of 15-minute runs is ~70,000 audit records; the answer needs the last few runs. Within Slack's three seconds
# one Query page of them (benchmarks/why_bench.py: about a day of runs without a change); the CLI reads further.
READ_MAX = 100  # one page of TableAudit.newest
CHANGES = (("apply", "applied"), ("rollback", "restored"))  # the records that changed a quota


def says_quota_states(record: dict[str, Any]) -> bool:
    """Whether the record says what the team's quotas hold after it: an applied apply, a rollback that restored
    everything, or one that restored part and names what it left (`detail.left`: records written before rollbacks
    said so claim every change undone, so an incomplete one of those is not read)."""
    if (record.get("kind"), record.get("outcome")) in CHANGES:
        return True
    detail = record.get("detail")
    return record.get("kind") == "rollback" and isinstance(detail, dict) and isinstance(detail.get("left"), dict)


class Reservations(Protocol):
    def of_cluster(self, cluster: str) -> list[Reservation]: ...


class RunsAndReservations(Protocol):
    """The run documents, the audit log and the reservations: rebalancer.adapters.dynamodb.store.Store,
    MemoryStore."""

    @property
    def artifacts(self) -> Artifacts: ...
    @property
    def audit(self) -> AuditLog: ...
    @property
    def reservations(self) -> Reservations: ...


def why(store: RunsAndReservations, cluster: str, team: str, *, read_max: int = READ_MAX) -> Explanation:
    """NotFound when the cluster has no stored run; InvalidInput (one line naming the team) for a team the latest
    snapshot does not know. Reads the audit log newest first, only as far as the answer needs (at most
    `read_max` records): the latest run, and the last change of each of the team's quotas with its reason."""
    _team_name(team)
    scan = _Scan(store.artifacts, team)
    for record in islice(store.audit.newest(cluster), read_max):
        if scan.take(record):
            break
    if scan.run is None:
        raise NotFound(f"no stored run of cluster {cluster}: the controller has not planned it yet (see "
                       "`rebalancer history`; `rebalancer why --live` collects it now)")
    execution, snapshot, plan, outlook = scan.run
    answer = explain_team(snapshot, plan, scan.seen[::-1], team, execution=execution,
                          reservations=store.reservations.of_cluster(cluster), outlook=outlook)
    unknown = [q.pool for q in answer.quotas if q.last_change is None]
    if unknown and len(scan.seen) >= read_max:
        note = (f"the newest {read_max:,} audit records name no change of its quota on {', '.join(unknown)} "
                "(`rebalancer why` on the command line reads further, `rebalancer history` all)")
        answer = answer.model_copy(update={"notes": (*answer.notes, note)})
    return answer


@dataclass(slots=True)
class _Scan:
    """The audit records read so far, newest first, and whether they answer: the latest run with a stored snapshot
    found, and for each pool of the team's quota its last applied change and that run's plan (its reason) seen."""

    artifacts: Artifacts
    team: str
    seen: list[dict[str, Any]] = field(default_factory=list)
    run: tuple[str, Snapshot, Plan | None, Outlook | None] | None = None
    # pool → the execution of its last change (newest first: the first seen)
    changed: dict[str, str] = field(default_factory=dict)
    planned: set[str] = field(default_factory=set)  # executions whose plan record was seen

    def take(self, record: dict[str, Any]) -> bool:
        """Adds one record; True when nothing older can change the answer."""
        self.seen.append(record)
        execution = str(record.get("execution", ""))
        if record.get("kind") == "plan":
            self.planned.add(execution)
            if self.run is None:
                self.run = _stored_run(self.artifacts, execution, self.team)
        elif says_quota_states(record):
            for pool in _amounts(record, self.team):
                self.changed.setdefault(pool, execution)
        if self.run is None:
            return False
        quota = self.run[1].quota_of(self.team)
        pools = holdings(quota) if quota is not None else {}
        return all(p in self.changed and self.changed[p] in self.planned for p in pools)


def _stored_run(artifacts: Artifacts, execution: str,
                team: str) -> tuple[str, Snapshot, Plan | None, Outlook | None] | None:
    doc = artifacts.get(execution, "SNAPSHOT")
    if doc is None:  # expired, or a run that stopped before collect
        return None
    plan = artifacts.get(execution, "PLAN")
    then = "the cluster's next run records one this version reads (`rebalancer why --live` answers now)"
    outlook = artifacts.get(execution, "OUTLOOK")  # none for a run planned before outlooks were stored
    return (execution, stored_model(Snapshot, doc, f"the snapshot of run {execution}", then),
            None if plan is None else stored_model(Plan, plan, f"the plan of run {execution}", then),
            None if outlook is None else _team_outlook(outlook, team))


def _team_outlook(doc: dict[str, Any], team: str) -> Outlook | None:
    """The stored outlook read for one team only: its workloads' estimates and its standing (at 1,000 teams the
    whole document holds thousands of estimates the answer does not show). None when it no longer validates (an
    older version's): the answer is given without it."""
    estimates = [e for e in doc.get("estimates") or () if isinstance(e, dict) and e.get("team") == team]
    mine = {**doc, "estimates": estimates,
            "standing": {t: s for t, s in (doc.get("standing") or {}).items() if t == team}}
    try:
        return Outlook.model_validate(mine)
    except ValidationError:
        return None


def explain_team(snapshot: Snapshot, plan: Plan | None, records: Sequence[dict[str, Any]], team: str, *,
                 execution: str | None = None, reservations: Sequence[Reservation] = (),
                 policy: Policy | None = None, outlook: Outlook | None = None) -> Explanation:
    """The answer for a snapshot at hand (the stored run's, or one collected now by `rebalancer why --live`), with
    the last changes from the audit `records`; `policy` when the caller has it (its guarantees bound the advice);
    the estimated starts and standings of `outlook`."""
    _team_name(team)
    known = teams_of(snapshot, plan)
    if team not in known:
        named = ", ".join(sorted(known)[:TEAMS_NAMED]) or "none"
        raise InvalidInput(f"no team {team!r} in the latest snapshot of {snapshot.cluster.ClusterName} (teams: "
                           f"{named})", field="team", value=team)
    return explain(snapshot, plan, team, last_changes=last_changes(records, team), reservations=reservations,
                   execution=execution, policy=policy, outlook=outlook)


def _team_name(team: str) -> None:
    if not TEAM.fullmatch(team):
        raise InvalidInput("not a team name (letters, digits and hyphens, at most 63)", field="team",
                           value=team[:80])


def teams_of(snapshot: Snapshot, plan: Plan | None) -> set[str]:
    teams = {q.team for q in snapshot.quotas} | set(snapshot.demand)
    teams |= {w.team for w in snapshot.pending_workloads}
    return teams | set(plan.allocations if plan else {})


def last_changes(records: Sequence[dict[str, Any]], team: str) -> dict[str, LastChange]:
    """pool → the last applied (or rolled back) change of the team's quota there, with the plan's reason; after a
    rollback that left the quota as it was, what it holds and why it was left."""
    reasons: dict[tuple[str, str], str] = {}
    out: dict[str, LastChange] = {}
    for record in records:
        execution, kind = str(record.get("execution", "")), record.get("kind")
        detail = record.get("detail")
        detail = detail if isinstance(detail, dict) else {}
        if kind == "plan":
            for c in detail.get("changes") or ():
                if isinstance(c, dict) and c.get("team") == team:
                    pool = c["instance_type"] + (f":{c['mig_profile']}" if c.get("mig_profile") else "")
                    reasons[(execution, pool)] = str(c.get("reason", ""))
        elif says_quota_states(record):
            left = (detail.get("left") or {}).get(team) if kind == "rollback" else None
            for pool, (before, after) in _amounts(record, team).items():
                reason = reasons.get((execution, pool), "")
                if left is not None:
                    reason, outcome = left, "left"
                elif kind == "rollback":
                    reason, outcome = f"run {execution} rolled back ({reason or 'its change undone'})", "rolled back"
                else:
                    outcome = "applied"
                out[pool] = LastChange(pool=pool, at=datetime.fromisoformat(str(record["at"])), execution=execution,
                                       before=before, after=after, reason=reason or "(no reason recorded)",
                                       outcome=outcome)
    return out


def _amounts(record: dict[str, Any], team: str) -> dict[str, tuple[float, float]]:
    before, after = record.get("before"), record.get("after")
    if not isinstance(before, dict) or not isinstance(after, dict):
        return {}
    b, a = before.get(team) or {}, after.get(team) or {}
    return {p: (float(b.get(p, 0)), float(a.get(p, 0))) for p in sorted(set(b) | set(a))
            if isinstance(b.get(p, 0), int | float) and isinstance(a.get(p, 0), int | float)}
