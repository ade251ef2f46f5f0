"""Every audit record, one writer per kind: the shape of each is decided here and nowhere else. The CLI's
`history` and the e2e tests read them back. Records of a run's use cases (plan, apply, rollback) carry the run's
source ("controller" or "cli") in their detail; the trigger, approval and notify records are the controller's own.

Kinds: trigger, plan, recheck, approval-requested, approval, apply, rollback, notify-<message kind>, reservation,
lock-broken."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from rebalancer.adapters.sagemaker.outcomes import ApplyReport
    from rebalancer.adapters.sagemaker.scheduler_config import SchedulerOutcome
    from rebalancer.app.notifications.messages import DeliveryResult
    from rebalancer.app.workflow.state import Artifacts, RunRef
    from rebalancer.domain.plan import Change, Plan
    from rebalancer.domain.reservation import Reservation


class AuditLog(Protocol):
    """rebalancer.adapters.dynamodb.audit.TableAudit; rebalancer_tools.fakes.memory_store.MemoryAudit."""

    def append(self, cluster_name: str, execution: str, kind: str, *, outcome: str, who: str | None = None,
               before: Any = None, after: Any = None, detail: Any = None) -> None: ...

    def records(self, cluster_name: str) -> list[dict[str, Any]]: ...

    def newest(self, cluster_name: str) -> Iterator[dict[str, Any]]: ...  # newest first, read page by page


class Records(Protocol):
    """Where every use case of a run records itself: the run's documents and the audit log."""

    @property
    def artifacts(self) -> Artifacts: ...
    @property
    def audit(self) -> AuditLog: ...


def by_team(changes: Iterable[Change], side: Literal["before", "after"]) -> dict[str, dict[str, float]]:
    """team → pool → amount (a team may change in several pools at once)."""
    out: dict[str, dict[str, float]] = {}
    for c in changes:
        out.setdefault(c.team, {})[c.pool] = c.before if side == "before" else c.after
    return out


def _run_record(log: AuditLog, run: RunRef, kind: str, *, outcome: str, who: str | None, before: Any, after: Any,
                detail: Mapping[str, Any]) -> None:
    log.append(run.cluster_name, run.execution_name, kind, outcome=outcome, who=who, before=before, after=after,
               detail={"source": run.source, **detail})


# --- the trigger -------------------------------------------------------------------------------------------------
def trigger_started(log: AuditLog, cluster_name: str, execution: str, trigger: Mapping[str, Any]) -> None:
    log.append(cluster_name, execution, "trigger", outcome="started", detail=dict(trigger))


def cluster_event_seen(log: AuditLog, cluster_name: str, *, via: str, event_id: str, at: datetime | None,
                       summary: str) -> None:
    """A HyperPod event the trigger saw: delivered by EventBridge, or replayed from ListClusterEvents after a gap.
    Keyed by the event's id, so two events seen in one instant are two records."""
    log.append(cluster_name, f"event#{event_id}", "cluster-event",
               outcome="seen" if via == "EventBridge" else "replayed",
               detail={"via": via, "event_id": event_id, "at": at.isoformat() if at else None, "summary": summary})


# --- plan --------------------------------------------------------------------------------------------------------
def planned(log: AuditLog, run: RunRef, plan: Plan, *, decision: str, known_versions: Mapping[str, int],
            who: str | None = None) -> None:
    _run_record(log, run, "plan", outcome=decision, who=who, before=by_team(plan.changes, "before"),
                after=by_team(plan.changes, "after"),
                detail={"changes": [c.model_dump(mode="json", exclude_none=True) for c in plan.changes],
                        "warnings": list(plan.warnings), "approval_reasons": list(plan.approval_reasons),
                        "trigger": run.trigger,
                        "field_changes": [f.model_dump(mode="json") for f in plan.field_changes],
                        "scheduler_requests": [r.model_dump(mode="json") for r in plan.scheduler_requests],
                        "known_versions": dict(known_versions)})


def rechecked(log: AuditLog, run: RunRef, outcome: str, *, stale: Sequence[str], beyond: Sequence[str],
              approval_round: int) -> None:
    """An approved plan compared with the cluster read again before the write: `stale`, why it could not be written
    as it was; `beyond`, what the plan made again does that was not approved."""
    _run_record(log, run, "recheck", outcome=outcome, who=None, before=None, after=None,
                detail={"stale": list(stale), "beyond_approval": list(beyond), "approval_round": approval_round})


def invalid_policy(log: AuditLog, run: RunRef, error: Exception) -> None:
    _run_record(log, run, "plan", outcome="invalid-policy", who=None, before=None, after=None,
                detail={"error": str(error)})


# --- approvals ---------------------------------------------------------------------------------------------------
def approval_requested(log: AuditLog, run: RunRef, approval_id: str, decide_by: datetime,
                       results: Sequence[DeliveryResult]) -> None:
    log.append(run.cluster_name, run.execution_name, "approval-requested", outcome="pending",
               detail={"approval_id": approval_id, "decide_by": decide_by.isoformat(),
                       "sent": {r.channel: r.error or "ok" for r in results}})


def approval_decided(log: AuditLog, cluster_name: str, execution: str, status: str, who: str, *,
                     comment: str | None = None, identity: Mapping[str, str] | None = None) -> None:
    """The decision as sent to the run, with the approver's comment and how `who` was verified (the token's issuer
    and subject, the Slack user id), if any."""
    detail = {**({"comment": comment} if comment else {}), **({"identity": dict(identity)} if identity else {})}
    log.append(cluster_name, execution, "approval", outcome=status, who=who, detail=detail or None)


def approval_superseded(log: AuditLog, run: RunRef, approval_id: str, why: Sequence[str]) -> None:
    """An approval that no longer stands: the plan it approved went stale and was made again beyond it."""
    log.append(run.cluster_name, run.execution_name, "approval", outcome="superseded",
               detail={"approval_id": approval_id, "why": list(why)})


def approval_not_delivered(log: AuditLog, cluster_name: str, execution: str, code: str, who: str) -> None:
    """A decision recorded but refused by Step Functions (the run no longer waits for it)."""
    log.append(cluster_name, execution, "approval", outcome=f"not-delivered:{code}", who=who)


# --- apply -------------------------------------------------------------------------------------------------------
LEFT_RESULTS = frozenset({"conflict", "refused", "failed", "not-attempted"})


def applied(log: AuditLog, run: RunRef, plan: Plan, report: ApplyReport, scheduler: SchedulerOutcome | None, *,
            versions: Mapping[str, int], who: str | None) -> None:
    """The quotas' outcomes (and the scheduler config's); on success the versions the writes left; on failure the
    writes left unmade, with why (`left`, as a rollback's record names the quotas it left)."""
    detail: dict[str, Any] = {"outcomes": report.lines()}
    left = {o.team: o.message or o.result for o in report.outcomes if o.result in LEFT_RESULTS}
    if left:
        detail["left"] = left
    if scheduler is not None:
        detail["scheduler"] = scheduler.line()
    if plan.field_changes:
        detail["field_changes"] = [f.model_dump(mode="json") for f in plan.field_changes]
    if report.succeeded:
        detail["versions"] = dict(versions)
    _run_record(log, run, "apply", outcome="applied" if report.succeeded else "failed", who=who,
                before=by_team(plan.changes, "before"), after=by_team(plan.changes, "after"), detail=detail)


def not_written(log: AuditLog, run: RunRef, outcome: Literal["declined", "refused"], why: str, *,
                who: str | None) -> None:
    """A run that ends before its first write: declined at a prompt, or refused (a plan that needs approval given
    none). Its plan is recorded before it; this says that nothing was written, and why."""
    _run_record(log, run, "apply", outcome=outcome, who=who, before=None, after=None,
                detail={"why": why, "written": 0})


def scheduler_failed(log: AuditLog, run: RunRef, plan: Plan, scheduler_line: str, error: str, *,
                     who: str | None) -> None:
    """The scheduler config could not be written, so no quota was."""
    _run_record(log, run, "apply", outcome="failed", who=who, before=by_team(plan.changes, "before"),
                after=by_team(plan.changes, "after"),
                detail={"scheduler": scheduler_line, "outcomes": [], "error": error})


# --- rollback ----------------------------------------------------------------------------------------------------


def quota_states(report: ApplyReport, fallback: Mapping[str, Mapping[str, float]] | None = None
                 ) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """Per team, what its quota held when a rollback read it and holds after it (each per pool), and the quotas it
    left as they were, with why. A quota already as the rollback would put it is not among them: nothing happened
    to it. `fallback`: what a team held before where the rollback did not read it (a quota the run created, deleted
    without a read)."""
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    left: dict[str, str] = {}
    for o in report.outcomes:
        if o.result == "unchanged":
            continue
        if o.held is not None:
            before[o.team] = dict(o.held)
        elif fallback is not None and o.team in fallback:
            before[o.team] = dict(fallback[o.team])
        if o.holds is not None:
            after[o.team] = dict(o.holds)
        if o.result in LEFT_RESULTS:
            left[o.team] = o.message or o.result
    return before, after, left


def rolled_back(log: AuditLog, run: RunRef, plan: Plan, undo: ApplyReport, *, ok: bool, cause: Any,
                scheduler_line: str | None) -> None:
    """A run's writes undone: per quota what it held before the rollback and holds after it; the quotas the
    rollback left as they were (changed by someone else since, or no longer fitting the healthy capacity), with
    why, are named in `left` and keep their amounts in `after`."""
    before, after, left = quota_states(undo, by_team(plan.changes, "after"))
    detail: dict[str, Any] = {"cause": cause, "outcomes": undo.lines(), "left": left}
    if scheduler_line is not None:
        detail["scheduler"] = scheduler_line
    _run_record(log, run, "rollback", outcome="restored" if ok else "incomplete", who=None, before=before,
                after=after, detail=detail)


def restored(log: AuditLog, run: RunRef, report: ApplyReport, *, ok: bool, who: str | None,
             detail: Mapping[str, Any] | None = None) -> None:
    """A saved snapshot's quotas put back (the CLI's `rollback --to`), recorded as a rollback."""
    before, after, left = quota_states(report)
    _run_record(log, run, "rollback", outcome="restored" if ok else "incomplete", who=who, before=before,
                after=after, detail={**(detail or {}), "outcomes": report.lines(), "left": left})


# --- after the write ---------------------------------------------------------------------------------------------
def preemptions_seen(log: AuditLog, run: RunRef, *, named: Sequence[str], preempted: Sequence[str]) -> None:
    """What the plan said its write would preempt and what Kueue preempted (running before, pending after): both
    lists (workload keys, team/name@pool), and whether they agree."""
    _run_record(log, run, "preempted", outcome="as_named" if set(named) == set(preempted) else "differs", who=None,
                before=list(named), after=list(preempted),
                detail={"not_named": sorted(set(preempted) - set(named)),
                        "named_not_preempted": sorted(set(named) - set(preempted))})


# --- notify ------------------------------------------------------------------------------------------------------
def notified(log: AuditLog, run: RunRef, kind: str, results: Sequence[DeliveryResult]) -> None:
    """Per channel "ok" or what it said ("already sent", an error): sent, partial or failed (none went out)."""
    failed = [r for r in results if not r.ok]
    log.append(run.cluster_name, run.execution_name, f"notify-{kind}",
               outcome="sent" if not failed else ("failed" if len(failed) == len(results) else "partial"),
               detail={r.channel: (r.error or "ok") for r in results})


# --- reservations ------------------------------------------------------------------------------------------------
def reservation(log: AuditLog, rec: Reservation, step: str, who: str | None, *, note: str | None = None,
                occurrence: str | None = None) -> None:
    """A reservation requested (approved or pending, with why it waits), approved, cancelled, started or ended
    (`occurrence`: which window of a recurring one): recorded under its id, with the reservation as it stood."""
    log.append(rec.cluster, rec.reservation_id, "reservation", outcome=f"{step}:{rec.status}", who=who,
               after={rec.team: {rec.pool: rec.accelerators}},
               detail={"reservation": rec.model_dump(mode="json"), **({"needs_approval": note} if note else {}),
                       **({"occurrence": occurrence} if occurrence else {})})


# --- the lock ----------------------------------------------------------------------------------------------------
def lock_broken(log: AuditLog, cluster_name: str, *, who: str, reason: str, lock: Mapping[str, Any]) -> None:
    """An admin broke the cluster's lock: who broke whose (the item as it stood: holder, run, lease, follow-up, or
    whatever a hand-edited item held) and why."""
    holder = lock.get("holder")
    log.append(cluster_name, f"lock#{holder if isinstance(holder, str) and holder else 'unreadable'}", "lock-broken",
               outcome="broken", who=who, before=dict(lock), detail={"reason": reason})
