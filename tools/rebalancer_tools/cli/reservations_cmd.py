"""`rebalancer reserve --cluster C --team T --pool TYPE --accelerators N --until ISO --reason TEXT`: a time-bounded
guarantee stored in the controller's table, checked against the cluster's capacity (read live, or `--snapshot`)
and the policy (`--policy`, the one the controller runs with). `rebalancer reservations --cluster C` lists them;
`rebalancer reservations approve ID` approves one the policy's thresholds held for an admin; `rebalancer
reservations cancel ID` ends one. Each is recorded in the audit log with the caller's AWS identity (STS
GetCallerIdentity); the use cases are rebalancer.app.reservations'."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import click

from rebalancer.domain.reservation import Reservation
from rebalancer.errors import InvalidInput
from rebalancer_tools.cli.history_cmd import open_store, table_options
from rebalancer_tools.cli.output import emit, format_option
from rebalancer_tools.cli.params import InputFile, Whole
from rebalancer_tools.tables import Column, Listing

REASON_MAX = 200


def parse_time(value: str, option: str) -> datetime:
    """An ISO-8601 time that names its zone (`2026-12-04T18:00Z`, `…+01:00`)."""
    try:
        at = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"not an ISO-8601 time (got {value!r})", field=option, value=value) from None
    if at.tzinfo is None:
        raise InvalidInput(f"{value} names no time zone: write it as {value}Z (UTC) or with an offset like +01:00",
                           field=option, value=value)
    return at.astimezone(UTC)


def caller(session: Any) -> str:
    from rebalancer.adapters.aws import aws_call

    with aws_call("sts:GetCallerIdentity", "the caller"):
        return str(session.client("sts").get_caller_identity()["Arn"])


def _snapshot(snapshot_file: str | None, cluster: str, region: str | None, profile: str | None, now: datetime) -> Any:
    from rebalancer.domain.snapshot import Snapshot
    from rebalancer.parsing.loading import load_model_file
    from rebalancer_tools.cli.live_cmds import LiveSource

    if snapshot_file is not None:
        return load_model_file(Snapshot, snapshot_file)
    return LiveSource(cluster=cluster, region=region, profile=profile, kube_mode="none",
                      metrics_window_minutes=None).collect(now).snapshot


def _line(r: Reservation) -> str:
    return (f"{r.reservation_id}: {r.team} {r.accelerators} x {r.pool} from {r.start:%Y-%m-%d %H:%M} until "
            f"{r.until:%Y-%m-%d %H:%M} UTC ({r.reason}): {r.status}")


@click.command()
@table_options
@click.option("--team", required=True, help="The team the accelerators are reserved for.")
@click.option("--pool", required=True, help="The accelerator instance type (ml.p5.48xlarge).")
@click.option("--accelerators", required=True, type=Whole(1, 1_000_000), help="How many accelerators.")
@click.option("--from", "start", help="Start, ISO-8601 with a zone (default: now).")
@click.option("--until", required=True, help="End (exclusive), ISO-8601 with a zone.")
@click.option("--reason", required=True, help="Why: named in the plan's reasons and the messages.")
@click.option("--policy", "policy_file", required=True, type=InputFile(),
              help="The cluster's policy (caps, guarantees, approval thresholds).")
@click.option("--snapshot", "snapshot_file", type=InputFile(),
              help="Check capacity against this snapshot instead of reading the cluster.")
def reserve(cluster: str, table: str | None, stack: str | None, region: str | None, profile: str | None, team: str,
            pool: str, accelerators: int, start: str | None, until: str, reason: str, policy_file: str,
            snapshot_file: str | None) -> None:
    """Reserve accelerators of one type for a team in a window; refused when it cannot fit."""
    import boto3

    from rebalancer.app import reservations
    from rebalancer.domain.policy import Policy
    from rebalancer.parsing.loading import load_model_file
    from rebalancer.parsing.text import clean_text

    text = clean_text(reason, REASON_MAX)
    if not text:
        raise InvalidInput("give a reason", field="--reason", value=reason)
    ends = parse_time(until, "--until")
    store = open_store(table, stack, region, profile)
    now = store.now()
    begins = parse_time(start, "--from") if start else now
    policy = load_model_file(Policy, policy_file)
    snap = _snapshot(snapshot_file, cluster, region, profile, now)
    who = caller(boto3.Session(region_name=region, profile_name=profile))
    request = reservations.Request(cluster, team, pool, accelerators, begins, ends, text)
    rec = reservations.reserve(store.reservations, store.audit, request, policy=policy, snapshot=snap, now=now,
                               new_id=lambda: f"r-{uuid.uuid4().hex[:8]}", who=who)
    click.echo(f"stored {_line(rec)}")
    why = reservations.needs_approval(policy, accelerators)
    if why:
        click.echo(f"needs approval ({why}): rebalancer reservations approve {rec.reservation_id} --cluster "
                   f"{cluster}")


@click.group(invoke_without_command=True)
@click.option("--cluster", help="HyperPod cluster name.")
@click.option("--table", envvar="REBALANCER_TABLE", help="The audit table (env REBALANCER_TABLE).")
@click.option("--stack", help="Or the SAM stack name: its TableName output is the table.")
@click.option("--region", help="AWS region (default: your AWS configuration).")
@click.option("--profile", help="AWS profile.")
@format_option()
@click.pass_context
def reservations(ctx: click.Context, cluster: str | None, table: str | None, stack: str | None, region: str | None,
                 profile: str | None, fmt: str) -> None:
    """The cluster's reservations (approve or cancel one with the subcommands)."""
    if ctx.invoked_subcommand is not None:
        return
    if cluster is None:
        raise InvalidInput("needs --cluster", field="--cluster")
    store = open_store(table, stack, region, profile)
    found = store.reservations.of_cluster(cluster)
    if fmt == "json":
        click.echo(json.dumps([r.model_dump(mode="json") for r in found], indent=2))
        return
    if not found and fmt == "table":
        click.echo(f"no reservation for {cluster} in {store.table_name}")
        return
    emit(reservations_table(found, cluster, store.now()), fmt)


def reservations_table(found: list[Reservation], cluster: str, now: datetime) -> Listing:
    def state(r: Reservation) -> str:
        return "-" if r.status == "cancelled" else "active" if r.active_at(now) else \
            "over" if now >= r.until else "ahead"

    return Listing(
        title=f"reservations of {cluster}",
        columns=(Column("id", wrap=False), Column("team", wrap=False), Column("pool", wrap=False),
                 Column("accelerators", numeric=True), Column("from (UTC)", key="from", wrap=False),
                 Column("until (UTC)", key="until", wrap=False), Column("status", wrap=False),
                 Column("now", wrap=False), Column("reason")),
        records=tuple({"id": r.reservation_id, "team": r.team, "pool": r.pool, "accelerators": r.accelerators,
                       "from": f"{r.start:%Y-%m-%d %H:%M}", "until": f"{r.until:%Y-%m-%d %H:%M}",
                       "status": r.status, "now": state(r), "reason": r.reason} for r in found),
        fields=("id", "team", "pool", "accelerators", "from", "until", "status", "now", "reason"))


def _decision_command(decision: str) -> click.Command:
    @table_options
    @click.argument("reservation_id")
    def command(reservation_id: str, cluster: str, table: str | None, stack: str | None, region: str | None,
                profile: str | None) -> None:
        import boto3

        from rebalancer.app import reservations as use_case

        store = open_store(table, stack, region, profile)
        who = caller(boto3.Session(region_name=region, profile_name=profile))
        rec = use_case.decide(store.reservations, store.audit, cluster, reservation_id.strip(),
                              "approve" if decision == "approve" else "cancel", who)
        click.echo(f"{'approved' if decision == 'approve' else 'cancelled'} by {who}: {_line(rec)}")

    command.__doc__ = (f"{decision.capitalize()} a reservation (its id); recorded with your AWS identity."
                       + (" The next plan run honours it inside its window." if decision == "approve" else
                          " The next plan run brings the team's quota back to the policy."))
    return click.command(decision)(command)


reservations.add_command(_decision_command("approve"))
reservations.add_command(_decision_command("cancel"))
