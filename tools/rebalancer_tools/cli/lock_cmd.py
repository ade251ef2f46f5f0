"""`rebalancer lock`: the cluster's lock as it stands (`lock show`), and breaking it (`lock break`): the one lock item
the controller's runs and the CLI's writers share (rebalancer.adapters.dynamodb.locks).

Breaking is for a lock nobody will let go of: an item edited by hand (which no run or command can take, and which
says so), or the lease of a command whose machine is gone and whose lease an admin will not wait out. It deletes the
item as it was shown, whoever holds it, after a confirmation (unless --yes), and records in the audit table who broke
whose lock and why (`history` lists it). A controller run whose lock is broken keeps running: breaking lets another
writer in beside it, so check first that it has ended (`rebalancer history`, or the Step Functions console)."""

from __future__ import annotations

from typing import Any

import click

from rebalancer.errors import PermanentError, RecordUnreadable
from rebalancer.parsing.text import printable
from rebalancer_tools.cli.history_cmd import open_store, reading, table_options
from rebalancer_tools.cli.identity import caller

KEY_FIELDS = ("pk", "sk")


def described(store: Any, cluster: str) -> str:
    """One line: who holds the lock and until when, or why it cannot be read."""
    try:
        lock = store.locks.holding(cluster)
    except RecordUnreadable as e:
        return f"unreadable: {e}"
    if lock is None:
        return "free"
    who = f"a command of {lock.by}" if lock.by else f"controller run {lock.run_arn or lock.holder}"
    until = f", until {lock.expires_at:%Y-%m-%d %H:%M:%S} UTC" if lock.expires_at else ""
    expired = " (expired: the next writer takes it)" if lock.expires_at and lock.expires_at <= store.now() else ""
    followup = f"; a follow-up run is owed ({lock.followup})" if lock.followup else ""
    return (f"held by {lock.holder} ({who}) since {lock.acquired_at:%Y-%m-%d %H:%M:%S} UTC{until}{expired}"
            f"{followup}")


@click.group()
def lock() -> None:
    """The cluster's lock, shared by the controller's runs and the CLI's apply and rollback."""


@lock.command("show")
@table_options
def show(cluster: str, table: str | None, stack: str | None, region: str | None, profile: str | None) -> None:
    """Who holds the cluster's lock, since when and until when."""
    store = open_store(table, stack, region, profile)
    with reading(store.table_name):
        item = store.locks.raw(cluster)
        line = "free" if item is None else described(store, cluster)
    click.echo(printable(f"lock of {cluster}: {line}"))


@lock.command("break")
@table_options
@click.option("--reason", required=True, help="Why (recorded in the audit table with your AWS identity).")
@click.option("--yes", "-y", is_flag=True, help="Break it without asking.")
def break_(cluster: str, table: str | None, stack: str | None, region: str | None, profile: str | None,
           reason: str, yes: bool) -> None:
    """Delete the cluster's lock, whoever holds it (a run, a command's lease, an item edited by hand); audited."""
    from rebalancer.adapters.aws import AwsClients
    from rebalancer.app.workflow.audit import lock_broken

    if not reason.strip():
        raise PermanentError("--reason: say why the lock is broken (it is recorded)")
    store = open_store(table, stack, region, profile)
    with reading(store.table_name):
        item = store.locks.raw(cluster)
        if item is None:
            click.echo(f"the lock of {cluster} is free: nothing to break")
            return
        line = described(store, cluster)
    click.echo(printable(f"lock of {cluster}: {line}"))
    if not yes:
        click.confirm("Break it? A writer still at work would then share the cluster with the next one", abort=True)
    who = caller(AwsClients(region=region, profile=profile)).arn
    with reading(store.table_name):
        if not store.locks.break_lock(cluster, item):
            raise PermanentError(f"the lock of {cluster} changed while you looked (it was taken, renewed or let go): "
                                 "nothing was broken; run the command again to see it as it is now")
        lock_broken(store.audit, cluster, who=who, reason=reason.strip(),
                    lock={k: _plain(v) for k, v in item.items() if k not in KEY_FIELDS})
    click.echo(printable(f"broken by {who} at {store.now():%Y-%m-%d %H:%M:%S} UTC: the lock of {cluster} "
                         f"({reason.strip()}); recorded in {store.table_name}"))


def _plain(value: Any) -> Any:
    """A DynamoDB value as JSON holds it (numbers come back as Decimal)."""
    from decimal import Decimal

    if isinstance(value, Decimal):
        return int(value) if value == int(value) else float(value)
    return value if isinstance(value, str | int | float | bool) or value is None else repr(value)
