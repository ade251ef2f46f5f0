"""Plan: `run_plan.make_run_plan` on the stored snapshot under the cluster's policy, recorded as the run's plan with
its outlook (each pending workload's estimated start, each team's standing: app.workflow.outlook) and its news (the
budget thresholds passed, the periods that ended, the reservation windows that began or ended: app.workflow.news),
which the Notify step announces. The prerequisites' advisories stay in the plan's warnings the first time only.
Run again once an approval arrives (`recheck`, after the cluster was collected again): `recheck.recheck`, the
approved plan compared with the cluster as it is, and what follows (write it, write the plan made again, ask
again, or stop)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from rebalancer.app import budgets, reservations
from rebalancer.app.notifications.notify import approval_id_of
from rebalancer.app.workflow import recheck as rechecking
from rebalancer.app.workflow import run_plan
from rebalancer.app.workflow.news import News, record_news
from rebalancer.app.workflow.notice import all_preempted, notice_seconds, record_notice
from rebalancer.app.workflow.state import PlanResult, Recheck, RunRef, summarised
from rebalancer.domain.policy import Policy
from rebalancer.errors import InvalidInput, PermanentError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from rebalancer.app.workflow import outlook
    from rebalancer.domain.budget import BudgetUsage
    from rebalancer.domain.snapshot import Snapshot
    from rebalancer.forecast.deadline import Deadline

    class RecordsSourcesApprovalsAndHistory(rechecking.RecordsSourcesAndApprovals, outlook.HistoryAndMeter, Protocol):
        """What the plan use case records in and plans from, the approvals a recheck supersedes, and the run
        history the outlook keeps."""

# Per team with a budget: cluster, {team: (% used, accelerator-hours)} (app.observability.publish_budget_usage).
UsageFigures = Callable[[str, dict[str, tuple[float, float]]], None]


def plan(run: RunRef, *, store: RecordsSourcesApprovalsAndHistory, load_policy: Callable[[str], Policy],
         now: datetime, mode_override: str = "", budget_figures: UsageFigures | None = None,
         recheck: Recheck | None = None, outlook_deadline: Deadline | None = None) -> dict[str, Any]:
    """`budget_figures` takes each team's budget use, published at every run. `outlook_deadline`: when the
    outlook's forecasts must stop, so that the step ends within its timeout whatever the cluster's size."""
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
        if checked.decision == "notice":
            record_notice(store.artifacts, run, checked.plan, policy, checked.preempting)
        return _result(checked.decision, policy, approval_round=checked.approval_round, notes=checked.notes())
    snapshot = run_plan.load_snapshot(store.artifacts, run)
    try:
        planned = run_plan.make_run_plan(snapshot, policy, now, store=store)
    except InvalidInput as e:  # the policy against this cluster: a team name that looks like a typo
        run_plan.record_invalid_policy(store, run, e)
        raise
    planned = run_plan.announce_advisories_once(planned, snapshot, store.meter, run.execution_name)
    if budget_figures is not None:
        budget_figures(run.cluster_name, budgets.figures(policy, planned.context.budget_usage))
    run_plan.record_plan(store, run, planned)
    if planned.decision == "notice":
        record_notice(store.artifacts, run, planned.plan, policy, all_preempted(snapshot, planned.plan))
    from rebalancer.app.workflow.outlook import record_outlook  # the forecast: loaded when a run is planned

    outlook = record_outlook(store, run, snapshot, policy, planned, outlook_deadline)
    news = news_of(store, run, policy, snapshot, planned.context.budget_usage)
    return _result(planned.decision, policy, news=news.count(), notes=[outlook.degraded] if outlook.degraded else None)


def news_of(store: RecordsSourcesApprovalsAndHistory, run: RunRef, policy: Policy, snapshot: Snapshot,
            usage: Mapping[str, BudgetUsage]) -> News:
    """The run's news, each line claimed for this run, stored as its NEWS for the Notify step."""
    crossed, summaries = budgets.news(store.meter, policy, snapshot, usage, run.execution_name)
    started, ended = reservations.news(store.reservations, store.audit, run.cluster_name, snapshot.taken_at)
    news = News(budget=tuple(crossed), budget_summary=tuple(summaries), reservation_started=tuple(started),
                reservation_ended=tuple(ended))
    record_news(store.artifacts, run, news)
    return news


def _result(decision: str, policy: Policy, *, approval_round: int = 1, notes: list[str] | None = None,
            news: int = 0) -> dict[str, Any]:
    return PlanResult.model_validate({
        "decision": decision, "approval_round": approval_round, "notes": summarised(notes or []), "news": news,
        "approval_timeout_seconds": policy.approval.timeout_minutes * 60,
        "notice_seconds": notice_seconds(policy)}).as_state()
