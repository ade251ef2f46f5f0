"""The state machine's task steps: collect, plan, apply, verify, rollback. Each takes the run reference the state
machine passes, calls one use case of `app.runs` (the CLI calls the same ones) through injected ports, and returns a
small JSON-able result for the execution's state (big documents stay in DynamoDB)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from rebalancer.app import budgets, runs
from rebalancer.app.notifications import field_line
from rebalancer.app.run_ref import RunRef, load_plan, load_snapshot
from rebalancer.app.runs import SchedulerConfigs, Store, Writer
from rebalancer.errors import PermanentError, TransientError
from rebalancer.models import Snapshot
from rebalancer.policy import Policy

__all__ = ["RollbackFailed", "RunRef", "VerifyTimedOut", "apply", "collect", "load_plan", "plan", "rollback",
           "verify"]

MAX_STATE_LINES = 20  # console edits named in the execution's state (the whole list is in the stored plan)


def summarised(lines: Sequence[str], limit: int = MAX_STATE_LINES) -> list[str]:
    """At most `limit` lines for the execution's state (Step Functions allows 256 KB), the last one counting the
    rest; the stored plan and apply report keep every line."""
    if len(lines) <= limit:
        return list(lines)
    return [*lines[:limit - 1], f"… and {len(lines) - limit + 1} more (all of them are in the run's stored record)"]


class VerifyTimedOut(PermanentError):
    """The changed quotas did not reach Created/Updated within the verify bound."""


class RollbackFailed(PermanentError):
    """The rollback could not restore every quota; a person must look."""


# --- collect -----------------------------------------------------------------------------------------------------
def collect(run: RunRef, *, store: Store, read_snapshot: Callable[[str], Snapshot]) -> dict[str, Any]:
    snapshot = read_snapshot(run.cluster_name)
    runs.record_snapshot(store, run, snapshot)
    metered = budgets.meter(store, snapshot)
    return {"taken_at": snapshot.taken_at.isoformat(), "cluster_arn": snapshot.cluster.ClusterArn,
            "nodes": len(snapshot.nodes), "quotas": len(snapshot.quotas), "metered": metered.status}


# --- plan --------------------------------------------------------------------------------------------------------
def plan(run: RunRef, *, store: Store, load_policy: Callable[[str], Policy], now: datetime,
         mode_override: str = "", budget_outlet: budgets.Outlet | None = None) -> dict[str, Any]:
    """`budget_outlet` takes the budget metrics and messages (thresholds reached, a period's summary)."""
    snapshot = load_snapshot(store, run)
    try:
        policy = load_policy(run.cluster_name)
    except PermanentError as e:
        runs.record_invalid_policy(store, run, e)
        raise
    if mode_override:
        policy = policy.model_copy(update={"mode": mode_override})
    planned = runs.make_run_plan(snapshot, policy, now, store=store)
    announced = budgets.announce(store, policy, planned.snapshot, budget_outlet) if budget_outlet else []
    runs.record_plan(store, run, planned)
    result = planned.plan
    return {"decision": planned.decision, "changes": len(result.changes), "requests": len(result.requests),
            "scheduler_requests": len(result.scheduler_requests),
            "console_edits": [field_line(f) for f in result.console_edits[:MAX_STATE_LINES]],
            "moved_accelerators": result.moved(), "approval_timeout_seconds": policy.approval.timeout_minutes * 60,
            "approval_reasons": summarised(result.approval_reasons), "warnings": summarised(result.warnings),
            "budget_messages": announced[:MAX_STATE_LINES]}


# --- apply -------------------------------------------------------------------------------------------------------
def apply(run: RunRef, *, store: Store, writer: Writer, configs: SchedulerConfigs | None = None,
          approved_by: str | None = None) -> dict[str, Any]:
    """`runs.apply_run`. On failure its error's class name routes the state machine to the Rollback step."""
    done = runs.apply_run(run, store=store, writer=writer, configs=configs, who=approved_by)
    written = [o.quota_id for o in done.report.outcomes if o.result == "applied" and o.quota_id]
    return {"quota_ids": written, "scheduler_config_id": done.scheduler.config_id if done.scheduler else None,
            "outcomes": summarised(done.lines())}


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
    """`runs.rollback_run`: what this run wrote goes back to its snapshot state; RollbackFailed when not all."""
    done = runs.rollback_run(run, error, store=store, writer=writer, configs=configs)
    if not done.ok:
        raise RollbackFailed(done.undo.error or "rollback incomplete: " + "; ".join(
            done.undo.lines() + ([done.scheduler.line()] if done.scheduler else [])))
    return {"restored": [o.quota_id for o in done.undo.outcomes if o.quota_id], "outcomes": done.lines()}
