"""`rebalancer history --cluster NAME`: what the deployed controller did to a cluster, from its audit table
(DynamoDB), oldest first. `--snapshot-of RUN -o FILE` writes the quotas a run started from, for
`rebalancer rollback --to FILE`, and with `--context-output CONTEXT` the planning context its plan was made with, for
`rebalancer plan --snapshot FILE --context CONTEXT` (the run's plan again, offline).
`rebalancer history export --cluster NAME --since 30d -o FILE` writes the runs' snapshots and the observe step's
demand samples as JSON lines, for `rebalancer backtest` and `recommend` offline.
Works against real AWS (your credentials) and the emulator (AWS_ENDPOINT_URL)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import click

from rebalancer.errors import InvalidInput, PermanentError, RebalancerError
from rebalancer.parsing.text import printable
from rebalancer_tools.cli.output import emit, format_option
from rebalancer_tools.cli.params import OutputFile, atomic_output, profile_option, write_atomically
from rebalancer_tools.reports.run_ids import resolve_run, short_run
from rebalancer_tools.reports.tables import Column, Listing, Record

TABLE_OUTPUT = "TableName"  # the SAM stack's output naming its table


def _changes(before: Any, after: Any, left: Any = None) -> str:
    """{team: {type: n}} before/after → 'research ml.p5.48xlarge 12→8; …'; a team a rollback `left` as it was:
    'research ml.p5.48xlarge left at 12'."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return ""
    left = left if isinstance(left, dict) else {}
    parts = []
    for team in sorted(set(before) | set(after)):
        b, a = before.get(team) or {}, after.get(team) or {}
        for pool in sorted(set(b) | set(a)):
            moved = (f"left at {_number(a.get(pool, 0))}" if team in left
                     else f"{_number(b.get(pool, 0))}→{_number(a.get(pool, 0))}")
            parts.append(printable(f"{team} {pool.removeprefix('ml.')} {moved}"))
    return "; ".join(parts)


def _nothing_written(detail: dict[str, Any]) -> str:
    """A run that wrote nothing: its why (declined at the prompt, refused without an approval)."""
    return printable(f"nothing written: {detail['why']}") if detail.get("written") == 0 and detail.get("why") else ""


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)


EVENT = "event#"  # a cluster event's record: its id is the event's, a UUID no option takes
EVENT_SHOWN = 8  # hex digits of it the table shows (CSV and JSON keep it whole)


def _run_cell(r: Record) -> str:
    """The run's id on its first row only; a cluster event's UUID cut to its first digits."""
    if not r["first"]:
        return ""
    run = str(r["run"])
    return run[:len(EVENT) + EVENT_SHOWN] if run.startswith(EVENT) else run


def history_table(records: list[dict[str, Any]], cluster: str) -> Listing:
    """One row per record; the run's id only on its first row, so the table reads as runs. Recorded text is shown,
    never acted on: no markup, and control or bidi characters as escapes."""
    rows = []
    previous = None
    for r in records:
        run = str(r.get("execution", ""))
        detail = r.get("detail")
        detail = detail if isinstance(detail, dict) else {}
        rows.append({"run": printable(short_run(run, cluster)), "at": printable(str(r.get("at", ""))),
                     "step": printable(str(r.get("kind", ""))), "outcome": printable(str(r.get("outcome", ""))),
                     "who": printable(r.get("who") or ""),
                     "changes": (_changes(r.get("before"), r.get("after"), detail.get("left"))
                                 or _nothing_written(detail)),
                     "first": run != previous})
        previous = run
    return Listing(
        title=f"history of {printable(cluster)} (times UTC)",
        columns=(Column("run", cell=_run_cell, wrap=False),
                 Column("at", cell=lambda r: str(r["at"])[11:19], wrap=False),
                 Column("step", wrap=False), Column("outcome", wrap=False),
                 Column("who / changes", cell=lambda r: "; ".join(x for x in (r["who"], r["changes"]) if x))),
        records=tuple(rows), fields=("run", "at", "step", "outcome", "who", "changes"))


def audit_table_name(session: Any, table: str | None, stack: str | None) -> str:
    """--table, else the TableName output of --stack (also used by `rollback` to record itself)."""
    if table:
        return table
    if not stack:
        raise InvalidInput("give --table NAME or --stack NAME (the SAM stack whose TableName output to read)",
                           field="--table")
    from botocore.exceptions import ClientError

    try:
        described = session.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]
    except ClientError as e:
        raise PermanentError(f"DescribeStacks {stack}: {e.response['Error'].get('Message', e)}") from None
    for output in described.get("Outputs", []):
        if output.get("OutputKey") == TABLE_OUTPUT:
            return str(output["OutputValue"])
    raise InvalidInput(f"stack {stack} has no {TABLE_OUTPUT} output", field="--stack", value=stack)


def open_store(table: str | None, stack: str | None, region: str | None, profile: str | None) -> Any:
    """The controller's table (rebalancer.adapters.dynamodb.store.Store) through the caller's AWS configuration."""
    from rebalancer.adapters.aws import AwsClients
    from rebalancer.adapters.dynamodb.store import Store

    session = AwsClients(region=region, profile=profile).session
    return Store(audit_table_name(session, table, stack), resource=session.resource("dynamodb"))


@contextmanager
def reading(table_name: str, what: str = "the table") -> Iterator[None]:
    """A DynamoDB refusal or a transport failure as one line naming the table, not a traceback."""
    from botocore.exceptions import BotoCoreError, ClientError

    from rebalancer.adapters.aws import credentials_problem
    from rebalancer.errors import CredentialsError

    try:
        yield
    except (ClientError, BotoCoreError) as e:
        problem = credentials_problem(e)
        if problem is not None:
            raise CredentialsError(problem) from None
        if isinstance(e, ClientError):
            err = e.response.get("Error", {})
            raise PermanentError(f"reading {what} {table_name}: {err.get('Code')}: {err.get('Message')}") from None
        raise PermanentError(f"reading {what} {table_name}: {e}") from None
    except CredentialsError:
        raise
    except RebalancerError as e:  # the table's reads say their kind (aws_call): kept, with this line's words
        if not isinstance(e.__cause__, ClientError):
            raise
        err = e.__cause__.response.get("Error", {})
        raise type(e)(f"reading {what} {table_name}: {err.get('Code')}: {err.get('Message')}") from None


SINCE = re.compile(r"([0-9]{1,18})([mhdw])")
UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(value: str, now: datetime) -> datetime:
    """`30d`, `12h`, `90m`, `2w` before now, or an ISO-8601 date or time (UTC when it names no zone)."""
    m = SINCE.fullmatch(value.strip())
    if m:
        try:
            return now - timedelta(**{UNITS[m.group(2)]: int(m.group(1))})
        except OverflowError:
            oldest = (now - datetime.min.replace(tzinfo=UTC)).days
            raise InvalidInput(f"goes back before the year 1: at most {oldest:,}d", field="--since",
                               value=value) from None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput("expected a duration like 30d, 12h, 90m, 2w or an ISO-8601 date",
                           field="--since", value=value) from None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def export_history(store: Any, cluster: str, since: datetime, now: datetime) -> Iterator[str]:
    """The runs' snapshots (from the audit log's runs) and the samples, from `since` on, as JSON lines."""
    from rebalancer_tools.backtest.history import Run, export_lines

    runs = []
    seen: set[str] = set()
    for record in store.audit.records(cluster):
        execution = str(record.get("execution", ""))
        if execution in seen or datetime.fromisoformat(str(record["at"])) < since:
            continue
        seen.add(execution)
        doc = store.artifacts.get(execution, "SNAPSHOT")
        if doc is None:  # a run that stopped before collect, or its artifacts expired
            continue
        run = Run.model_validate({"type": "run", "execution": execution, "at": doc["taken_at"], "snapshot": doc})
        runs.append(run)
    return export_lines(cluster, runs, store.samples.since(cluster, since), since=since, exported_at=now)


def table_options(f: Any) -> Any:
    """The options every command reading the controller's table takes (history, export, approvals)."""
    for option in reversed((
            click.option("--cluster", required=True, help="HyperPod cluster name."),
            click.option("--table", envvar="REBALANCER_TABLE", help="The audit table (env REBALANCER_TABLE)."),
            click.option("--stack", help="Or the SAM stack name: its TableName output is the table."),
            click.option("--region", help="AWS region (default: your AWS configuration)."),
            profile_option())):
        f = option(f)
    return f


@click.group(invoke_without_command=True)
@click.option("--cluster", help="HyperPod cluster name.")
@click.option("--table", envvar="REBALANCER_TABLE", help="The audit table (env REBALANCER_TABLE).")
@click.option("--stack", help="Or the SAM stack name: its TableName output is the table.")
@click.option("--region", help="AWS region (default: your AWS configuration).")
@profile_option()
@format_option()
@click.option("--json", "as_json", is_flag=True,
              help="Print the audit records as they are stored, as JSON lines (what --format json prints).")
@click.option("--snapshot-of", "snapshot_of", metavar="RUN",
              help="Write the snapshot run RUN started from (the quotas before its change) instead.")
@click.option("--output", "-o", type=OutputFile(),
              help="With --snapshot-of: the file to write (for `rebalancer rollback --to`).")
@click.option("--context-output", type=OutputFile(),
              help="With --snapshot-of: also write the planning context the run's plan was made with (for "
                   "`rebalancer plan --snapshot FILE --context CONTEXT`: the run's plan again, offline).")
@click.pass_context
def history(ctx: click.Context, cluster: str | None, table: str | None, stack: str | None, region: str | None,
            profile: str | None, fmt: str, as_json: bool, snapshot_of: str | None, output: str | None,
            context_output: str | None) -> None:
    """What the controller did to a cluster (triggers, plans, approvals, applies, rollbacks), oldest first."""
    if ctx.invoked_subcommand is not None:
        return
    from rebalancer.app.workflow import runs

    if not cluster:
        raise InvalidInput("give --cluster NAME", field="--cluster")
    if output and not snapshot_of:
        raise InvalidInput("--output needs --snapshot-of RUN", field="--output", value=output)
    if context_output and not snapshot_of:
        raise InvalidInput("--context-output needs --snapshot-of RUN", field="--context-output", value=context_output)
    store = open_store(table, stack, region, profile)
    with reading(store.table_name, "the audit table"):
        if snapshot_of:
            snapshot_of = resolve_run(snapshot_of, (str(r.get("execution", "")) for r in runs.history(store, cluster)),
                                      cluster, option="--snapshot-of")
            doc = runs.started_from(store, snapshot_of)
            if doc is None:
                raise InvalidInput(f"no snapshot stored for run {snapshot_of} (see `rebalancer history`)",
                                   field="--snapshot-of", value=snapshot_of)
            context = runs.planned_with(store, snapshot_of) if context_output else None
            if context_output and context is None:
                raise InvalidInput(f"run {snapshot_of} stored no planning context (it stopped before its plan, or "
                                   "was planned by a version that did not record it)", field="--context-output",
                                   value=snapshot_of)
            if context_output:
                write_atomically(context_output, json.dumps(context, indent=2) + "\n")
                click.echo(f"planning context of run {snapshot_of} written to {context_output}", err=True)
            text = json.dumps(doc, indent=2)
            if output:
                write_atomically(output, text + "\n")
                click.echo(f"snapshot of run {snapshot_of} written to {output}", err=True)
            else:
                click.echo(text)
            return
        records = runs.history(store, cluster)
    if as_json or fmt == "json":  # the stored records, richer than the table's columns
        for r in records:
            click.echo(json.dumps(r, sort_keys=True, default=str))
        return
    if not records and fmt == "table":
        click.echo(f"no history for {printable(cluster)} in {store.table_name}")
        return
    emit(history_table(records, cluster), fmt)


@history.command("export")
@table_options
@click.option("--since", default="30d", show_default=True,
              help="How far back: 30d, 12h, 90m, 2w, or an ISO-8601 date.")
@click.option("--output", "-o", required=True, type=OutputFile(),
              help="The JSON-lines file to write (for `rebalancer backtest --history`); gzip'd if it ends in .gz.")
def export(cluster: str, table: str | None, stack: str | None, region: str | None, profile: str | None,
           since: str, output: str) -> None:
    """Write the cluster's runs and demand samples as JSON lines, to backtest policies offline."""
    from rebalancer_tools.backtest.history import text_out

    now = datetime.now(UTC)
    start = parse_since(since, now)
    store = open_store(table, stack, region, profile)
    last = "{}"
    with reading(store.table_name), atomic_output(output, binary=True) as raw, \
            text_out(raw, gzipped=output.endswith(".gz")) as f:
        for last in export_history(store, cluster, start, now):
            f.write(last + "\n")
    end = json.loads(last)  # the end record counts what was written
    click.echo(f"{end.get('runs', 0)} runs and {end.get('samples', 0)} samples of {cluster} since "
               f"{start:%Y-%m-%d %H:%M} UTC written to {output}", err=True)
