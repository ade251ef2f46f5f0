"""The state machine's task steps: collect, plan, apply, verify, rollback. Each takes the run reference the state
machine passes, does one thing through injected ports, records what it did in the store (artifacts + audit log) and
returns a small JSON-able result for the execution's state (big documents stay in DynamoDB)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from rebalancer.adapters.outcomes import ApplyReport
from rebalancer.adapters.scheduler_config import SchedulerOutcome
from rebalancer.app import budgets
from rebalancer.app.notifications import field_line
from rebalancer.errors import ApplyFailed, ConflictError, PermanentError, RebalancerError, TransientError
from rebalancer.metering import Fact
from rebalancer.models import ClusterSchedulerConfig, ComputeQuota, Snapshot
from rebalancer.plan import CLUSTER, Change, Plan, QuotaRequest, SchedulerRequest
from rebalancer.planning import make_plan, setting_changes
from rebalancer.policy import Policy

Decision = Literal["no_change", "dry_run", "approve", "apply"]
MAX_STATE_LINES = 20  # console edits named in the execution's state (the whole list is in the stored plan)


class VerifyTimedOut(PermanentError):
    """The changed quotas did not reach Created/Updated within the verify bound."""


class RollbackFailed(PermanentError):
    """The rollback could not restore every quota; a person must look."""


class RunRef(BaseModel):
    """What the state machine's Begin state passes to every step."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    cluster_name: str
    execution_name: str
    execution_arn: str
    trigger: dict[str, Any] = {}
    started_at: str | None = None


class Writer(Protocol):
    """rebalancer.adapters.quota_writer.QuotaWriter."""

    def apply(self, cluster_arn: str, requests: Sequence[QuotaRequest], before: Sequence[ComputeQuota], *,
              rollback_on_failure: bool = True) -> ApplyReport: ...

    def verify(self, quota_ids: Iterable[str]) -> dict[str, str]: ...

    def rollback(self, cluster_arn: str, before: Sequence[ComputeQuota], *, created_ids: Sequence[str] = (),
                 expected_versions: dict[str, int] | None = None) -> ApplyReport: ...


class SchedulerConfigs(Protocol):
    """rebalancer.adapters.scheduler_config.SchedulerConfigClient."""

    def write(self, request: SchedulerRequest) -> tuple[str, int | None]: ...

    def wait(self, config_id: str) -> ClusterSchedulerConfig: ...

    def restore(self, config_id: str, before: ClusterSchedulerConfig | None,
                our_version: int | None) -> SchedulerOutcome: ...


class Store(Protocol):
    def put_artifact(self, execution: str, kind: Any, document: Any) -> None: ...
    def get_artifact(self, execution: str, kind: Any) -> Any: ...
    def audit(self, cluster_name: str, execution: str, kind: str, *, outcome: str, who: str | None = None,
              before: Any = None, after: Any = None, detail: Any = None) -> None: ...
    def record_team_change(self, cluster_name: str, team: str, execution: str) -> None: ...
    def record_versions(self, cluster_name: str, versions: dict[str, int], execution: str) -> None: ...
    def known_versions(self, cluster_name: str) -> dict[str, int]: ...
    def meter(self, cluster_name: str, reading: Any, expected_gap: timedelta) -> Any: ...
    def meter_facts(self, cluster_name: str, since: datetime, until: datetime) -> list[Fact]: ...
    def announce_once(self, cluster_name: str, key: str) -> bool: ...


def summarised(lines: Sequence[str], limit: int = MAX_STATE_LINES) -> list[str]:
    """At most `limit` lines for the execution's state (Step Functions allows 256 KB), the last one counting the
    rest; the stored plan and apply report keep every line."""
    if len(lines) <= limit:
        return list(lines)
    return [*lines[:limit - 1], f"… and {len(lines) - limit + 1} more (all of them are in the run's stored record)"]


def load_snapshot(store: Store, run: RunRef) -> Snapshot:
    doc = store.get_artifact(run.execution_name, "SNAPSHOT")
    if doc is None:
        raise PermanentError(f"no snapshot stored for execution {run.execution_name}")
    return Snapshot.model_validate(doc)


def load_plan(store: Store, run: RunRef) -> Plan:
    doc = store.get_artifact(run.execution_name, "PLAN")
    if doc is None:
        raise PermanentError(f"no plan stored for execution {run.execution_name}")
    return Plan.model_validate(doc)


def load_report(store: Store, run: RunRef) -> ApplyReport | None:
    doc = store.get_artifact(run.execution_name, "APPLY")
    return None if doc is None else ApplyReport.model_validate(doc)


def by_team(changes: Iterable[Change], side: Literal["before", "after"]) -> dict[str, dict[str, float]]:
    """team → pool → amount, for the audit log (a team may change in several pools at once)."""
    out: dict[str, dict[str, float]] = {}
    for c in changes:
        pool = c.pool
        out.setdefault(c.team, {})[pool] = c.before if side == "before" else c.after
    return out


def changes_table(plan: Plan) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json", exclude_none=True) for c in plan.changes]


def load_scheduler(store: Store, run: RunRef) -> SchedulerOutcome | None:
    doc = store.get_artifact(run.execution_name, "SCHEDULER")
    return None if doc is None else SchedulerOutcome.model_validate(doc)


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


# --- collect -----------------------------------------------------------------------------------------------------
def collect(run: RunRef, *, store: Store, read_snapshot: Callable[[str], Snapshot]) -> dict[str, Any]:
    snapshot = read_snapshot(run.cluster_name)
    store.put_artifact(run.execution_name, "SNAPSHOT", snapshot.model_dump(mode="json"))
    metered = budgets.meter(store, snapshot)
    return {"taken_at": snapshot.taken_at.isoformat(), "cluster_arn": snapshot.cluster.ClusterArn,
            "nodes": len(snapshot.nodes), "quotas": len(snapshot.quotas), "metered": metered.status}


# --- plan --------------------------------------------------------------------------------------------------------
def decide(plan: Plan) -> Decision:
    if plan.is_empty:
        return "no_change"
    if plan.mode == "dry-run":
        return "dry_run"
    return "approve" if plan.requires_approval else "apply"


def plan(run: RunRef, *, store: Store, load_policy: Callable[[str], Policy], now: datetime,
         mode_override: str = "", budget_outlet: budgets.Outlet | None = None) -> dict[str, Any]:
    """`budget_outlet` takes the budget metrics and messages (thresholds reached, a period's summary)."""
    snapshot = load_snapshot(store, run)
    try:
        policy = load_policy(run.cluster_name)
    except PermanentError as e:
        store.audit(run.cluster_name, run.execution_name, "plan", outcome="invalid-policy", detail={"error": str(e)})
        raise
    if mode_override:
        policy = policy.model_copy(update={"mode": mode_override})
    snapshot = budgets.with_usage(store, policy, snapshot)
    known = known_versions_for(store.known_versions(run.cluster_name), snapshot, policy)
    result = make_plan(snapshot, policy, now, known_versions=known)
    announced = budgets.announce(store, policy, snapshot, budget_outlet) if budget_outlet else []
    store.put_artifact(run.execution_name, "PLAN", result.model_dump(mode="json"))
    decision = decide(result)
    store.audit(run.cluster_name, run.execution_name, "plan", outcome=decision,
                before=by_team(result.changes, "before"),
                after=by_team(result.changes, "after"),
                detail={"changes": changes_table(result), "warnings": list(result.warnings),
                        "approval_reasons": list(result.approval_reasons), "trigger": run.trigger,
                        "field_changes": [f.model_dump(mode="json") for f in result.field_changes],
                        "scheduler_requests": [r.model_dump(mode="json") for r in result.scheduler_requests],
                        "known_versions": known})
    return {"decision": decision, "changes": len(result.changes), "requests": len(result.requests),
            "scheduler_requests": len(result.scheduler_requests),
            "console_edits": [field_line(f) for f in result.console_edits[:MAX_STATE_LINES]],
            "moved_accelerators": result.moved(), "approval_timeout_seconds": policy.approval.timeout_minutes * 60,
            "approval_reasons": summarised(result.approval_reasons), "warnings": summarised(result.warnings),
            "budget_messages": announced[:MAX_STATE_LINES]}


# --- apply -------------------------------------------------------------------------------------------------------
def apply_scheduler(run: RunRef, requests: Sequence[SchedulerRequest], *, store: Store,
                    configs: SchedulerConfigs) -> SchedulerOutcome | None:
    """The plan's scheduler-config request (at most one), before any quota. The outcome is stored as soon as the
    write is accepted, so a Rollback knows what to undo even when the config then fails to settle."""
    if not requests:
        return None
    request = requests[0]
    target = request.parameters.get("TargetVersion")
    try:
        config_id, version = configs.write(request)
    except RebalancerError as e:  # nothing was written
        outcome = SchedulerOutcome(operation=request.operation, result="conflict" if isinstance(e, ConflictError)
                                   else "failed", config_id=request.parameters.get("ClusterSchedulerConfigId"),
                                   target_version=target, message=str(e))
        store.put_artifact(run.execution_name, "SCHEDULER", outcome.model_dump(mode="json"))
        raise
    written = SchedulerOutcome(operation=request.operation, config_id=config_id, result="applied",
                               target_version=target, version=version)
    store.put_artifact(run.execution_name, "SCHEDULER", written.model_dump(mode="json"))
    try:
        settled = configs.wait(config_id)
    except RebalancerError as e:
        failed = written.model_copy(update={"result": "failed", "message": str(e)})
        store.put_artifact(run.execution_name, "SCHEDULER", failed.model_dump(mode="json"))
        # Something was written: a retry would only conflict with our own write; the Rollback step undoes it.
        raise ApplyFailed(str(e)) from None
    done = written.model_copy(update={"version": settled.ClusterSchedulerConfigVersion, "status": settled.Status})
    store.put_artifact(run.execution_name, "SCHEDULER", done.model_dump(mode="json"))
    return done


def written_versions(report: ApplyReport) -> dict[str, int]:
    """team → the version our last applied write of its quota produced."""
    out: dict[str, int] = {}
    for o in report.outcomes:
        if o.result == "applied" and o.version is not None:
            out[o.team] = o.version
    return out


def apply(run: RunRef, *, store: Store, writer: Writer, configs: SchedulerConfigs | None = None,
          approved_by: str | None = None) -> dict[str, Any]:
    """Writes the plan: the scheduler config first, then the quotas (decreases first, waiting for each to settle
    before an increase). On failure the reports are stored for the Rollback step, which the state machine runs
    next; the error's class name routes it there. On success the versions our writes left are recorded, so the
    next plan tells a console edit from our own change."""
    the_plan = load_plan(store, run)
    snapshot = load_snapshot(store, run)
    if the_plan.scheduler_requests and configs is None:
        raise PermanentError("the plan changes the scheduler config but no scheduler-config client was given")
    try:
        scheduler = apply_scheduler(run, the_plan.scheduler_requests, store=store,
                                    configs=configs) if configs else None
    except RebalancerError as e:
        # No quota was written: the Rollback step finds an empty report and undoes only the scheduler config.
        empty = ApplyReport(cluster_arn=the_plan.cluster_arn, succeeded=False, error=str(e))
        store.put_artifact(run.execution_name, "APPLY", empty.model_dump(mode="json"))
        store.audit(run.cluster_name, run.execution_name, "apply", outcome="failed", who=approved_by,
                    before=by_team(the_plan.changes, "before"), after=by_team(the_plan.changes, "after"),
                    detail={"scheduler": (load_scheduler(store, run) or _no_outcome()).line(),
                            "outcomes": [], "error": str(e)})
        raise
    report = writer.apply(the_plan.cluster_arn, the_plan.requests, snapshot.quotas, rollback_on_failure=False)
    store.put_artifact(run.execution_name, "APPLY", report.model_dump(mode="json"))
    versions = written_versions(report)
    if scheduler is not None and scheduler.version is not None:
        versions[CLUSTER] = scheduler.version
    detail: dict[str, Any] = {"outcomes": report.lines()}
    if scheduler is not None:
        detail["scheduler"] = scheduler.line()
    if the_plan.field_changes:
        detail["field_changes"] = [f.model_dump(mode="json") for f in the_plan.field_changes]
    if report.succeeded:
        detail["versions"] = versions
    store.audit(run.cluster_name, run.execution_name, "apply", outcome="applied" if report.succeeded else "failed",
                who=approved_by, before=by_team(the_plan.changes, "before"),
                after=by_team(the_plan.changes, "after"), detail=detail)
    if not report.succeeded:
        raise ApplyFailed(report.error or "apply failed")
    store.record_versions(run.cluster_name, versions, run.execution_name)
    for team in sorted({r.team for r in the_plan.requests}):
        store.record_team_change(run.cluster_name, team, run.execution_name)
    written = [o.quota_id for o in report.outcomes if o.result == "applied" and o.quota_id]
    return {"quota_ids": written, "scheduler_config_id": scheduler.config_id if scheduler else None,
            "outcomes": summarised(([scheduler.line()] if scheduler else []) + [o.line() for o in report.outcomes])}


def _no_outcome() -> SchedulerOutcome:
    return SchedulerOutcome(operation="UpdateClusterSchedulerConfig", result="failed", message="not attempted")


# --- verify ------------------------------------------------------------------------------------------------------
def verify(attempt: int, quota_ids: Sequence[str], *, writer: Writer, poll_seconds: int,
           max_attempts: int, scheduler_config_id: str | None = None,
           configs: SchedulerConfigs | None = None) -> dict[str, Any]:
    """One poll (the writer and the scheduler-config client are built with a zero-length poll bound). Not settled
    yet ⇒ done False and the state machine waits and calls again; a *Failed status raises ApplyFailed; too many
    polls raise VerifyTimedOut."""
    attempt += 1
    try:
        statuses = writer.verify(quota_ids)
        if scheduler_config_id:
            if configs is None:
                raise PermanentError("the run wrote the scheduler config but no scheduler-config client was given")
            statuses[scheduler_config_id] = configs.wait(scheduler_config_id).Status
    except TransientError as e:
        if attempt >= max_attempts:
            raise VerifyTimedOut(f"quotas not settled after {attempt} polls: {e}") from None
        return {"done": False, "attempt": attempt, "wait_seconds": poll_seconds}
    return {"done": True, "attempt": attempt, "wait_seconds": poll_seconds, "statuses": statuses}


# --- rollback ----------------------------------------------------------------------------------------------------
def rollback(run: RunRef, error: dict[str, Any] | None, *, store: Store, writer: Writer,
             configs: SchedulerConfigs | None = None) -> dict[str, Any]:
    """Restore every quota the plan touched, and the scheduler config if this run wrote it, to its snapshot state.
    With the stored reports, a quota (or config) someone else changed after our write is left alone (and
    reported); quotas (a config) we created are deleted."""
    the_plan = load_plan(store, run)
    snapshot = load_snapshot(store, run)
    report = load_report(store, run)
    touched = {r.team for r in the_plan.requests}
    before = [q for q in snapshot.quotas if q.team in touched]
    before_ids = {q.ComputeQuotaId for q in before}
    expected: dict[str, int] | None = None
    created: list[str] = []
    if report is not None:
        expected = {}
        for o in report.outcomes:
            if o.quota_id in before_ids and o.version is not None:
                expected[o.quota_id] = o.version
        # As the quota writer's own rollback: only what this run wrote is undone; a quota it never reached may
        # hold someone else's newer edit.
        before = [q for q in before if q.ComputeQuotaId in expected]
        # A create that then failed (CreateFailed, its version unreadable) still left a quota: delete it too.
        created = [o.quota_id for o in report.outcomes
                   if o.operation == "CreateComputeQuota" and o.result in ("applied", "failed") and o.quota_id]
    undo = writer.rollback(the_plan.cluster_arn, before, created_ids=created, expected_versions=expected or None)
    config = restore_scheduler(run, snapshot, store=store, configs=configs)
    ok = undo.succeeded and (config is None or config.result in ("applied", "unchanged"))
    versions = written_versions(undo)
    if config is not None and config.result == "applied" and config.version is not None:
        versions[CLUSTER] = config.version
    detail: dict[str, Any] = {"cause": (error or {}).get("Error"), "outcomes": undo.lines()}
    if config is not None:
        detail["scheduler"] = config.line()
    store.audit(run.cluster_name, run.execution_name, "rollback",
                outcome="restored" if ok else "incomplete",
                before=by_team(the_plan.changes, "after"),
                after=by_team(the_plan.changes, "before"),
                detail=detail)
    store.record_versions(run.cluster_name, versions, run.execution_name)
    if not ok:
        lines = undo.lines() + ([config.line()] if config else [])
        raise RollbackFailed(undo.error or "rollback incomplete: " + "; ".join(lines))
    return {"restored": [o.quota_id for o in undo.outcomes if o.quota_id],
            "outcomes": ([config.line()] if config else []) + [o.line() for o in undo.outcomes]}


def restore_scheduler(run: RunRef, snapshot: Snapshot, *, store: Store,
                      configs: SchedulerConfigs | None) -> SchedulerOutcome | None:
    """Undo this run's scheduler-config write, if it made one: back to the snapshot's config with a fresh
    TargetVersion (deleted if we created it); left alone when someone edited it after our write."""
    written = load_scheduler(store, run)
    if written is None or written.config_id is None or (written.result != "applied" and written.version is None):
        return None  # nothing was written (the request was refused, or there was none)
    if written.version is None:  # the API did not say which version our write made: we cannot tell ours apart
        return written.model_copy(update={"result": "conflict", "message": "the version our write produced is "
                                          "unknown, so a later edit cannot be told apart; left as it is"})
    if configs is None:
        raise PermanentError("the run wrote the scheduler config but no scheduler-config client was given")
    before = snapshot.scheduler_config if written.operation == "UpdateClusterSchedulerConfig" else None
    return configs.restore(written.config_id, before, written.version)
