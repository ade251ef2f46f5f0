"""`rebalancer approvals list / approve / reject --cluster C`: the pending approvals of a cluster, decided from a
terminal through the same use case as the review page and Slack (rebalancer.app.approvals.decisions), recorded in
the audit log with the caller's AWS identity (STS GetCallerIdentity). An approval is named by its id or its run's
id as `history` shows it, or a unique prefix of either."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import click

from rebalancer.errors import InvalidInput
from rebalancer_tools.cli.history_cmd import open_store, table_options
from rebalancer_tools.cli.identity import caller
from rebalancer_tools.cli.output import emit, format_option
from rebalancer_tools.reports.run_ids import short_run
from rebalancer_tools.reports.tables import Column, Listing

APPROVAL_REQUESTED = "approval-requested"  # the audit record RequestApproval writes, with the approval's id


@dataclass(frozen=True, slots=True)
class Pending:
    approval_id: str
    execution: str
    decide_by: datetime
    moves: str
    reasons: tuple[str, ...]


def pending_approvals(store: Any, cluster: str, now: datetime) -> list[Pending]:
    """The cluster's approvals still waiting for a decision, oldest first (found through the audit log)."""
    from rebalancer.app.workflow.state import RunRef, load_plan
    from rebalancer.domain.plan import movement

    out = []
    seen: set[str] = set()
    for record in store.audit.records(cluster):
        approval_id = str((record.get("detail") or {}).get("approval_id") or "")
        if record.get("kind") != APPROVAL_REQUESTED or not approval_id or approval_id in seen:
            continue
        seen.add(approval_id)
        rec = store.approvals.get(approval_id)
        if rec is None or rec.status != "pending" or rec.decide_by <= now:
            continue
        execution = str(record["execution"])
        plan = load_plan(store.artifacts, RunRef(cluster_name=cluster, execution_name=execution,
                                                 execution_arn=rec.execution_arn))
        out.append(Pending(approval_id, execution, rec.decide_by, movement(plan.changes), plan.approval_reasons))
    return out


def resolve(given: str, pending: list[Pending], cluster: str) -> Pending:
    text = given.strip()
    exact = [p for p in pending if text in (p.approval_id, p.execution, short_run(p.execution, cluster))]
    found = exact or [p for p in pending if p.approval_id.startswith(text)
                      or short_run(p.execution, cluster).startswith(text) or p.execution.startswith(text)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise InvalidInput(f"no pending approval of {cluster} is {text!r} (see `rebalancer approvals list`)",
                           field="APPROVAL", value=text)
    raise InvalidInput(f"{text!r} names {len(found)} pending approvals of {cluster} "
                       f"({', '.join(p.approval_id[:12] for p in found)}): type more of the id",
                       field="APPROVAL", value=text)


@click.group()
def approvals() -> None:
    """Pending approvals: list them, approve or reject one (as the review page and Slack do)."""


def approvals_table(found: list[Pending], cluster: str) -> Listing:
    return Listing(
        title=f"pending approvals of {cluster}",
        columns=(Column("approval", cell=lambda r: str(r["approval_id"])[:12], wrap=False),
                 Column("run", wrap=False), Column("decide by (UTC)", cell=lambda r: r["decide_by"][:16].replace(
                     "T", " "), wrap=False),
                 Column("moves", key="moves"), Column("why it asks", key="reasons")),
        records=tuple({"approval_id": p.approval_id, "run": short_run(p.execution, cluster),
                       "decide_by": p.decide_by.isoformat(), "moves": p.moves, "reasons": list(p.reasons)}
                      for p in found), fields=("approval_id", "run", "decide_by", "moves", "reasons"))


@approvals.command("list")
@table_options
@format_option()
def list_(cluster: str, table: str | None, stack: str | None, region: str | None, profile: str | None,
          fmt: str) -> None:
    """The approvals still waiting for a decision, with what each plan moves and why it asks."""
    store = open_store(table, stack, region, profile)
    found = pending_approvals(store, cluster, store.now())
    listing = approvals_table(found, cluster)
    if fmt == "json":  # one object a line, as before
        for record in listing.records:
            click.echo(json.dumps(dict(record)))
        return
    if not found and fmt == "table":
        click.echo(f"no pending approval for {cluster} in {store.table_name}")
        return
    emit(listing, fmt)


def _decide(decision: str, given: str, cluster: str, table: str | None, stack: str | None, region: str | None,
            profile: str | None, comment: str | None, yes: bool) -> None:
    from rebalancer.adapters.aws import AwsClients
    from rebalancer.adapters.stepfunctions import TaskTokens
    from rebalancer.app.approvals.decisions import Approvals
    from rebalancer.app.approvals.signing import LinkSigner

    store = open_store(table, stack, region, profile)
    chosen = resolve(given, pending_approvals(store, cluster, store.now()), cluster)
    clients = AwsClients(region=region, profile=profile)
    session = clients.session
    me = caller(clients)
    who = me.arn
    click.echo(f"run {short_run(chosen.execution, cluster)} of {cluster}: moves {chosen.moves}")
    for reason in chosen.reasons:
        click.echo(f"  needs approval: {reason}")
    if not yes:
        click.confirm(f"{decision.capitalize()} it as {who}?", abort=True)
    # A decision signs no link: the signer is never used by `decide`.
    use_case = Approvals(store=store, tasks=TaskTokens(session.client("stepfunctions")), signer=LinkSigner(b""),
                         channels=[], clock=store.now)
    # A decision already taken, or a run that no longer waits, raises its kind (errors.py): one line, exit 2.
    click.echo(use_case.decide(chosen.approval_id, "approve" if decision == "approve" else "reject", who, comment,
                               identity=me.identity("rebalancer approvals")))


def _decision_command(decision: str) -> click.Command:
    @table_options
    @click.argument("approval")
    @click.option("--comment", help="Why: kept in the audit record.")
    @click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
    def command(approval: str, cluster: str, table: str | None, stack: str | None, region: str | None,
                profile: str | None, comment: str | None, yes: bool) -> None:
        _decide(decision, approval, cluster, table, stack, region, profile, comment, yes)

    command.__doc__ = (f"{decision.capitalize()} a pending approval (its id or its run's id, or a unique prefix); "
                       "recorded with your AWS identity.")
    return click.command(decision)(command)


approvals.add_command(_decision_command("approve"))
approvals.add_command(_decision_command("reject"))
