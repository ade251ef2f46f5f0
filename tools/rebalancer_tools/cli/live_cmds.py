"""Commands on a live cluster (real AWS with your credentials, or the emulator via AWS_ENDPOINT_URL):
`snapshot`, `apply` and `rollback`; `plan --cluster` uses the same options. Read-only commands make only
Describe / List / Get calls. AWS errors are one line (the call, the resource, what AWS said) unless --debug."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import click
from rich.console import Console

from rebalancer.adapters.outcomes import ApplyReport
from rebalancer.catalog import spec
from rebalancer.errors import InvalidInput, RebalancerError, UnknownInstanceType
from rebalancer.loading import load_model_file
from rebalancer.models import ComputeQuota, Snapshot
from rebalancer.plan import CLUSTER
from rebalancer.planning import held, holdings, make_plan
from rebalancer.policy import Policy, PoolKey
from rebalancer_tools.render import render_plan

if TYPE_CHECKING:  # the adapters (boto3, kubernetes) are imported only by the commands that run them
    from rebalancer.adapters.aws import AwsClients
    from rebalancer.adapters.collect import Collected
    from rebalancer.adapters.quota_writer import QuotaWriter
    from rebalancer.app.store import Store

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

    def clients(self) -> AwsClients:
        from rebalancer.adapters.aws import AwsClients

        return AwsClients(region=self.region, profile=self.profile, retry_mode=self.retry_mode)

    def collect(self, now: datetime) -> Collected:
        from rebalancer.adapters.collect import KubeAccess, collect_snapshot

        window = timedelta(minutes=self.metrics_window_minutes) if self.metrics_window_minutes else None
        kube = KubeAccess(mode=self.kube_mode, context=self.kube_context, url=self.kube_url)
        collected = collect_snapshot(self.cluster, self.clients(), now=now, kube=kube, metrics_window=window)
        for w in collected.warnings:
            click.echo(f"warning: {w}", err=True)
        return collected


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
                kube_url=kube_url, metrics_window_minutes=metrics_window or None,
                retry_mode=cast(Literal["standard", "adaptive"], retry_mode))
            return func(*args, live=live, **kwargs)

        options = [
            click.option("--cluster", required=required, help="HyperPod cluster name (reads it live)."),
            click.option("--region", help="AWS region (default: your AWS configuration)."),
            click.option("--profile", help="AWS profile."),
            click.option("--kube-context", help="Read Kueue through this kubeconfig context instead of EKS auth."),
            click.option("--kube-url", help="Read Kueue from this API server URL without auth (local fake)."),
            click.option("--no-kube", is_flag=True, help="Do not read Kueue: every team's demand is zero."),
            click.option("--metrics-window", type=click.IntRange(0), default=60, show_default=True,
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
    from rebalancer.adapters.quota_writer import Poller, QuotaWriter

    return QuotaWriter(live.clients().client("sagemaker"), Poller(interval=poll_interval, timeout=timeout))


poll_options = [
    click.option("--poll-interval", type=click.FloatRange(0.1), default=5.0, show_default=True,
                 help="Seconds between status reads while a quota is Updating."),
    click.option("--timeout", type=click.FloatRange(1), default=900.0, show_default=True,
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
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True),
              help="Write the snapshot here instead of stdout.")
def snapshot(live: LiveSource, output: str | None) -> None:
    """Read a cluster's capacity, quotas, Kueue demand and utilization into a snapshot (JSON). Read-only."""
    text = json.dumps(live.collect(_now()).snapshot.model_dump(mode="json", exclude_none=True), indent=2)
    if output:
        Path(output).write_text(text + "\n")
        click.echo(f"snapshot of {live.cluster} written to {output}", err=True)
    else:
        click.echo(text)


@click.command()
@live_options(required=True)
@click.option("--policy", "policy_file", required=True, type=click.Path(dir_okay=False), help="Policy file.")
@click.option("--yes", "-y", is_flag=True, help="Apply without asking.")
@click.option("--save-snapshot", type=click.Path(dir_okay=False, writable=True),
              help="Also write the snapshot the plan was made from (the state to roll back to).")
@audit_options
@with_poll_options
def apply(live: LiveSource, policy_file: str, yes: bool, save_snapshot: str | None, table: str | None,
          stack: str | None, poll_interval: float, timeout: float) -> None:
    """Plan on the live cluster, show the plan, ask, apply (decreases first), verify and print each outcome.
    On a failure after the first write, the quotas written are restored. Given the controller's audit table, the
    apply and the versions it left are recorded there (the controller's next run takes them as its own)."""
    policy = load_model_file(Policy, policy_file)
    audit = _audit_store(live, table, stack)  # a wrong table or stack fails here, before any read or write
    now = _now()
    snap = live.collect(now).snapshot
    if save_snapshot:
        Path(save_snapshot).write_text(snap.model_dump_json(indent=2, exclude_none=True) + "\n")
    plan = make_plan(snap, policy, now)
    render_plan(plan, Console())
    if plan.is_empty:
        click.echo("nothing to apply")
        return
    if plan.mode == "dry-run":
        click.echo("the policy's mode is dry-run: nothing applied")
        return
    if not yes:
        click.confirm(f"Apply {len(plan.requests) + len(plan.scheduler_requests)} request(s) to "
                      f"{snap.cluster.ClusterName}?", abort=True)
    from rebalancer.adapters.quota_writer import raise_for_report
    from rebalancer.app.steps import by_team

    name = snap.cluster.ClusterName
    before, after = by_team(plan.changes, "before"), by_team(plan.changes, "after")
    versions: dict[str, int] = {}
    scheduler_lines: list[str] = []
    if plan.scheduler_requests:
        from rebalancer.adapters.scheduler_config import SchedulerConfigClient

        configs = SchedulerConfigClient(live.clients().client("sagemaker"), _writer(live, poll_interval,
                                                                                    timeout).poller)
        for r in plan.scheduler_requests:
            try:
                done = configs.apply(r)
            except RebalancerError as e:
                if audit is not None:
                    _record(audit, live, name, "apply", outcome="failed", before=before, after=after,
                            detail={"scheduler": scheduler_lines, "outcomes": [], "error": str(e)},
                            versions=versions)
                raise
            versions[CLUSTER] = done.ClusterSchedulerConfigVersion
            scheduler_lines.append(f"{r.operation}: scheduler config {done.ClusterSchedulerConfigId} "
                                   f"v{done.ClusterSchedulerConfigVersion} {done.Status}")
            click.echo(scheduler_lines[-1])
    report = _writer(live, poll_interval, timeout).apply(snap.cluster.ClusterArn, plan.requests, snap.quotas)
    for line in report.lines():
        click.echo(line)
    if audit is not None:
        versions.update(_versions_left(report))
        outcome = "applied" if report.succeeded else "rolled-back" if report.rolled_back else "failed"
        detail: dict[str, Any] = {"outcomes": report.lines(), "versions": versions}
        if scheduler_lines:
            detail["scheduler"] = scheduler_lines
        _record(audit, live, name, "apply", outcome=outcome, before=before, after=after, detail=detail,
                versions=versions)
    raise_for_report(report)
    click.echo(f"applied {len(report.outcomes)} request(s); every quota settled")


def _audit_store(live: LiveSource, table: str | None, stack: str | None) -> Store | None:
    """The controller's audit table when one is named (--table / --stack / $REBALANCER_TABLE), else None."""
    if not table and not stack:
        return None
    from rebalancer.adapters.aws import aws_call
    from rebalancer.app.store import Store
    from rebalancer_tools.cli.history_cmd import audit_table_name

    session = live.clients().session
    store = Store(audit_table_name(session, table, stack), resource=session.resource("dynamodb"))
    with aws_call("DescribeTable", f"audit table {store.table_name}"):
        store.table.load()
    return store


def _record(store: Store, live: LiveSource, cluster_name: str, kind: str, *, outcome: str, before: Any,
            after: Any, detail: dict[str, Any], versions: dict[str, int] | None = None) -> None:
    """One `kind` record in the audit log, shaped like the controller's own, so `rebalancer history` shows it;
    with `versions` (per team, the version our writes left), the controller's next plan does not take those
    quotas for console edits."""
    from rebalancer.adapters.aws import aws_call

    with aws_call("GetCallerIdentity", "the caller"):
        who = str(live.clients().client("sts").get_caller_identity()["Arn"])
    execution = f"{cluster_name}-cli{store.now():%Y%m%dT%H%M%S}"
    with aws_call("PutItem", f"audit table {store.table_name}"):
        store.audit(cluster_name, execution, kind, outcome=outcome, who=who, before=before, after=after,
                    detail={"source": "cli", **detail})
        if versions:
            store.record_versions(cluster_name, versions, execution)


def _record_rollback(store: Store, live: LiveSource, cluster_name: str, to_file: str, report: ApplyReport,
                     before: list[ComputeQuota], after: list[ComputeQuota]) -> None:
    _record(store, live, cluster_name, "rollback", outcome="restored" if report.succeeded else "incomplete",
            before={q.team: holdings(q) for q in before}, after={q.team: holdings(q) for q in after},
            detail={"to": to_file, "outcomes": report.lines()}, versions=_versions_left(report))


def _versions_left(report: ApplyReport) -> dict[str, int]:
    """team → the version our last write of its quota left: the apply's, or the rollback's when it undid it."""
    from rebalancer.app.steps import written_versions

    out = written_versions(report)
    out.update(written_versions(ApplyReport(cluster_arn=report.cluster_arn, succeeded=report.succeeded,
                                            outcomes=report.rollback)))
    return out


@click.command()
@live_options(required=True)
@click.option("--to", "to_file", required=True, type=click.Path(dir_okay=False),
              help="Snapshot JSON holding the quotas to restore (from `rebalancer snapshot`).")
@click.option("--yes", "-y", is_flag=True, help="Roll back without asking.")
@audit_options
@with_poll_options
def rollback(live: LiveSource, to_file: str, yes: bool, table: str | None, stack: str | None,
             poll_interval: float, timeout: float) -> None:
    """Restore the quotas of a snapshot, with fresh versions, decreases first. Given the controller's audit
    table, the rollback is recorded there and shows in `rebalancer history`."""
    from rebalancer.adapters.quota_writer import raise_for_report
    from rebalancer.adapters.sagemaker import SageMakerReader

    target = load_model_file(Snapshot, to_file)
    audit = _audit_store(live, table, stack)  # a wrong table or stack fails here, before any write
    sm = SageMakerReader(live.clients().client("sagemaker"))
    cluster = sm.cluster(live.cluster)
    if target.cluster.ClusterArn != cluster.ClusterArn:
        raise InvalidInput(f"the snapshot is of {target.cluster.ClusterArn}, not {cluster.ClusterArn}",
                           source=to_file, field="cluster.ClusterArn", value=target.cluster.ClusterArn)
    current = {q.ComputeQuotaId: q for q in sm.quotas(cluster.ClusterArn)}
    wanted = {q.ComputeQuotaId for q in target.quotas}
    for q in target.quotas:
        now_q = current.get(q.ComputeQuotaId)
        now_text = quota_summary(now_q) + f" (v{now_q.ComputeQuotaVersion})" if now_q else "gone"
        click.echo(f"{q.team}: {now_text} → {quota_summary(q)}")
    for qid, q in current.items():
        if qid not in wanted:
            click.echo(f"warning: quota {q.Name} of team {q.team} is not in the snapshot; left as it is", err=True)
    if not yes:
        click.confirm(f"Restore {len(target.quotas)} quota(s) of {cluster.ClusterName} to {to_file}?", abort=True)
    # Versions as shown above: a quota edited after this point is left alone, not overwritten unseen.
    shown = {qid: q.ComputeQuotaVersion for qid, q in current.items()}
    report = _writer(live, poll_interval, timeout).rollback(cluster.ClusterArn, target.quotas,
                                                            expected_versions=shown)
    for line in report.lines():
        click.echo(line)
    if audit is not None:
        _record_rollback(audit, live, cluster.ClusterName, to_file, report,
                         before=[current[q.ComputeQuotaId] for q in target.quotas if q.ComputeQuotaId in current],
                         after=list(target.quotas))
    raise_for_report(report)
    click.echo("restored")
