"""Commands on a live cluster (real AWS with your credentials, or the emulator via AWS_ENDPOINT_URL):
`snapshot`, `apply` and `rollback`; `plan --cluster` uses the same options. Read-only commands make only
Describe / List / Get calls. AWS errors are one line (the call, the resource, what AWS said) unless --debug."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import click

from rebalancer.adapters.sagemaker.outcomes import ApplyReport
from rebalancer.catalog.specs import spec
from rebalancer.domain.plan import Plan, preemption_summary
from rebalancer.domain.policy import Policy
from rebalancer.domain.pools import PoolKey, held
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import ApprovalRequired, InvalidInput, PermanentError, RebalancerError, UnknownInstanceType
from rebalancer.parsing.loading import load_model_file
from rebalancer_tools.cli.output import console
from rebalancer_tools.cli.params import InputFile, Number, OutputFile, Whole, profile_option, write_atomically
from rebalancer_tools.cli.run_log import NO_TABLE_WARNING, RunLog, cli_execution, memory_log, table_log
from rebalancer_tools.reports.render import render_plan
from rebalancer_tools.reports.run_ids import resolve_run

if TYPE_CHECKING:  # the adapters (boto3, kubernetes) are imported only by the commands that run them
    from rebalancer.adapters.aws import AwsClients
    from rebalancer.adapters.collect import Collected
    from rebalancer.adapters.sagemaker.quota_writer import QuotaWriter
    from rebalancer.adapters.sagemaker.scheduler_config import SchedulerConfigClient
    from rebalancer.app.workflow.run_plan import RunPlan
    from rebalancer.app.workflow.runs import Applied
    from rebalancer.app.workflow.state import RunRef
    from rebalancer_tools.cli.cluster_lock import Lease
    from rebalancer_tools.cli.identity import Caller

F = TypeVar("F", bound=Callable[..., Any])
KubeMode = Literal["eks", "context", "url", "none"]


@dataclass(frozen=True, slots=True)
class LiveSource:
    cluster: str
    region: str | None = None
    profile: str | None = None
    kube_mode: KubeMode = "eks"
    kube_context: str | None = None
    kube_url: str | None = None
    metrics_window_minutes: int | None = 60
    retry_mode: Literal["standard", "adaptive"] = "standard"
    no_kube_option: bool = False  # the user gave --no-kube: say what it costs (a command reading capacity only won't)

    def clients(self) -> AwsClients:
        from rebalancer.adapters.aws import AwsClients

        return AwsClients(region=self.region, profile=self.profile, retry_mode=self.retry_mode)

    def collect(self, now: datetime) -> Collected:
        from rebalancer.adapters.collect import KubeAccess, collect_snapshot

        window = timedelta(minutes=self.metrics_window_minutes) if self.metrics_window_minutes else None
        kube = KubeAccess(mode=self.kube_mode, context=self.kube_context, url=self.kube_url)
        collected = collect_snapshot(self.cluster, self.clients(), now=now, kube=kube, metrics_window=window)
        if self.no_kube_option:
            click.echo(f"warning: {NO_KUBE_WARNING}", err=True)
        for w in collected.warnings:
            click.echo(f"warning: {w}", err=True)
        return collected


NO_KUBE_WARNING = "Kueue not read (--no-kube): every team's demand is taken as zero"


def live_options(*, required: bool) -> Callable[[F], F]:
    """Adds --cluster, --region, --profile, --kube-context / --kube-url / --no-kube, --metrics-window,
    --retry-mode; the command receives them as one `live: LiveSource | None` (None without --cluster)."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, cluster: str | None, region: str | None, profile: str | None,
                    kube_context: str | None, kube_url: str | None, no_kube: bool, metrics_window: int,
                    retry_mode: str, **kwargs: Any) -> Any:
            chosen = [n for n, v in (("--kube-context", kube_context), ("--kube-url", kube_url),
                                     ("--no-kube", no_kube)) if v]
            if len(chosen) > 1:
                raise InvalidInput(f"choose one of {', '.join(chosen)}", field=chosen[0])
            if cluster is None and (chosen or region or profile):
                raise InvalidInput("needs --cluster", field=(chosen or ["--region"])[0])
            mode: KubeMode = "none" if no_kube else "context" if kube_context else "url" if kube_url else "eks"
            live = None if cluster is None else LiveSource(
                cluster=cluster, region=region, profile=profile, kube_mode=mode, kube_context=kube_context,
                kube_url=kube_url, metrics_window_minutes=metrics_window or None, no_kube_option=no_kube,
                retry_mode=cast(Literal["standard", "adaptive"], retry_mode))
            return func(*args, live=live, **kwargs)

        options = [
            click.option("--cluster", required=required, help="HyperPod cluster name (reads it live)."),
            click.option("--region", help="AWS region (default: your AWS configuration)."),
            profile_option(),
            click.option("--kube-context", help="Read Kueue through this kubeconfig context instead of EKS auth."),
            click.option("--kube-url", help="Read Kueue from this API server URL without auth (local fake)."),
            click.option("--no-kube", is_flag=True, help="Do not read Kueue: every team's demand is zero."),
            click.option("--metrics-window", type=Whole(0, 7 * 24 * 60), default=60, show_default=True,
                         help="Minutes of Container Insights utilization to average (0: skip)."),
            click.option("--retry-mode", type=click.Choice(["standard", "adaptive"]), default="standard",
                         show_default=True, help="botocore retry mode for throttling."),
        ]
        out: Callable[..., Any] = wrapper
        for option in reversed(options):
            out = option(out)
        return cast(F, out)

    return decorate


def _now() -> datetime:
    return datetime.now(UTC)


def quota_summary(q: ComputeQuota) -> str:
    parts = []
    for r in q.ComputeQuotaConfig.ComputeQuotaResources:
        profile = r.AcceleratorPartition.Type if r.AcceleratorPartition else None
        key = PoolKey(instance_type=r.InstanceType, mig_profile=profile)
        try:
            unit = "part" if profile else ("acc" if spec(r.InstanceType).accelerators else "vCPU")
            parts.append(f"{key} {held(q, key):g} {unit}")
        except UnknownInstanceType:
            parts.append(f"{r.InstanceType} (unknown type)")
    off = " (disabled)" if q.ActivationState == "Disabled" else ""
    return (", ".join(parts) or "nothing") + off


def _writer(live: LiveSource, poll_interval: float, timeout: float) -> QuotaWriter:
    from rebalancer.adapters.sagemaker.quota_writer import Poller, QuotaWriter

    return QuotaWriter(live.clients().client("sagemaker"), Poller(interval=poll_interval, timeout=timeout))


def _configs(live: LiveSource, poll_interval: float, timeout: float) -> SchedulerConfigClient:
    from rebalancer.adapters.sagemaker.quota_writer import Poller
    from rebalancer.adapters.sagemaker.scheduler_config import SchedulerConfigClient

    return SchedulerConfigClient(live.clients().client("sagemaker"), Poller(interval=poll_interval, timeout=timeout))


poll_options = [
    click.option("--poll-interval", type=Number(0.1, 3600), default=5.0, show_default=True,
                 help="Seconds between status reads while a quota is Updating."),
    click.option("--timeout", type=Number(1, 7 * 24 * 3600), default=900.0, show_default=True,
                 help="Seconds to wait for the quotas to settle before giving up."),
]


def with_poll_options(func: F) -> F:
    for option in reversed(poll_options):
        func = option(func)
    return func


def audit_options(func: F) -> F:
    """--table / --stack (env REBALANCER_TABLE): the controller's audit table to record the command in."""
    func = click.option("--stack", help="Or the SAM stack whose TableName output is the audit table.")(func)
    return click.option("--table", envvar="REBALANCER_TABLE",
                        help="Record this in the controller's audit table (env REBALANCER_TABLE), as `history` "
                             "reads it.")(func)


def context_table_options(func: F) -> F:
    """--table / --stack (env REBALANCER_TABLE): the controller's table to read the planning context from."""
    func = click.option("--stack", help="Or the SAM stack whose TableName output is the table.")(func)
    return click.option("--table", envvar="REBALANCER_TABLE",
                        help="Read the planning context from the controller's table (env REBALANCER_TABLE), as its "
                             "plan step does: approved reservations, budget use, fair share over the window, recent "
                             "changes, first sightings, the versions its writes left.")(func)


NO_TABLE_CONTEXT = ("no table (--table / --stack / $REBALANCER_TABLE) and no --context: planned from the snapshot "
                    "alone, without the controller's records (approved reservations, budget use, fair share over the "
                    "window, recent changes, first sightings of unavailable nodes, the versions its writes left)")


@click.command()
@live_options(required=True)
@click.option("--output", "-o", type=OutputFile(),
              help="Write the snapshot here instead of stdout.")
@click.option("--context-output", type=OutputFile(),
              help="Also write the planning context beside it, as the controller's plan step reads it from the "
                   "table (needs --policy): `rebalancer plan --snapshot S --context C` then plans as the controller "
                   "would have.")
@click.option("--policy", "policy_file", type=InputFile(),
              help="With --context-output: the policy the context is read for (its budgets, fair-share window "
                   "and settings decide what is read).")
@context_table_options
def snapshot(live: LiveSource, output: str | None, context_output: str | None, policy_file: str | None,
             table: str | None, stack: str | None) -> None:
    """Read a cluster's capacity, quotas, Kueue demand and utilization into a snapshot (JSON). Read-only."""
    if context_output and not policy_file:
        raise InvalidInput("--context-output needs --policy: the context depends on the policy's budgets, fair-share "
                           "window and settings", field="--context-output", value=context_output)
    if policy_file and not context_output:
        raise InvalidInput("--policy goes with --context-output", field="--policy", value=policy_file)
    log = open_run_log(live, table, stack) if context_output else None  # a wrong table fails before the reads
    policy = load_model_file(Policy, policy_file) if policy_file else None  # and a bad policy too
    now = _now()
    snap = live.collect(now).snapshot
    text = json.dumps(snap.model_dump(mode="json", exclude_none=True), indent=2)
    if output:
        write_atomically(output, text + "\n")
        click.echo(f"snapshot of {live.cluster} written to {output}", err=True)
    else:
        click.echo(text)
    if context_output and policy is not None and log is not None:
        from rebalancer.app.workflow import run_plan
        from rebalancer.domain.recorded_context import RecordedContext

        context = run_plan.context_for(snap, policy, store=log.store)
        if not log.recorded:  # said of a context read: bad input is refused before it
            click.echo(f"warning: {NO_TABLE_CONTEXT}", err=True)
        recorded = RecordedContext.of(snap, policy, now, context)
        write_atomically(context_output, recorded.model_dump_json(indent=2) + "\n")
        click.echo(f"planning context of {live.cluster} written to {context_output}", err=True)


@click.command()
@live_options(required=True)
@click.option("--policy", "policy_file", required=True, type=InputFile(), help="Policy file.")
@click.option("--yes", "-y", is_flag=True, help="Apply without asking (a plan that needs approval still needs "
                                                  "--approve).")
@click.option("--approve", "approve_reason", metavar="REASON",
              help="Approve a plan that needs approval (mode approve, a threshold, a new team), as your AWS "
                   "identity, with this reason; recorded in the audit table as the approval page's decisions are.")
@click.option("--notice-given", is_flag=True,
              help="The teams whose running work the plan would preempt were told (the policy's "
                   "reclaim.notice_minutes ago): without it such a plan is refused.")
@click.option("--save-snapshot", type=OutputFile(),
              help="Also write the snapshot the plan was made from (the state to roll back to).")
@audit_options
@with_poll_options
def apply(live: LiveSource, policy_file: str, yes: bool, approve_reason: str | None, notice_given: bool,
          save_snapshot: str | None, table: str | None, stack: str | None, poll_interval: float,
          timeout: float) -> None:
    """Plan on the live cluster, show the plan, ask, apply (the scheduler config first, then the quotas,
    decreases first), verify and print each outcome. Once you answer, the cluster is read again: a plan that went
    stale meanwhile is made again, applied if it stays within what you said yes to, else shown and asked about
    again. No write raises an instance type above its healthy capacity. On a failure after the first write, what
    this run wrote is restored. The same use cases as the controller's run (rebalancer.app.workflow.runs): given
    its audit table, the plan takes the versions the controller's writes left for its own, the run holds the
    controller's per-cluster lock from the read to the last write, and it is recorded there like one of the
    controller's (plan, approval, apply, rollback; the snapshot, for `history --snapshot-of`) with the versions it
    left. A plan that needs approval is written only with --approve; --yes skips the question, nothing more. A plan
    that would preempt running work is written only with --notice-given, and then only what it named: once written,
    the cluster is read again and what Kueue preempted is recorded beside what the plan named."""
    from rebalancer_tools.cli.cluster_lock import cluster_lock

    policy = load_model_file(Policy, policy_file)
    reason = _approval_reason(approve_reason)
    log = open_run_log(live, table, stack)  # a wrong table or stack fails here, before any read or write
    name = cli_execution(live.cluster, log.now())
    who = _caller(live) if log.recorded else None
    with cluster_lock(log, live.cluster, name, who=who, sfn=lambda: live.clients().client("stepfunctions")) as lease:
        snap, planned = _read_and_plan(live, log, policy, save_snapshot)
        plan = planned.plan
        if _nothing_to_apply(plan):
            return
        _say_unrecorded(log, NO_TABLE_WARNING)  # once the cluster was read and planned: about the writes to come
        # Recorded before it is asked about, so that a run declined or refused is in the history with its plan.
        run = _record_run(log, snap, name, planned, who=who)
        _gate(live, log, run, snap, plan, policy, reason=reason, notice_given=notice_given, who=who)
        question = (f"Apply {len(plan.requests) + len(plan.scheduler_requests)} request(s) to "
                    f"{snap.cluster.ClusterName}?")
        if not _confirmed(live, policy, run, log, lease, question, yes=yes, save_snapshot=save_snapshot, who=who):
            return
        done = _apply_or_restore(live, run, log, lease, who=who, poll_interval=poll_interval, timeout=timeout)
    _say_applied(live, run, log, done)


def _read_and_plan(live: LiveSource, log: RunLog, policy: Policy,
                   save_snapshot: str | None) -> tuple[Snapshot, RunPlan]:
    """The cluster read (and saved, given --save-snapshot) and planned with the store's context; the plan shown."""
    from rebalancer.app.workflow import run_plan

    now = _now()
    snap = live.collect(now).snapshot
    if save_snapshot:
        write_atomically(save_snapshot, snap.model_dump_json(indent=2, exclude_none=True) + "\n")
    planned = run_plan.make_run_plan(snap, policy, now, store=log.store)
    render_plan(planned.plan, console())
    return snap, planned


def _gate(live: LiveSource, log: RunLog, run: RunRef, snap: Snapshot, plan: Plan, policy: Policy, *,
          reason: str | None, notice_given: bool, who: str | None) -> None:
    """The gates before the question: a plan that needs approval goes on only with --approve (the approver
    recorded), one that would preempt running work only with --notice-given (the notice recorded); a run refused at
    either is recorded as not written, and the refusal raised."""
    from rebalancer.app.workflow import audit
    from rebalancer.app.workflow.notice import all_preempted, needs_notice, record_notice

    try:
        approver = _approver(live, plan.approval_reasons, reason)
    except ApprovalRequired as e:
        audit.not_written(log.store.audit, run, "refused", "the plan needs approval and no --approve was given",
                          who=who)
        raise e from None
    if approver is not None:
        _record_approval(log, run, approver, str(reason))
    try:
        _noticed(plan, policy, notice_given)
    except PermanentError:
        audit.not_written(log.store.audit, run, "refused", "the plan would preempt running work and no "
                          "--notice-given was given", who=who)
        raise
    if needs_notice(plan):
        record_notice(log.store.artifacts, run, plan, policy, all_preempted(snap, plan))


def _confirmed(live: LiveSource, policy: Policy, run: RunRef, log: RunLog, lease: Lease | None, question: str, *,
               yes: bool, save_snapshot: str | None, who: str | None) -> bool:
    """The question asked (unless --yes) and the answer checked against the cluster read again: True when the
    run's plan may be written, on a lock renewed after the answer and again after the check."""
    if not yes:
        _ask(log, run, who, question)
    if lease is not None:
        lease.renew()  # the answer may have come late: write only on a lock still ours
    if not yes and not _still_approved(live, policy, run, log, save_snapshot, who):
        return False
    if lease is not None:
        lease.renew()
    return True


def _say_applied(live: LiveSource, run: RunRef, log: RunLog, done: Applied) -> None:
    """Each outcome, the count, and what Kueue preempted once the quotas settled."""
    for line in done.lines():
        click.echo(line)
    click.echo(f"applied {len(done.report.outcomes)} request(s); every quota settled")
    _preempted(live, run, log)


def _noticed(plan: Plan, policy: Policy, notice_given: bool) -> None:
    """The notice before reclaim (rebalancer.app.workflow.notice), as the controller gives it: a plan that would
    preempt running work is written only once its teams were told, which the CLI cannot do for you."""
    from rebalancer.app.workflow.notice import needs_notice

    if not needs_notice(plan) or notice_given:
        return
    minutes = policy.reclaim.notice_minutes
    teams = ", ".join(plan.preempted_teams)
    what = preemption_summary(plan.preemptions, plan.preemptions_unlisted, plan.preempted_gpu_hours)
    ahead = f" {minutes:g} minutes ahead (reclaim.notice_minutes)" if minutes else ""
    raise PermanentError(f"the plan would preempt {what} (teams {teams}): nothing applied; tell them{ahead} and run "
                         "again with --notice-given")


def _preempted(live: LiveSource, run: RunRef, log: RunLog) -> None:
    """Once written, what Kueue preempted against what the plan named, recorded with the run and said."""
    from rebalancer.app.workflow.preempted import record_preempted

    try:
        seen = record_preempted(log.store, run, live.collect(_now()).snapshot)
    except RebalancerError as e:  # the write is done and verified: a failed read afterwards only goes unrecorded
        click.echo(f"warning: what Kueue preempted was not read: {e}", err=True)
        return
    named, preempted = set(seen["named"]), set(seen["preempted"])
    if named or preempted:
        click.echo(f"Kueue preempted {len(preempted)} workload(s); the plan named {len(named)}"
                   + ("" if named == preempted else f" (not named: {', '.join(sorted(preempted - named)) or 'none'}; "
                      f"named, still running: {', '.join(sorted(named - preempted)) or 'none'})"))


def _say_unrecorded(log: RunLog, *warnings: str) -> None:
    """Without the table: what the command does without it (no record, no lock), said once its input is checked."""
    from rebalancer_tools.cli.cluster_lock import UNLOCKED_WARNING

    if not log.recorded:
        for warning in (*warnings, UNLOCKED_WARNING):
            click.echo(f"warning: {warning}", err=True)


def _nothing_to_apply(plan: Plan) -> bool:
    """True, said, when the plan writes nothing: no change, or a policy in dry-run mode."""
    if plan.is_empty:
        click.echo("nothing to apply")
        return True
    if plan.mode == "dry-run":
        click.echo("the policy's mode is dry-run: nothing applied")
        return True
    return False


def _record_run(log: RunLog, snap: Snapshot, name: str, planned: RunPlan, *, who: str | None) -> RunRef:
    """The CLI's run recorded as the controller's are: its snapshot and its plan."""
    from rebalancer.app.workflow import run_plan, state

    run = state.RunRef(cluster_name=snap.cluster.ClusterName, execution_name=name, execution_arn="",
                       trigger={"command": "rebalancer apply"}, source="cli")
    state.record_snapshot(log.store.artifacts, run, snap)
    run_plan.record_plan(log.store, run, planned, who=who)
    return run


def _ask(log: RunLog, run: RunRef, who: str | None, question: str) -> None:
    """The prompt; a no (or Ctrl-C, or no input) is recorded as the run declined, nothing written, and aborts."""
    from rebalancer.app.workflow import audit

    try:
        agreed = click.confirm(question, default=False)
    except click.Abort:
        agreed = False
    if not agreed:
        audit.not_written(log.store.audit, run, "declined", "declined at the prompt", who=who)
        raise click.Abort


def _apply_or_restore(live: LiveSource, run: RunRef, log: RunLog, lease: Lease | None, *, who: str | None,
                      poll_interval: float, timeout: float) -> Applied:
    """The recorded plan applied and verified; on a failure after the first write, what this run wrote is restored
    (on a lock renewed first) and the failure raised."""
    from rebalancer.app.workflow import runs

    writer, configs = _writer(live, poll_interval, timeout), _configs(live, poll_interval, timeout)
    try:
        return runs.apply_run(run, store=log.store, writer=writer, configs=configs, who=who)
    except RebalancerError as e:
        if lease is not None:
            lease.renew()
        _roll_back_failed(run, e, log=log, writer=writer, configs=configs)
        raise


def _approval_reason(given: str | None) -> str | None:
    """--approve's reason, one clean line; refused when empty."""
    if given is None:
        return None
    from rebalancer.app.approvals.review_page import COMMENT_MAX
    from rebalancer.parsing.text import clean_text

    reason = clean_text(given, COMMENT_MAX)
    if not reason:
        raise InvalidInput("give the reason for approving (one line)", field="--approve", value=given)
    return reason


def _approver(live: LiveSource, reasons: tuple[str, ...], reason: str | None) -> Caller | None:
    """The approval gate: a plan that needs approval goes on only with --approve, approved by the caller's STS
    identity (None when the plan needs none)."""
    if not reasons:
        if reason is not None:
            click.echo("note: the plan needs no approval; --approve is not recorded", err=True)
        return None
    if reason is None:
        raise ApprovalRequired(f"the plan needs approval ({'; '.join(reasons)}): nothing applied; give "
                               '--approve "REASON" to approve it as your AWS identity (recorded)')
    from rebalancer_tools.cli.identity import caller

    approver = caller(live.clients())
    click.echo(f"approved by {approver.arn}: {reason}")
    return approver


def _record_approval(log: RunLog, run: RunRef, approver: Caller, reason: str) -> None:
    """As the approval page and Slack record a decision: kind approval, outcome approved, the approver and how
    they were verified."""
    from rebalancer.app.workflow import audit

    audit.approval_decided(log.store.audit, run.cluster_name, run.execution_name, "approved", approver.arn,
                           comment=reason, identity=approver.identity("rebalancer apply --approve"))


def _still_approved(live: LiveSource, policy: Policy, run: RunRef, log: RunLog, save_snapshot: str | None,
                    who: str | None) -> bool:
    """After the prompt (a wait), the plan shown is checked against the cluster read again, as the controller checks
    an approved plan (rebalancer.app.workflow.recheck): True when the run's stored plan (the one shown, or one made
    again within it) may be written; a plan made again beyond it is shown and asked about again (rounds bounded).
    False when nothing is to be written; raises when the rounds ran out."""
    from rebalancer.app.workflow import recheck, state

    rounds = 1
    while True:
        fresh = live.collect(_now()).snapshot
        state.record_snapshot(log.store.artifacts, run, fresh, again=True)
        if save_snapshot:  # the quotas as they are just before the write: the state to roll back to
            write_atomically(save_snapshot, fresh.model_dump_json(indent=2, exclude_none=True) + "\n")
        checked = recheck.recheck(run, policy, _now(), store=log.store, approval_round=rounds,
                                  policy_may_approve=False)
        for line in checked.notes():
            click.echo(line)
        if checked.decision == "apply":
            return True
        if checked.decision == "stale":
            raise PermanentError("the cluster kept changing while the plan was shown; nothing applied: run it again")
        if checked.decision == "notice":
            raise PermanentError("writing now would preempt running work the notice did not name; nothing applied: "
                                 "tell the teams and run again with --notice-given")
        if checked.decision != "approve":
            click.echo("nothing applied")
            return False
        render_plan(checked.plan, console())
        _ask(log, run, who, f"Apply {len(checked.plan.requests) + len(checked.plan.scheduler_requests)} request(s) "
                            f"to {run.cluster_name}?")
        rounds = checked.approval_round


def _roll_back_failed(run: RunRef, error: RebalancerError, *, log: RunLog, writer: QuotaWriter,
                      configs: SchedulerConfigClient) -> None:
    """As the state machine after a failed Apply: the Rollback use case undoes what the run wrote. Prints what the
    apply and the rollback did, and raises the apply's error with "; rolled back" (or "; ROLLBACK INCOMPLETE")
    when the rollback had something to undo."""
    from rebalancer.adapters.sagemaker.quota_writer import raise_for_report
    from rebalancer.app.workflow import runs

    undone = runs.rollback_run(run, {"Error": type(error).__name__, "Cause": str(error)}, store=log.store,
                               writer=writer, configs=configs)
    scheduler = runs.load_scheduler(log.store.artifacts, run)
    report = (runs.load_report(log.store.artifacts, run)
              or ApplyReport(cluster_arn="", succeeded=False, error=str(error)))
    if undone.did_anything:
        report = report.model_copy(update={"rollback": undone.undo.outcomes, "rolled_back": undone.ok})
    for line in ([scheduler.line()] if scheduler else []) + report.lines():
        click.echo(line)
    if undone.scheduler is not None:
        click.echo("  " + undone.scheduler.line())
    if undone.did_anything:
        raise_for_report(report)


def open_run_log(live: LiveSource | None, table: str | None, stack: str | None) -> RunLog:
    """The controller's table when one is named (--table / --stack / $REBALANCER_TABLE), checked to exist, through
    the live cluster's AWS configuration (else the default one); else memory (nothing recorded, nothing known)."""
    if not table and not stack:
        return memory_log()
    from rebalancer.adapters.aws import AwsClients, aws_call
    from rebalancer.adapters.dynamodb.store import Store
    from rebalancer_tools.cli.history_cmd import audit_table_name

    session = (live.clients() if live is not None else AwsClients()).session
    store = Store(audit_table_name(session, table, stack), resource=session.resource("dynamodb"),
                  now=lambda: _now())  # looked up at each reading: the tests put their clock in its place
    with aws_call("DescribeTable", f"audit table {store.table_name}"):
        store.table.table.load()
    return table_log(store)


def _caller(live: LiveSource) -> str:
    """Who runs the command, for the audit records."""
    from rebalancer_tools.cli.identity import caller

    return caller(live.clients()).arn


@click.command()
@live_options(required=True)
@click.option("--to", "to_file", type=InputFile(),
              help="Snapshot JSON holding the quotas to restore (from `rebalancer snapshot`).")
@click.option("--run", "run_name", metavar="RUN",
              help="Or undo what run RUN wrote (a controller run or a CLI apply, as `rebalancer history` names "
                   "it; needs the audit table), as the controller's Rollback step: its quotas and its scheduler "
                   "config, each left alone if edited after the run's write.")
@click.option("--yes", "-y", is_flag=True, help="Roll back without asking.")
@audit_options
@with_poll_options
def rollback(live: LiveSource, to_file: str | None, run_name: str | None, yes: bool, table: str | None,
             stack: str | None, poll_interval: float, timeout: float) -> None:
    """Restore the quotas of a snapshot (--to), with fresh versions, decreases first; or undo what one run wrote
    (--run). No write raises an instance type above today's healthy capacity: a quota whose restore would is left
    as it is, the rest restored, and what was left is listed. Given the controller's audit table, the rollback is
    recorded there and shows in `rebalancer history`."""
    from rebalancer_tools.cli.cluster_lock import cluster_lock

    if (to_file is None) == (run_name is None):
        raise InvalidInput("give --to FILE (a snapshot to restore) or --run RUN (a run to undo)", field="--to")
    log = open_run_log(live, table, stack)  # a wrong table or stack fails here, before any write
    if run_name is not None and not log.recorded:
        raise InvalidInput("--run needs the audit table (--table / --stack / $REBALANCER_TABLE)", field="--run",
                           value=run_name)
    name = cli_execution(live.cluster, log.now())
    with cluster_lock(log, live.cluster, name, who=_caller(live) if log.recorded else None,
                      sfn=lambda: live.clients().client("stepfunctions")) as lease:
        if run_name is not None:
            _rollback_run(live, run_name, yes, log, poll_interval, timeout, lease)
        else:
            assert to_file is not None
            _restore_snapshot(live, to_file, yes, log, poll_interval, timeout, name, lease)


def _restore_snapshot(live: LiveSource, to_file: str, yes: bool, log: RunLog,
                      poll_interval: float, timeout: float, name: str, lease: Lease | None) -> None:
    from rebalancer.adapters.sagemaker.cluster import SageMakerReader
    from rebalancer.adapters.sagemaker.healthy import NodeCapacity
    from rebalancer.app.workflow import restore, runs, state

    target = load_model_file(Snapshot, to_file)
    sm = SageMakerReader(live.clients().client("sagemaker"))
    cluster = sm.cluster(live.cluster)
    if target.cluster.ClusterArn != cluster.ClusterArn:
        raise InvalidInput(f"the snapshot is of {target.cluster.ClusterArn}, not {cluster.ClusterArn}",
                           source=to_file, field="cluster.ClusterArn", value=target.cluster.ClusterArn)
    current = {q.ComputeQuotaId: q for q in sm.quotas(cluster.ClusterArn)}
    restore.check_ownership(cluster.ClusterArn, target.quotas, current, to_file)
    checked = restore.plan_restore(target.quotas, current, NodeCapacity(sm.sm).healthy(cluster.ClusterArn))
    for line in checked.over_capacity:
        click.echo(f"warning: above healthy capacity: {line}; a quota whose restore would raise it is left as it is",
                   err=True)
    for q in checked.changed:
        now_q = current[q.ComputeQuotaId]
        click.echo(f"{q.team}: {quota_summary(now_q)} (v{now_q.ComputeQuotaVersion}) → {quota_summary(q)}")
    if checked.unchanged:
        click.echo(f"({checked.unchanged} quota(s) already as in the snapshot)")
    wanted = {q.ComputeQuotaId for q in target.quotas}
    for qid, q in current.items():
        if qid not in wanted:
            click.echo(f"warning: quota {q.Name} of team {q.team} is not in the snapshot; left as it is", err=True)
    if not checked.changed:
        click.echo("nothing to restore: every quota of the snapshot is as it is now")
        return
    _say_unrecorded(log)
    if not yes:
        click.confirm(f"Restore {len(checked.changed)} quota(s) of {cluster.ClusterName} to {to_file}?", abort=True)
    if lease is not None:
        lease.renew()
    run = state.RunRef(cluster_name=cluster.ClusterName, execution_name=name, execution_arn="",
                       trigger={"command": "rebalancer rollback"}, source="cli")
    # Versions as shown above: a quota edited after this point is left alone, not overwritten unseen.
    report = runs.restore_quotas(run, cluster.ClusterArn, target.quotas, current, store=log.store,
                                 writer=_writer(live, poll_interval, timeout),
                                 who=_caller(live) if log.recorded else None, detail={"to": to_file})
    for line in report.lines():
        click.echo(line)
    if not report.succeeded:
        raise PermanentError(report.error or "restored in part: what is listed above as refused, conflict or "
                                             "failed was left as it is")
    click.echo("restored")


def _rollback_run(live: LiveSource, run_name: str, yes: bool, log: RunLog, poll_interval: float,
                  timeout: float, lease: Lease | None) -> None:
    """The controller's Rollback step for one stored run, from the command line."""
    from rebalancer.app.workflow import run_plan, runs, state

    run_name = resolve_run(run_name, (str(r.get("execution", "")) for r in log.store.audit.records(live.cluster)),
                           live.cluster, option="--run")
    run = state.RunRef(cluster_name=live.cluster, execution_name=run_name, execution_arn="", source="cli")
    if log.store.artifacts.get(run_name, "PLAN") is None:
        raise InvalidInput(f"no plan stored for run {run_name} (see `rebalancer history`)", field="--run",
                           value=run_name)
    plan, snap = state.load_plan(log.store.artifacts, run), run_plan.load_snapshot(log.store.artifacts, run)
    if plan.cluster_name != live.cluster:
        raise InvalidInput(f"run {run_name} is of cluster {plan.cluster_name}, not {live.cluster}", field="--run",
                           value=run_name)
    done_at = [r["at"] for r in log.store.audit.records(live.cluster)
               if r.get("kind") == "rollback" and r.get("execution") == run_name and r.get("outcome") == "restored"]
    if done_at:
        # A second rollback would find our own restore as the quotas' newest version and call it someone else's.
        raise InvalidInput(f"run {run_name} was rolled back already (at {done_at[-1]}): nothing left to undo",
                           field="--run", value=run_name)
    report, scheduler = runs.load_report(log.store.artifacts, run), runs.load_scheduler(log.store.artifacts, run)
    if report is None and scheduler is None:
        # The controller's Rollback would then restore every quota the plan touched; from here, with nothing
        # saying the run wrote anything, that could overwrite later changes.
        raise InvalidInput(f"run {run_name} stored no apply: it wrote nothing to undo", field="--run",
                           value=run_name)
    before = {q.ComputeQuotaId: q for q in snap.quotas}
    for o in report.outcomes if report else ():
        if o.result == "applied" and o.quota_id:
            was = before.get(o.quota_id)
            back = f"back to {quota_summary(was)}" if was else "deleted (the run created it)"
            click.echo(f"{o.team}: {o.operation} v{o.version} → {back}")
    if scheduler is not None and scheduler.config_id and (scheduler.result == "applied" or scheduler.version):
        back = "deleted (the run created it)" if scheduler.operation == "CreateClusterSchedulerConfig" else \
            "back to the run's snapshot"
        click.echo(f"(cluster): scheduler config {scheduler.config_id} v{scheduler.version} → {back}")
    if not yes:
        click.confirm(f"Undo what run {run_name} wrote to {live.cluster}?", abort=True)
    if lease is not None:
        lease.renew()
    done = runs.rollback_run(run, None, store=log.store, writer=_writer(live, poll_interval, timeout),
                             configs=_configs(live, poll_interval, timeout))
    for line in done.lines():
        click.echo(line)
    if not done.ok:
        raise PermanentError(done.undo.error or "rollback incomplete: what is listed above as refused, conflict or "
                                                "failed was left as it is")
    click.echo("restored")
