"""Plan: `run_plan.make_run_plan` on the stored snapshot under the cluster's policy, recorded as the run's plan with
its outlook (each pending workload's estimated start, each team's standing: app.workflow.outlook); the budget
messages it brings, the reservations that began or ended since the last run and the prerequisites' advisories are
announced once. Run again once an approval arrives (`recheck`, after the cluster was collected
again): `recheck.recheck`, the approved plan compared with the cluster as it is, and what follows (write it, write
the plan made again, ask again, or stop)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from rebalancer.app import budgets, reservations
from rebalancer.app.notifications.messages import field_line
from rebalancer.app.notifications.notify import approval_id_of
from rebalancer.app.workflow import recheck as rechecking
from rebalancer.app.workflow import run_plan
from rebalancer.app.workflow.state import Recheck, RunRef, summarised
from rebalancer.domain.plan import Plan
from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput, PermanentError

if TYPE_CHECKING:
    from rebalancer.app.workflow import outlook

    class RecordsSourcesApprovalsAndHistory(rechecking.RecordsSourcesAndApprovals, outlook.HistoryAndMeter, Protocol):
        """What the plan use case records in and plans from, the approvals a recheck supersedes, and the run
        history the outlook keeps."""


def plan(run: RunRef, *, store: RecordsSourcesApprovalsAndHistory, load_policy: Callable[[str], Policy], now: datetime,
         mode_override: str = "", budget_outlet: budgets.Outlet | None = None,
         recheck: Recheck | None = None) -> dict[str, Any]:
    """`budget_outlet` takes the budget metrics and messages (thresholds reached, a period's summary) and the
    reservations' start and end messages."""
    try:
        policy = load_policy(run.cluster_name)
    except PermanentError as e:
        run_plan.record_invalid_policy(store, run, e)
        raise
    if mode_override:
        policy = policy.model_copy(update={"mode": mode_override})
    if recheck is not None:
        checked = rechecking.recheck(run, policy, now, store=store, approval_round=recheck.approval_round,
                                     approvals=store.approvals,
                                     approval_id=approval_id_of(run.execution_arn, recheck.approval_round))
        return _output(checked.plan, checked.decision, policy, approval_round=checked.approval_round,
                       notes=checked.notes(), rechecked=checked.outcome)
    snapshot = run_plan.load_snapshot(store.artifacts, run)
    try:
        planned = run_plan.make_run_plan(snapshot, policy, now, store=store)
    except InvalidInput as e:  # the policy against this cluster: a team name that looks like a typo
        run_plan.record_invalid_policy(store, run, e)
        raise
    planned = run_plan.announce_advisories_once(planned, snapshot, store.meter)
    announced = (budgets.announce(store.meter, policy, snapshot, planned.context.budget_usage, budget_outlet)
                 if budget_outlet else [])
    run_plan.record_plan(store, run, planned)
    from rebalancer.app.workflow.outlook import record_outlook  # the forecast: loaded when a run is planned

    record_outlook(store, run, snapshot, policy, planned)
    reservations.announce(store.reservations, store.audit, run.cluster_name, snapshot.taken_at, budget_outlet)
    return _output(planned.plan, planned.decision, policy, budget_messages=announced)


def _output(result: Plan, decision: str, policy: Policy, *, approval_round: int = 1, notes: list[str] | None = None,
            rechecked: str | None = None, budget_messages: list[str] | None = None) -> dict[str, Any]:
    """What the state machine carries: the decision, the plan's figures, the round of approval it is in, and what
    the messages say about a recheck."""
    out = {"decision": decision, "changes": len(result.changes), "requests": len(result.requests),
           "scheduler_requests": len(result.scheduler_requests),
           "console_edits": summarised([field_line(f) for f in result.console_edits]),
           "moved_accelerators": result.moved(), "approval_timeout_seconds": policy.approval.timeout_minutes * 60,
           "approval_reasons": summarised(result.approval_reasons), "warnings": summarised(result.warnings),
           "budget_messages": summarised(budget_messages or []), "approval_round": approval_round,
           "notes": summarised(notes or [])}
    if rechecked is not None:
        out["rechecked"] = rechecked
    return out
