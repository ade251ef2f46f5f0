"""The Notify step: build the message for what happened in the run, or (`news`) one message per kind of line of the
run's NEWS (app.workflow.news), send each on every channel at most once, record the outcome. A failure to notify is
retried (TransientError when a message went out nowhere) and never fails a rebalance."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any, Protocol

from rebalancer.app.notifications.messages import Channel, DeliveryResult, Message
from rebalancer.app.workflow.audit import AuditLog, notified
from rebalancer.app.workflow.news import load_news
from rebalancer.app.workflow.notice import by_team, load_notice
from rebalancer.app.workflow.state import Artifacts, Kind, NotifyInput, RunRef, load_plan
from rebalancer.domain.plan import Plan
from rebalancer.domain.records import ApprovalRecord, ApprovalStatus
from rebalancer.errors import ApprovalNotPending, PermanentError, TransientError


class Deliveries(Protocol):
    """Which message of a run went out on which channel: rebalancer.adapters.dynamodb.deliveries;
    rebalancer_tools.fakes.memory_store.MemoryDeliveries."""

    def mark(self, execution: str, kind: str, channel: str) -> bool: ...
    def unmark(self, execution: str, kind: str, channel: str) -> None: ...


class ApprovalLookup(Protocol):
    """The part of rebalancer.app.approvals.decisions.ApprovalRecords an expiry and a message need."""

    def get(self, approval_id: str) -> ApprovalRecord | None: ...
    def decide(self, approval_id: str, status: ApprovalStatus, who: str) -> ApprovalRecord: ...


class DeliveriesAndRuns(Protocol):
    """Which messages of a run went out on which channel, and of the run its stored documents, the approvals its
    messages name and the audit log."""

    @property
    def artifacts(self) -> Artifacts: ...
    @property
    def approvals(self) -> ApprovalLookup: ...
    @property
    def deliveries(self) -> Deliveries: ...
    @property
    def audit(self) -> AuditLog: ...


def approval_id_of(execution_arn: str, approval_round: int = 1) -> str:
    """The approval a run asks for; a run whose approved plan went stale and was made again asks again, in a later
    round, under another id."""
    import hashlib

    key = execution_arn if approval_round <= 1 else f"{execution_arn}#{approval_round}"
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def delivery_kind(kind: str, approval_round: int) -> str:
    """What a message's deliveries are marked under: its kind, and for a later round of approval the round, so the
    new request (and its outcome) goes out although the first round's did."""
    return kind if approval_round <= 1 else f"{kind}#{approval_round}"


def execution_url(execution_arn: str) -> str:
    region = execution_arn.split(":")[3]
    return (f"https://{region}.console.aws.amazon.com/states/home?region={region}"
            f"#/v2/executions/details/{execution_arn}")


def error_text(error: Any) -> str | None:
    """The one line people need from a Step Functions error object ({"Error", "Cause"})."""
    if not isinstance(error, dict):
        return None
    cause = error.get("Cause")
    try:
        parsed = json.loads(cause) if isinstance(cause, str) else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("errorMessage"):
        return f"{parsed.get('errorType', error.get('Error'))}: {parsed['errorMessage']}"
    return f"{error.get('Error')}: {cause}" if cause else str(error.get("Error"))


def message_for(kind: Kind, run: RunRef, plan: Plan | None, *, error: Any = None, notes: tuple[str, ...] = (),
                decided_by: str | None = None) -> Message:
    """`notes`: what the check before the write said, when the approved plan was made again (the Plan step's)."""
    return Message(kind=kind, cluster=run.cluster_name, execution_url=execution_url(run.execution_arn),
                   changes=plan.changes if plan else (), held=plan.held if plan else (),
                   field_changes=plan.field_changes if plan else (),
                   warnings=plan.warnings if plan else (),
                   approval_reasons=plan.approval_reasons if plan and kind == "approval_request" else (),
                   error=error_text(error) if kind in ("failed", "rolled_back", "rollback_failed") else None,
                   decided_by=decided_by, notes=notes, **preempting(plan))


def preempting(plan: Plan | None) -> dict[str, Any]:
    """The Message fields that say what the plan's writes would preempt."""
    if plan is None:
        return {}
    return {"preemptions": plan.preemptions, "preemptions_unlisted": plan.preemptions_unlisted,
            "preempted_gpu_hours": plan.preempted_gpu_hours}


def deliver(deliveries: Deliveries, channels: list[Channel], execution: str,
            message: Message, approval_round: int = 1) -> list[DeliveryResult]:
    """Each channel at most once per run, kind and round of approval, so a retry resends only what failed."""
    results = []
    kind = delivery_kind(message.kind, approval_round)
    for ch in channels:
        if not deliveries.mark(execution, kind, ch.name):
            results.append(DeliveryResult(ch.name, True, "already sent"))
            continue
        result = ch.send(message)
        if not result.ok:
            deliveries.unmark(execution, kind, ch.name)
        results.append(result)
    return results


def notify(given: NotifyInput, *, store: DeliveriesAndRuns, channels: list[Channel],
           team_channel: Callable[[str, str], Channel] | None = None) -> dict[str, Any]:
    """The message of the run's end (`given.kind`), the run's news (`news`), or the notice to the teams a plan
    preempts (`notice`; `team_channel(team, topic)`: the channel of a team's own topic)."""
    run = given.run
    if given.kind == "news":
        return announce(run, store=store, channels=channels)
    if given.kind == "notice":
        return give_notice(given, store=store, channels=channels, team_channel=team_channel)
    doc = store.artifacts.get(run.execution_name, "PLAN")
    plan = Plan.model_validate(doc) if doc else None
    approval_id = approval_id_of(run.execution_arn, given.approval_round)
    if given.kind == "expired":
        with contextlib.suppress(ApprovalNotPending):
            store.approvals.decide(approval_id, "expired", "timeout")
    # Who decided comes from the approval record, when the run asked for one: the store is the source of truth.
    approval = store.approvals.get(approval_id) if plan is not None else None
    decided_by = approval.decided_by if approval and approval.status in ("approved", "rejected") else None
    message = message_for(given.kind, run, plan, error=given.error, notes=given.notes, decided_by=decided_by)
    results = deliver(store.deliveries, channels, run.execution_name, message, given.approval_round)
    notified(store.audit, run, given.kind, results)
    _raise_if_nothing_went_out(results)
    return _outcome(results)


def give_notice(given: NotifyInput, *, store: DeliveriesAndRuns, channels: list[Channel],
                team_channel: Callable[[str, str], Channel] | None) -> dict[str, Any]:
    """The notice before a plan that preempts is written (app.workflow.notice): the whole plan with what it would
    preempt on every outlet, and to each team whose own topic the policy names, its own workloads; each once per
    run and round of notice. Nothing went out anywhere: a TransientError (retried; then the run stops unwritten)."""
    run = given.run
    plan = load_plan(store.artifacts, run)
    notice = load_notice(store.artifacts, run)
    if notice is None:
        raise PermanentError(f"no notice stored for execution {run.execution_name}")
    when = (f"The quotas are written in {notice.seconds // 60:g} minutes at the earliest, once the plan is checked "
            "again; nothing is written that this notice does not name." if notice.seconds else
            "The quotas are written now, once the plan is checked again; nothing is written that this notice does "
            "not name.")
    notes = (*given.notes, when)
    message = message_for("notice", run, plan, notes=notes)
    results = deliver(store.deliveries, channels, run.execution_name, message, notice.round)
    mine = by_team(plan.preemptions)
    for team, topic in notice.targets.items():
        if team not in mine or team_channel is None:
            continue
        own = mine[team]
        told = message.model_copy(update={"preemptions": own, "preemptions_unlisted": 0, "changes": (),
                                          "held": (), "field_changes": (), "warnings": (),
                                          "preempted_gpu_hours": sum(p.gpu_hours for p in own)})
        results += deliver(store.deliveries, [team_channel(team, topic)], run.execution_name, told, notice.round)
    notified(store.audit, run, "notice", results)
    _raise_if_nothing_went_out(results)
    return _outcome(results)


def announce(run: RunRef, *, store: DeliveriesAndRuns, channels: list[Channel]) -> dict[str, Any]:
    """Each kind of line of the run's NEWS as one message (budget thresholds, period summaries, reservation windows
    begun, ended), each on every channel once per run; one audit record per message."""
    results: list[DeliveryResult] = []
    for kind, lines in load_news(store.artifacts, run).messages():
        sent = deliver(store.deliveries, channels, run.execution_name,
                       Message(kind=kind, cluster=run.cluster_name, notes=lines))
        notified(store.audit, run, kind, sent)
        _raise_if_nothing_went_out(sent)  # a retry sends it again, and skips what went out already
        results += sent
    return _outcome(results)


def _raise_if_nothing_went_out(results: list[DeliveryResult]) -> None:
    failed = [r for r in results if not r.ok]
    if failed and len(failed) == len(results):
        raise TransientError("; ".join(r.error or r.channel for r in failed))


def _outcome(results: list[DeliveryResult]) -> dict[str, Any]:
    return {"sent": list(dict.fromkeys(r.channel for r in results if r.ok)),
            "failed": {r.channel: r.error for r in results if not r.ok}}
