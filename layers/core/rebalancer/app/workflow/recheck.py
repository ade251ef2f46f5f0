"""Recheck: an approved plan is compared with the cluster read again before anything is written, as Terraform
refuses a saved plan whose state moved. The workflow collects again once the approval arrives and runs this through
the Plan step; `rebalancer apply` runs it after its prompt. The comparison is rebalancer.planning.staleness.

- The plan still holds (nothing it was made from moved, and it is younger than `approval.max_plan_age_minutes`):
  it is written as approved.
- It went stale: it is made again on the cluster as it is. The new plan is written on the old approval when it is
  within it (or needs no approval under the policy); it is recorded and nothing is written when it is empty or the
  policy is now a dry run; otherwise the old approval is marked superseded and a new one is asked for, saying why.
- The rounds of asking are bounded (MAX_APPROVAL_ROUNDS): a cluster that keeps moving under an approval stops the
  run (`gave_up`) instead of asking forever. That bounds the state machine's RequestApproval → Recollect → Recheck
  loop: each round waits for a person, and the Recheck step ends it at the bound.
Nothing is ever written that nobody approved: the decision is `apply` only for the approved plan or one within it."""

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Literal, Protocol

from rebalancer.app.workflow import audit, run_plan
from rebalancer.app.workflow.notice import MAX_NOTICE_ROUNDS, load_notice, unnoticed
from rebalancer.app.workflow.state import MAX_STATE_LINES, RunRef, load_plan, record_snapshot
from rebalancer.app.workflow.stored_basis import load_basis
from rebalancer.domain.frozen import Frozen
from rebalancer.domain.plan import Plan, Preemption, preemption_line
from rebalancer.domain.policy import Policy
from rebalancer.domain.snapshot import Snapshot
from rebalancer.planning.preemptions import listed, preemptions
from rebalancer.planning.staleness import beyond_approval, stale_reasons

MAX_APPROVAL_ROUNDS = 3
Outcome = Literal["fresh", "replanned", "superseded", "no_change", "dry_run", "gave_up", "notice"]
RecheckDecision = Literal["apply", "approve", "no_change", "dry_run", "stale", "notice"]
DECISIONS: dict[str, RecheckDecision] = {"fresh": "apply", "replanned": "apply", "superseded": "approve",
                                         "no_change": "no_change", "dry_run": "dry_run", "gave_up": "stale",
                                         "notice": "notice"}


class Supersede(Protocol):
    """The part of the approval records a recheck uses (rebalancer.app.approvals.decisions.ApprovalRecords)."""

    def supersede(self, approval_id: str, why: str) -> bool: ...


class RecordsSourcesAndApprovals(run_plan.RecordsAndSources, Protocol):
    """A run's records and what its plan is made from (run_plan.RecordsAndSources), and the approvals a recheck
    supersedes."""

    @property
    def approvals(self) -> Supersede: ...


class Rechecked(Frozen):
    """What the check found and what follows: `plan` is what is written (the approved plan itself when it still
    holds), recorded, or asked for again."""

    outcome: Outcome
    plan: Plan
    approval_round: int  # the round of approval the run is in now (a new one when superseded)
    stale: tuple[str, ...] = ()  # why the approved plan could not be written as it was
    beyond: tuple[str, ...] = ()  # what the plan made again does that was not approved
    unnoticed: tuple[str, ...] = ()  # what writing it would now preempt that the run's notice did not name
    preempting: tuple[Preemption, ...] = ()  # with a notice to give: all that writing it would preempt now

    @property
    def decision(self) -> RecheckDecision:
        return DECISIONS[self.outcome]

    def notes(self) -> list[str]:
        """What the messages say about it: nothing when the approved plan is written as it was."""
        if self.outcome == "fresh":
            return []
        lead = {"replanned": "The approved plan was made again before writing, and stays within the approval:",
                "superseded": "The approved plan was not written: the cluster changed while it waited. This is the "
                              "plan made on the cluster as it is now; it asks for a new approval because it goes "
                              "beyond the one given:",
                "no_change": "The approved plan was made again before writing: nothing is left to change.",
                "dry_run": "The approved plan was made again before writing: the policy is a dry run now.",
                "gave_up": f"Stopped without writing: the approved plan went stale in {self.approval_round} rounds "
                           "of approval in a row." if not self.unnoticed else
                           "Stopped without writing: each notice was followed by running work it did not name.",
                "notice": "The plan would preempt running work: its teams are told before it is written."
                }[self.outcome]
        return [lead, *(f"changed since the plan: {s}" for s in self.stale),
                *(f"beyond the approval: {b}" for b in self.beyond),
                *(f"not named by the notice: {u}" for u in self.unnoticed)]


def recheck(run: RunRef, policy: Policy, now: datetime, *, store: run_plan.RecordsAndSources, approval_round: int,
            approvals: Supersede | None = None, approval_id: str | None = None,
            policy_may_approve: bool = True) -> Rechecked:
    """The run's approved plan (PLAN, made from BASIS) against the snapshot the run collected again. Records the
    plan made again (when it replaces the approved one), marks `approval_id` superseded in `approvals` when a new
    approval is needed (the workflow's; the CLI asks at its prompt), and one `recheck` audit record.
    `policy_may_approve`: a plan made again that the policy would apply without approval is written (as a run of
    the controller would write it); False holds it to what was approved all the same (the CLI: a person said yes to
    the plan shown)."""
    approved = load_plan(store.artifacts, run)
    then = load_basis(store.artifacts, run)
    snapshot = run_plan.load_snapshot(store.artifacts, run, again=True)
    planned = run_plan.make_run_plan(snapshot, policy, now, store=store)
    store.sightings.record_unavailable(run.cluster_name, dict(planned.context.unavailable_since))
    max_age = timedelta(minutes=policy.approval.max_plan_age_minutes)
    stale = (stale_reasons(then, planned.basis, approved, now, max_age) if then is not None
             else ("the plan was stored without what it was made from",))
    outcome, beyond = _outcome(approved, planned.plan, stale, approval_round, policy_may_approve)
    written = approved if outcome == "fresh" else planned.plan
    missing: list[str] = []
    preempting: tuple[Preemption, ...] = ()
    if outcome in ("fresh", "replanned"):
        outcome, written, missing, preempting = _against_the_notice(store, run, snapshot, outcome, approved, written)
    result = Rechecked(outcome=outcome, plan=written,
                       approval_round=approval_round + (outcome == "superseded"), stale=stale, beyond=beyond,
                       unnoticed=tuple(missing[:MAX_STATE_LINES]), preempting=preempting)
    _record(store, run, snapshot, planned, result)
    if outcome == "superseded" and approvals is not None and approval_id is not None:
        why = [*stale, *beyond]
        approvals.supersede(approval_id, "; ".join(why))
        audit.approval_superseded(store.audit, run, approval_id, why)
    audit.rechecked(store.audit, run, outcome, stale=stale, beyond=beyond, approval_round=result.approval_round)
    return result


def _outcome(approved: Plan, new: Plan, stale: tuple[str, ...], approval_round: int,
             policy_may_approve: bool) -> tuple[Outcome, tuple[str, ...]]:
    """What follows from the check, before any notice is looked at, and what the plan made again (`new`) does
    beyond the approval."""
    if new.mode == "dry-run":
        return "dry_run", ()
    if not stale:
        return "fresh", ()
    if new.is_empty:
        return "no_change", ()
    beyond = beyond_approval(approved, new) if new.requires_approval or not policy_may_approve else ()
    outcome: Outcome = ("replanned" if not beyond else "gave_up" if approval_round >= MAX_APPROVAL_ROUNDS
                        else "superseded")
    return outcome, beyond


def _against_the_notice(store: run_plan.RecordsAndSources, run: RunRef, snapshot: Snapshot, outcome: Outcome,
                        approved: Plan, written: Plan) -> tuple[Outcome, Plan, list[str], tuple[Preemption, ...]]:
    """What writing `written` now would preempt, on the cluster as it is: only what the run's notice named is
    written. The outcome and plan that follow, what the notice did not name, and (with a notice to give) all that
    writing it would preempt."""
    found, at_risk = preemptions(snapshot, written.allocations, written.changes)
    told = load_notice(store.artifacts, run)
    missing = [preemption_line(p) for p in unnoticed(told, found)]
    if missing and told is not None and told.round >= MAX_NOTICE_ROUNDS:
        return "gave_up", approved, missing, ()
    if missing:
        named, unlisted = listed(found)
        return "notice", written.model_copy(update={"preemptions": named, "preemptions_unlisted": unlisted,
                                                    "preempted_gpu_hours": at_risk}), missing, tuple(found)
    return outcome, written, missing, ()


def _record(store: run_plan.RecordsAndSources, run: RunRef, snapshot: Snapshot, planned: run_plan.RunPlan,
            result: Rechecked) -> None:
    """The plan made again becomes the run's, beside what it was made from; with a notice to give, the approved
    plan is stored naming what it would preempt on the cluster as it is now."""
    outcome = result.outcome
    if outcome not in ("fresh", "gave_up") and (result.stale or outcome != "notice"):
        record_snapshot(store.artifacts, run, snapshot)
        run_plan.record_plan(store, run, replace(planned, plan=result.plan), decision=outcome)
    elif outcome == "notice":
        store.artifacts.put(run.execution_name, "PLAN", result.plan.model_dump(mode="json"))
