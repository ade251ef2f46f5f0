"""`rebalancer reserve --cluster C --team T --pool TYPE --accelerators N --until ISO --reason TEXT`: a time-bounded
guarantee stored in the controller's table, checked against the cluster's capacity (read live, or `--snapshot` of the
same cluster) and the policy (`--policy`, the one the controller runs with). `--every "Mon-Fri 18:00-08:00" --tz
Europe/Berlin` makes its windows come back until `--until`, each checked; `--lead MINUTES` is how long before each
window its quota is raised (default: one run interval and 15 minutes to settle). `rebalancer reservations
--cluster C` lists them with each one's next window; `rebalancer reservations approve ID` approves one the policy's
thresholds held for an admin; `rebalancer reservations cancel ID [--occurrence DATE]` ends one, or one window of a
recurring one. Each is recorded in the audit log with the caller's AWS identity (STS GetCallerIdentity); the use
cases are rebalancer.app.reservations'.

What the table holds is printed as data: every stored text (a reason, a team, who asked) is shown as text, never
read as markup, and its control characters as escapes."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, date, datetime
from typing import Any

import click

from rebalancer.domain.clock import time_zone
from rebalancer.domain.reservation import LEAD_MAX_MINUTES, Reservation, Window
from rebalancer.errors import InvalidInput
from rebalancer.parsing.text import printable, short
from rebalancer_tools.cli.history_cmd import open_store, table_options
from rebalancer_tools.cli.identity import caller
from rebalancer_tools.cli.output import emit, format_option
from rebalancer_tools.cli.params import InputFile, Whole, profile_option
from rebalancer_tools.reports.tables import Column, Listing

REASON_MAX = 200


def parse_time(value: str, option: str) -> datetime:
    """An ISO-8601 time that names its zone (`2026-12-04T18:00Z`, `…+01:00`)."""
    try:
        at = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"not an ISO-8601 time (got {short(value)})", field=option, value=value) from None
    if at.tzinfo is None:
        raise InvalidInput(f"{printable(value)} names no time zone: write it as {printable(value)}Z (UTC) or with an "
                           "offset like +01:00", field=option, value=value)
    try:
        return at.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00-01:00 and the like: no such instant in UTC
        raise InvalidInput(f"{short(value)} is outside the calendar", field=option, value=value) from None


def _snapshot(snapshot_file: str | None, cluster: str, region: str | None, profile: str | None, now: datetime) -> Any:
    from rebalancer.domain.snapshot import Snapshot
    from rebalancer.parsing.loading import load_model_file
    from rebalancer_tools.cli.live_cmds import LiveSource

    if snapshot_file is not None:
        return load_model_file(Snapshot, snapshot_file)
    return LiveSource(cluster=cluster, region=region, profile=profile, kube_mode="none",
                      metrics_window_minutes=None).collect(now).snapshot


def _when(w: Window, zone_name: str) -> str:
    zone = time_zone(zone_name)
    start, end = w.start.astimezone(zone), w.end.astimezone(zone)
    closes = f"{end:%H:%M}" if end.date() == start.date() else f"{end:%a %d %b %H:%M}"
    return f"{start:%a %d %b %H:%M} → {closes} {zone_name}"


def _line(r: Reservation, now: datetime) -> str:
    """One reservation as one line, its stored text shown as escapes where it is not plain."""
    upcoming = r.next_window(now)
    then = f"; next window {_when(upcoming, r.timezone)}" if r.recurring and upcoming else ""
    return printable(f"{r.reservation_id}: {r.team} {r.accelerators} x {r.pool} {r.schedule} ({r.reason}): "
                     f"{r.status}{then}")


@click.command()
@table_options
@click.option("--team", required=True, help="The team the accelerators are reserved for.")
@click.option("--pool", required=True, help="The accelerator instance type (ml.p5.48xlarge).")
@click.option("--accelerators", required=True, type=Whole(1, 1_000_000), help="How many accelerators.")
@click.option("--from", "start", help="Start, ISO-8601 with a zone (default: now).")
@click.option("--until", required=True, help="End (exclusive), ISO-8601 with a zone; at most 366 days ahead.")
@click.option("--every", help="Windows that come back until --until: DAYS HH:MM-HH:MM in --tz, e.g. "
                              "'Mon-Fri 18:00-08:00' (a window closing before it opens closes the next day).")
@click.option("--tz", "timezone", help="The time zone of --every's windows (default UTC), e.g. Europe/Berlin.")
@click.option("--lead", "lead_minutes", type=Whole(0, LEAD_MAX_MINUTES),
              help="Minutes before each window its quota is raised (default: the policy's run interval + 15).")
@click.option("--reason", required=True, help="Why: named in the plan's reasons and the messages.")
@click.option("--policy", "policy_file", required=True, type=InputFile(),
              help="The cluster's policy (caps, guarantees, approval thresholds).")
@click.option("--snapshot", "snapshot_file", type=InputFile(),
              help="Check capacity against this snapshot (of the same cluster) instead of reading the cluster.")
def reserve(cluster: str, table: str | None, stack: str | None, region: str | None, profile: str | None, team: str,
            pool: str, accelerators: int, start: str | None, until: str, every: str | None, timezone: str | None,
            lead_minutes: int | None, reason: str, policy_file: str, snapshot_file: str | None) -> None:
    """Reserve accelerators of one type for a team in a window (or in windows that come back); refused when it
    cannot fit."""
    from rebalancer.adapters.aws import AwsClients
    from rebalancer.app import reservations
    from rebalancer.domain.policy import Policy
    from rebalancer.parsing.loading import load_model_file
    from rebalancer.parsing.text import clean_text

    text = clean_text(reason, REASON_MAX)
    if not text:
        raise InvalidInput("give a reason", field="--reason", value=reason)
    if timezone is not None and every is None:
        raise InvalidInput("names the time zone of --every's windows: give --every too", field="--tz", value=timezone)
    ends = parse_time(until, "--until")
    store = open_store(table, stack, region, profile)
    now = store.now()
    begins = parse_time(start, "--from") if start else now
    policy = load_model_file(Policy, policy_file)
    snap = _snapshot(snapshot_file, cluster, region, profile, now)
    who = caller(AwsClients(region=region, profile=profile)).arn
    request = reservations.Request(cluster, team, pool, accelerators, begins, ends, text, every=every,
                                   timezone=timezone or "UTC", lead_minutes=lead_minutes)
    rec = reservations.reserve(store.reservations, store.audit, request, policy=policy, snapshot=snap, now=now,
                               new_id=lambda: f"r-{uuid.uuid4().hex[:8]}", who=who)
    click.echo(f"stored {_line(rec, now)}")
    if rec.lead_minutes:
        click.echo(f"its quota is raised {rec.lead_minutes} minutes before each window opens")
    why = reservations.needs_approval(policy, accelerators)
    if why:
        click.echo(f"needs approval by another admin than you ({why}): rebalancer reservations approve "
                   f"{rec.reservation_id} --cluster {printable(cluster)}")


@click.group(invoke_without_command=True)
@click.option("--cluster", help="HyperPod cluster name.")
@click.option("--table", envvar="REBALANCER_TABLE", help="The audit table (env REBALANCER_TABLE).")
@click.option("--stack", help="Or the SAM stack name: its TableName output is the table.")
@click.option("--region", help="AWS region (default: your AWS configuration).")
@profile_option()
@format_option()
@click.pass_context
def reservations(ctx: click.Context, cluster: str | None, table: str | None, stack: str | None, region: str | None,
                 profile: str | None, fmt: str) -> None:
    """The cluster's reservations and each one's next window (approve or cancel one with the subcommands)."""
    if ctx.invoked_subcommand is not None:
        return
    if cluster is None:
        raise InvalidInput("needs --cluster", field="--cluster")
    store = open_store(table, stack, region, profile)
    found = store.reservations.of_cluster(cluster)
    now = store.now()
    if fmt == "json":
        click.echo(json.dumps([_document(r, now) for r in found], indent=2))
        return
    if not found and fmt == "table":
        click.echo(f"no reservation for {printable(cluster)} in {store.table_name}")
        return
    emit(reservations_table(found, cluster, now), fmt)


def _document(r: Reservation, now: datetime) -> dict[str, Any]:
    upcoming = r.next_window(now) if r.status != "cancelled" else None
    shown = None if upcoming is None else {"start": upcoming.start.isoformat(), "end": upcoming.end.isoformat()}
    return {**r.model_dump(mode="json"), "next": shown}


def _state(r: Reservation, now: datetime) -> str:
    if r.status == "cancelled":
        return "-"
    if r.window_at(now) is not None:
        return "held"
    return "ahead" if r.next_window(now) is not None else "over"


def reservations_table(found: list[Reservation], cluster: str, now: datetime) -> Listing:
    """One row per reservation: its windows (a schedule for a recurring one) and the next of them."""
    def record(r: Reservation) -> dict[str, Any]:
        upcoming = r.next_window(now) if r.status != "cancelled" else None
        return {"id": printable(r.reservation_id), "team": printable(r.team), "pool": printable(r.pool),
                "accelerators": r.accelerators, "windows": printable(r.schedule),
                "next": _when(upcoming, r.timezone) if upcoming else "-", "status": r.status,
                "now": _state(r, now), "reason": printable(r.reason)}

    return Listing(
        title=f"reservations of {printable(cluster)}",
        columns=(Column("id", wrap=False), Column("team", wrap=False), Column("pool", wrap=False),
                 Column("accelerators", numeric=True), Column("windows"), Column("next window", key="next"),
                 Column("status", wrap=False), Column("now", wrap=False), Column("reason")),
        records=tuple(record(r) for r in found),
        fields=("id", "team", "pool", "accelerators", "windows", "next", "status", "now", "reason"))


def _decision_command(decision: str) -> click.Command:
    @table_options
    @click.argument("reservation_id")
    def command(reservation_id: str, cluster: str, table: str | None, stack: str | None, region: str | None,
                profile: str | None, occurrence: str | None = None) -> None:
        from rebalancer.adapters.aws import AwsClients
        from rebalancer.app import reservations as use_case

        rid = use_case.known(reservation_id.strip())
        store = open_store(table, stack, region, profile)
        who = caller(AwsClients(region=region, profile=profile)).arn
        if occurrence is not None:
            rec, window = use_case.cancel_occurrence(store.reservations, store.audit, cluster, rid,
                                                     _day(occurrence), who)
            click.echo(printable(f"cancelled by {who}: the window {_when(window, rec.timezone)} of "
                                 f"{_line(rec, store.now())}"))
            return
        rec = use_case.decide(store.reservations, store.audit, cluster, rid,
                              "approve" if decision == "approve" else "cancel", who)
        click.echo(f"{'approved' if decision == 'approve' else 'cancelled'} by {printable(who)}: "
                   f"{_line(rec, store.now())}")

    command.__doc__ = (f"{decision.capitalize()} a reservation (its id); recorded with your AWS identity."
                       + (" The next plan run honours it inside its windows." if decision == "approve" else
                          " The next plan run brings the team's quota back to the policy. With --occurrence, only "
                          "the window of a recurring reservation that opens on that day (in its time zone)."))
    if decision == "cancel":
        only = click.option("--occurrence", metavar="YYYY-MM-DD",
                            help="Cancel only the window opening on this day (the reservation's time zone).")
        command = only(command)
    return click.command(decision)(command)


def _day(value: str) -> date:
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInput(f"not a date YYYY-MM-DD (got {short(value)})", field="--occurrence", value=value) from None


reservations.add_command(_decision_command("approve"))
reservations.add_command(_decision_command("cancel"))
