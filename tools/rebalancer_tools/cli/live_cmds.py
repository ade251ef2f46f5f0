"""Commands on a live cluster (real AWS with your credentials, or the emulator via AWS_ENDPOINT_URL):
`snapshot`, `apply` and `rollback`; `plan --cluster` uses the same options. Read-only commands make only
Describe / List / Get calls. AWS errors are one line (the call, the resource, what AWS said) unless --debug."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import click

from rebalancer.adapters.sagemaker.outcomes import ApplyReport
from rebalancer.catalog.specs import spec
from rebalancer.domain.policy import Policy
from rebalancer.domain.pools import PoolKey, held
from rebalancer.domain.quotas import ComputeQuota
from rebalancer.domain.snapshot import Snapshot
from rebalancer.errors import InvalidInput, PermanentError, RebalancerError, UnknownInstanceType
from rebalancer.parsing.loading import load_model_file
from rebalancer_tools.cli.output import console
from rebalancer_tools.cli.params import InputFile, Number, OutputFile, Whole, write_atomically
from rebalancer_tools.cli.run_ids import resolve_run
from rebalancer_tools.cli.run_log import NO_TABLE_WARNING, RunLog, cli_execution, memory_log, table_log
from rebalancer_tools.render import render_plan

if TYPE_CHECKING:  # the adapters (boto3, kubernetes) are imported only by the commands that run them
    from rebalancer.adapters.aws import AwsClients
    from rebalancer.adapters.collect import Collected
    from rebalancer.adapters.sagemaker.quota_writer import QuotaWriter
    from rebalancer.adapters.sagemaker.scheduler_config import SchedulerConfigClient
    from rebalancer.app.workflow.state import RunRef

F = TypeVar("F", bound=Callable[..., Any])
KubeMode = Literal["eks", "context", "url", "none"]


@dataclass(frozen=True)
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
            click.option("--profile", help="AWS profile."),
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


@click.command()
@live_options(required=True)
@click.option("--output", "-o", type=OutputFile(),
              help="Write the snapshot here instead of stdout.")
def snapshot(live: LiveSource, output: str | None) -> None:
    """Read a cluster's capacity, quotas, Kueue demand and utilization into a snapshot (JSON). Read-only."""
    text = json.dumps(live.collect(_now()).snapshot.model_dump(mode="json", exclude_none=True), indent=2)
    if output:
        write_atomically(output, text + "\n")
        click.echo(f"snapshot of {live.cluster} written to {output}", err=True)
    else:
        click.echo(text)


@click.command()
@live_options(required=True)
@click.option("--policy", "policy_file", required=True, type=InputFile(), help="Policy file.")
@click.option("--yes", "-y", is_flag=True, help="Apply without asking.")
@click.option("--save-snapshot", type=OutputFile(),
              help="Also write the snapshot the plan was made from (the state to roll back to).")
@audit_options
@with_poll_options
def apply(live: LiveSource, policy_file: str, yes: bool, save_snapshot: str | None, table: str | None,
          stack: str | None, poll_interval: float, timeout: float) -> None:
    """Plan on the live cluster, show the plan, ask, apply (the scheduler config first, then the quotas,
    decreases first), verify and print each outcome. On a failure after the first write, what this run wrote is
    restored. The same use cases as the controller's run (rebalancer.app.workflow.runs): given its audit table, the plan
    takes the versions the controller's writes left for its own, and the run is recorded there like one of the
    controller's (plan, apply, rollback; the snapshot, for `history --snapshot-of`) with the versions it left."""
    from rebalancer.app.workflow import run_plan, runs, state

    policy = load_model_file(Policy, policy_file)
    log = _run_log(live, table, stack)  # a wrong table or stack fails here, before any read or write
    now = _now()
    snap = live.collect(now).snapshot
    if save_snapshot:
        write_atomically(save_snapshot, snap.model_dump_json(indent=2, exclude_none=True) + "\n")
    planned = run_plan.make_run_plan(snap, policy, now, store=log.store)
    if not log.recorded:
        click.echo(f"warning: {NO_TABLE_WARNING}", err=True)
    plan = planned.plan
    render_plan(plan, console())
    if plan.is_empty:
        click.echo("nothing to apply")
        return
    if plan.mode == "dry-run":
        click.echo("the policy's mode is dry-run: nothing applied")
        return
    if not yes:
        click.confirm(f"Apply {len(plan.requests) + len(plan.scheduler_requests)} request(s) to "
                      f"{snap.cluster.ClusterName}?", abort=True)
    run = state.RunRef(cluster_name=snap.cluster.ClusterName, execution_name=cli_execution(snap.cluster.ClusterName,
                                                                                           log.now()),
                      execution_arn="", trigger={"command": "rebalancer apply"}, source="cli")
    who = _caller(live) if log.recorded else None
    state.record_snapshot(log.store.artifacts, run, snap)
    run_plan.record_plan(log.store, run, planned, who=who)
    writer, configs = _writer(live, poll_interval, timeout), _configs(live, poll_interval, timeout)
    try:
        done = runs.apply_run(run, store=log.store, writer=writer, configs=configs, who=who)
    except RebalancerError as e:
        _roll_back_failed(run, e, log=log, writer=writer, configs=configs)
        raise
    for line in done.lines():
        click.echo(line)
    click.echo(f"applied {len(done.report.outcomes)} request(s); every quota settled")


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


def _run_log(live: LiveSource, table: str | None, stack: str | None) -> RunLog:
    """The controller's table when one is named (--table / --stack / $REBALANCER_TABLE), checked to exist; else
    memory (nothing recorded)."""
    if not table and not stack:
        return memory_log()
    from rebalancer.adapters.aws import aws_call
    from rebalancer.adapters.dynamodb.store import Store
    from rebalancer_tools.cli.history_cmd import audit_table_name

    session = live.clients().session
    store = Store(audit_table_name(session, table, stack), resource=session.resource("dynamodb"))
    with aws_call("DescribeTable", f"audit table {store.table_name}"):
        store.table.table.load()
    return table_log(store)


def _caller(live: LiveSource) -> str:
    """Who runs the command, for the audit records."""
    from rebalancer.adapters.aws import aws_call

    with aws_call("GetCallerIdentity", "the caller"):
        return str(live.clients().client("sts").get_caller_identity()["Arn"])


@click.command()
@live_options(required=True)
@click.option("--to", "to_file", type=InputFile(),
              help="Snapshot JSON holding the quotas to restore (from `rebalancer snapshot`).")
@click.option("--run", "run_name", metavar="RUN",
              help="Or undo what run RUN wrote (a controller run or a CLI apply, as `rebalancer history` names "
                   "it; needs the audit table), as the controller's Rollback step: its quotas and its scheduler "
                   "config, each left alone if edited after the run's write.")
@click.option("--yes", "-y", is_flag=True, help="Roll back without asking.")
@click.option("--allow-over-capacity", is_flag=True,
              help="With --to: restore even when the restored quotas sum above today's healthy capacity (warned).")
@audit_options
@with_poll_options
def rollback(live: LiveSource, to_file: str | None, run_name: str | None, yes: bool, allow_over_capacity: bool,
             table: str | None, stack: str | None, poll_interval: float, timeout: float) -> None:
    """Restore the quotas of a snapshot (--to), with fresh versions, decreases first; or undo what one run wrote
    (--run). Given the controller's audit table, the rollback is recorded there and shows in `rebalancer
    history`."""
    if (to_file is None) == (run_name is None):
        raise InvalidInput("give --to FILE (a snapshot to restore) or --run RUN (a run to undo)", field="--to")
    log = _run_log(live, table, stack)  # a wrong table or stack fails here, before any write
    if run_name is not None:
        _rollback_run(live, run_name, yes, log, poll_interval, timeout)
    else:
        assert to_file is not None
        _restore_snapshot(live, to_file, yes, allow_over_capacity, log, poll_interval, timeout)


def _restore_snapshot(live: LiveSource, to_file: str, yes: bool, allow_over_capacity: bool, log: RunLog,
                      poll_interval: float, timeout: float) -> None:
    from rebalancer.adapters.sagemaker.cluster import SageMakerReader
    from rebalancer.adapters.sagemaker.quota_writer import raise_for_report
    from rebalancer.app.workflow import restore, runs, state
    from rebalancer.domain.snapshot import HEALTHY_NODE_STATUS

    target = load_model_file(Snapshot, to_file)
    sm = SageMakerReader(live.clients().client("sagemaker"))
    cluster = sm.cluster(live.cluster)
    if target.cluster.ClusterArn != cluster.ClusterArn:
        raise InvalidInput(f"the snapshot is of {target.cluster.ClusterArn}, not {cluster.ClusterArn}",
                           source=to_file, field="cluster.ClusterArn", value=target.cluster.ClusterArn)
    current = {q.ComputeQuotaId: q for q in sm.quotas(cluster.ClusterArn)}
    restore.check_ownership(cluster.ClusterArn, target.quotas, current, to_file)
    healthy = Counter(n.InstanceType for n in sm.nodes(cluster.ClusterName)
                      if n.InstanceStatus.Status == HEALTHY_NODE_STATUS)
    checked = restore.plan_restore(target.quotas, current, healthy)
    for line in checked.over_capacity:
        click.echo(f"warning: above healthy capacity: {line}", err=True)
    if checked.over_capacity and not allow_over_capacity:
        raise InvalidInput("the restored quotas would sum above today's healthy capacity (see the warnings); give "
                           "--allow-over-capacity to restore them anyway", source=to_file, field="quotas")
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
    if not yes:
        click.confirm(f"Restore {len(checked.changed)} quota(s) of {cluster.ClusterName} to {to_file}?", abort=True)
    run = state.RunRef(cluster_name=cluster.ClusterName, execution_name=cli_execution(cluster.ClusterName,
                                                                                     log.now()),
                      execution_arn="", trigger={"command": "rebalancer rollback"}, source="cli")
    # Versions as shown above: a quota edited after this point is left alone, not overwritten unseen.
    report = runs.restore_quotas(run, cluster.ClusterArn, target.quotas, current, store=log.store,
                                 writer=_writer(live, poll_interval, timeout),
                                 who=_caller(live) if log.recorded else None, detail={"to": to_file})
    for line in report.lines():
        click.echo(line)
    raise_for_report(report)
    click.echo("restored")


def _rollback_run(live: LiveSource, run_name: str, yes: bool, log: RunLog, poll_interval: float,
                  timeout: float) -> None:
    """The controller's Rollback step for one stored run, from the command line."""
    from rebalancer.app.workflow import run_plan, runs, state

    if not log.recorded:
        raise InvalidInput("--run needs the audit table (--table / --stack / $REBALANCER_TABLE)", field="--run",
                           value=run_name)
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
    done = runs.rollback_run(run, None, store=log.store, writer=_writer(live, poll_interval, timeout),
                             configs=_configs(live, poll_interval, timeout))
    for line in done.lines():
        click.echo(line)
    if not done.ok:
        raise PermanentError(done.undo.error or "rollback incomplete: what is listed above as conflict or failed "
                                                "was left as it is")
    click.echo("restored")
