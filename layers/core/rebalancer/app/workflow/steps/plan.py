"""Plan: `run_plan.make_run_plan` on the stored snapshot under the cluster's policy, recorded as the run's plan with
its outlook (each pending workload's estimated start, each team's standing: app.workflow.outlook); the budget
messages it brings, and the reservations that began or ended since the last run, are announced once."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from rebalancer.app import budgets, reservations
from rebalancer.app.notifications.messages import field_line
from rebalancer.app.workflow import run_plan
from rebalancer.app.workflow.state import MAX_STATE_LINES, RunRef, summarised
from rebalancer.domain.policy import Policy
from rebalancer.errors import PermanentError

if TYPE_CHECKING:
    from rebalancer.app.workflow import outlook

    class Store(run_plan.Store, outlook.Store, Protocol):
        """The plan use case's store and the run history the outlook keeps."""


def plan(run: RunRef, *, store: Store, load_policy: Callable[[str], Policy], now: datetime,
         mode_override: str = "", budget_outlet: budgets.Outlet | None = None) -> dict[str, Any]:
    """`budget_outlet` takes the budget metrics and messages (thresholds reached, a period's summary) and the
    reservations' start and end messages."""
    snapshot = run_plan.load_snapshot(store.artifacts, run)
    try:
        policy = load_policy(run.cluster_name)
    except PermanentError as e:
        run_plan.record_invalid_policy(store, run, e)
        raise
    if mode_override:
        policy = policy.model_copy(update={"mode": mode_override})
    planned = run_plan.make_run_plan(snapshot, policy, now, store=store)
    announced = (budgets.announce(store.meter, policy, snapshot, planned.context.budget_usage, budget_outlet)
                 if budget_outlet else [])
    run_plan.record_plan(store, run, planned)
    from rebalancer.app.workflow.outlook import record_outlook  # the forecast: loaded when a run is planned

    record_outlook(store, run, snapshot, policy, planned)
    reservations.announce(store.reservations, store.audit, run.cluster_name, snapshot.taken_at, budget_outlet)
    result = planned.plan
    return {"decision": planned.decision, "changes": len(result.changes), "requests": len(result.requests),
            "scheduler_requests": len(result.scheduler_requests),
            "console_edits": [field_line(f) for f in result.console_edits[:MAX_STATE_LINES]],
            "moved_accelerators": result.moved(), "approval_timeout_seconds": policy.approval.timeout_minutes * 60,
            "approval_reasons": summarised(result.approval_reasons), "warnings": summarised(result.warnings),
            "budget_messages": announced[:MAX_STATE_LINES]}
